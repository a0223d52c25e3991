"""Files source: a directory of JSON lines, CSV or Parquet files, picked up as they arrive.

Reading is a thin edge (:func:`read_files`, Spark's file stream source: each new file is read
once, the checkpoint remembers which); :func:`file_records_to_events` is a pure function of
the raw DataFrame it returns:

* ``jsonl`` / ``csv`` - one row per file: ``_file_path``, ``_file_name``, ``_file_time`` (the
  file's modification time) and ``_text``, its whole content. Files are read whole (the text
  source's ``wholetext``) so that every line keeps its 1-based line number: Spark's line
  reader has no stable position (``monotonically_increasing_id`` depends on how files are
  packed into partitions), and a position is what makes ids replay-stable. The cost: each file
  is one task and must fit in memory (up to hundreds of MB).
* ``parquet`` - one row per Parquet row: ``_row`` (a struct of the file's columns), the file
  columns above and ``_row_index`` (Spark's ``_metadata.row_index``, stable). The schema is
  read from the files present at start; the channel fails to start when there are none.

Each record becomes an event with ``id = "{file name}/{position}"`` (the 1-based line number,
or row number for Parquet), ``source`` = the file's directory URI, ``type =
"sluice.file.record"``, ``time`` = the file's modification time, ``origin_topic`` = the file's
URI and ``origin_offset`` = the position. JSON lines: ``data`` is the parsed line (blank lines
are skipped). CSV: ``data`` is an object of strings keyed by the file's header (or ``_c0``,
``_c1``, ...), one record per line (quoted fields may hold delimiters and doubled quotes, not
line breaks - like Spark's own CSV reader by default). Parquet: ``data`` is the row as an
object. A line that cannot be read fails the query with a message naming the file and line.

The directory is checked again right before each use
(:func:`~pipelines.spec.paths.recheck_files_location`, the check the spec validation ran:
under the files roots, symlinks resolved now, since one may have changed since the spec was
saved), and Spark reads the resolved ``file://`` location.
"""

from __future__ import annotations

from pyspark.errors import AnalysisException
from pyspark.sql import Column, DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql.types import StructType

from pipelines import native
from pipelines.cloudevents import (
    JSON_CONTENT_TYPE,
    SPECVERSION,
    no_extensions,
    select_event_columns,
)
from pipelines.errors import SNIPPET_CHARS, mark_failures, no_failure
from pipelines.plan import computed_once
from pipelines.spec.configs.files import FilesSourceConfig
from pipelines.spec.paths import recheck_files_location
from pipelines.sql import sql_column

FILE_RECORD_TYPE = "sluice.file.record"
_FILE_COLUMNS = ("_file_path", "_file_name", "_file_time")


class NoFilesToReadError(RuntimeError):
    """A Parquet files source found no file to read its schema from."""


def files_source_options(config: FilesSourceConfig) -> dict[str, str]:
    """The options given to Spark's file stream source."""
    options = {}
    if config.file_pattern is not None:
        options["pathGlobFilter"] = config.file_pattern
    if config.max_files_per_trigger is not None:
        options["maxFilesPerTrigger"] = str(config.max_files_per_trigger)
    if config.format != "parquet":
        options["wholetext"] = "true"
    return options


def read_files(
    spark: SparkSession, config: FilesSourceConfig, *, real_time: bool = False
) -> DataFrame:
    """Streaming DataFrame of the raw file records (see the module docstring); read alike in
    every mode (``real_time`` is refused for this source at validation)."""
    location = recheck_files_location(config.path, "files source")
    reader = spark.readStream.options(**files_source_options(config))
    if config.format != "parquet":
        raw = reader.format("text").load(location)
        return raw.select(*_file_columns(), F.col("value").alias("_text"))
    raw = reader.schema(parquet_schema(spark, config)).parquet(location)
    row = F.struct(*(F.col(sql_column(name)) for name in raw.columns)).alias("_row")
    return raw.select(row, *_file_columns(), F.col("_metadata.row_index").alias("_row_index"))


def parquet_schema(spark: SparkSession, config: FilesSourceConfig) -> StructType:
    """The schema of the Parquet files now in the directory; :class:`NoFilesToReadError` if none."""
    location = recheck_files_location(config.path, "files source")
    reader = spark.read.options(**files_source_options(config))
    try:
        schema = reader.parquet(location).schema
    except AnalysisException as error:
        raise NoFilesToReadError(
            f"files source: no Parquet file in {config.path} to read the schema from "
            f"({error.getCondition() or 'unreadable'}); add one before starting the channel"
        ) from None
    return schema


def file_records_to_events(raw: DataFrame, config: FilesSourceConfig) -> DataFrame:
    """Turn raw file records into events (:data:`pipelines.cloudevents.EVENT_SCHEMA`).

    A line that cannot be read becomes a failed event (:mod:`pipelines.errors`) whose
    message names the file and line.
    """
    if config.format == "parquet":
        records = raw.select(
            *_FILE_COLUMNS,
            (F.col("_row_index") + 1).alias("_position"),
            F.to_variant_object("_row").alias("data"),
            F.to_json("_row").alias("origin_payload"),
            no_failure().alias("failure"),
        )
    elif config.format == "csv":
        records = csv_lines_to_records(raw, config)
    else:
        records = json_lines_to_records(raw)
    return _records_to_events(records)


def json_lines_to_records(raw: DataFrame) -> DataFrame:
    """One record per non-blank line of each file, its ``data`` parsed from the JSON line."""
    lines = _lines(raw).filter(F.trim("_line") != "")
    parsed = lines.withColumn("data", computed_once(native.try_parse_json(lines, "_line")))
    problem = F.when(F.col("data").isNull(), F.lit("line is not valid JSON"))
    return _fail_on_problem(parsed, problem, "InvalidJson").drop("_line")


def csv_lines_to_records(raw: DataFrame, config: FilesSourceConfig) -> DataFrame:
    """One record per non-blank line (after the header) of each file: an object of strings."""
    first = F.element_at(F.split("_text", r"\r?\n", 2), 1)
    with_header = raw.withColumn("_header", _csv_fields(first, config.csv_delimiter))
    lines = _lines(with_header).filter(F.trim("_line") != "")
    if config.csv_header:
        lines = lines.filter(F.col("_position") > 1)
    fields = lines.withColumn("_fields", _csv_fields(F.col("_line"), config.csv_delimiter))
    names = (
        F.col("_header")
        if config.csv_header
        else F.transform("_fields", lambda _, i: F.concat(F.lit("_c"), i.cast("string")))
    )
    problem = F.when(
        F.size("_fields") != F.size(names),
        F.concat(
            F.lit("line has "),
            F.size("_fields").cast("string"),
            F.lit(" fields, the header has "),
            F.size(names).cast("string"),
        ),
    ).when(
        F.size(F.array_distinct(names)) != F.size(names),
        F.lit("the header names a column more than once"),
    )
    checked = _fail_on_problem(fields, problem, "InvalidCsv")
    data = F.when(
        F.col("failure").isNull(), F.to_variant_object(F.map_from_arrays(names, F.col("_fields")))
    )
    return checked.select(
        *_FILE_COLUMNS, "_position", data.alias("data"), "origin_payload", "failure"
    )


def _csv_fields(line: Column, delimiter: str) -> Column:
    """The fields of a CSV line: split on delimiters outside quotes, then unquoted."""
    literal = delimiter if delimiter.isalnum() else "\\" + delimiter
    outside_quotes = literal + '(?=(?:[^"]*"[^"]*")*[^"]*$)'
    quoted = r'^"(.*)"$'

    def unquote(field: Column) -> Column:
        inner = F.regexp_extract(field, quoted, 1)
        return F.when(field.rlike(quoted), F.regexp_replace(inner, '""', '"')).otherwise(field)

    return F.transform(F.split(line, outside_quotes, -1), unquote)


def _lines(raw: DataFrame) -> DataFrame:
    """One row per line of each file (``_line``, 1-based ``_position``), line breaks dropped."""
    lines = F.posexplode(F.split("_text", r"\r?\n"))
    exploded = raw.select("*", lines.alias("_index", "_line"))
    return exploded.select(
        "*",
        (F.col("_index") + 1).alias("_position"),
        F.col("_line").alias("origin_payload"),
        no_failure().alias("failure"),
    ).drop("_index", "_text")


def _records_to_events(records: DataFrame) -> DataFrame:
    events = records.select(
        F.concat_ws("/", "_file_name", F.col("_position").cast("string")).alias("id"),
        F.regexp_replace("_file_path", "/[^/]*$", "").alias("source"),
        F.lit(SPECVERSION).alias("specversion"),
        F.lit(FILE_RECORD_TYPE).alias("type"),
        F.lit(None).cast("string").alias("subject"),
        F.col("_file_time").alias("time"),
        F.lit(JSON_CONTENT_TYPE).alias("datacontenttype"),
        F.lit(None).cast("string").alias("dataschema"),
        no_extensions().alias("extensions"),
        "data",
        F.col("_file_path").alias("origin_topic"),
        F.lit(None).cast("int").alias("origin_partition"),
        F.col("_position").cast("bigint").alias("origin_offset"),
        F.col("_file_time").alias("origin_timestamp"),
        "origin_payload",
        "failure",
    )
    return select_event_columns(events)


def _file_columns() -> list[Column]:
    return [
        F.col("_metadata.file_path").alias("_file_path"),
        F.col("_metadata.file_name").alias("_file_name"),
        F.col("_metadata.file_modification_time").alias("_file_time"),
    ]


def _fail_on_problem(df: DataFrame, problem: Column, error_class: str) -> DataFrame:
    """Mark the rows whose ``problem`` is not NULL as failed (see :mod:`pipelines.errors`).

    The message names the line: ``file file:/data/in/a.jsonl line 3: line is not valid
    JSON (line starts with: ...)``.
    """
    message = F.concat(
        F.lit("file "),
        F.col("_file_path"),
        F.lit(" line "),
        F.col("_position").cast("string"),
        F.lit(": "),
        problem,
        F.lit(" (line starts with: "),
        F.substring("_line", 1, SNIPPET_CHARS),
        F.lit(")"),
    )
    return mark_failures(df, [(problem.isNotNull(), error_class, message)], source=True)
