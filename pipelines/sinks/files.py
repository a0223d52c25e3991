"""Files sink: write events to a directory as Parquet or JSON lines, exactly once.

Spark's file sink writes each micro-batch's files, then records them in the directory's
``_spark_metadata`` log under the batch id; a batch replayed after a crash finds its id in
the log and writes nothing. Readers that honour the log (``spark.read`` of the directory)
therefore see every event exactly once; files not in the log are leftovers of failed
attempts.

* ``jsonl`` - one line per event: ``content: data`` writes the event's data as JSON (``null``
  when it has none), ``content: cloudevents`` the whole event as structured-mode CloudEvents
  JSON.
* ``parquet`` - ``content: data`` writes one column ``data`` (JSON text);
  ``content: cloudevents`` one column per attribute (``time`` a timestamp) and
  ``extensions`` and ``data`` as JSON text. JSON text rather than Parquet's VARIANT (which
  Spark 4.2 can write) because every Parquet reader understands it.

The directory is checked again right before each use
(:func:`~pipelines.spec.paths.recheck_files_location`, the check the spec validation ran:
under the files roots, symlinks resolved now, since one may have changed since the spec was
saved), and Spark writes to the resolved ``file://`` location.
"""

from __future__ import annotations

from typing import Any

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql.streaming.readwriter import DataStreamWriter

from pipelines import native
from pipelines.cloudevents import ATTRIBUTES, event_json
from pipelines.spec.configs.files import FilesSinkConfig
from pipelines.spec.paths import recheck_files_location


def events_to_file_rows(events: DataFrame, config: FilesSinkConfig) -> DataFrame:
    """The rows the file sink writes (one per event): see the module docstring."""
    data = native.to_json(events, "data")
    if config.format == "jsonl":
        envelope = event_json(native.json_zone(events))
        line = envelope if config.content == "cloudevents" else F.coalesce(data, F.lit("null"))
        return events.select(line.alias("value"))
    if config.content == "data":
        return events.select(data.alias("data"))
    return events.select(
        *ATTRIBUTES, F.to_json("extensions").alias("extensions"), data.alias("data")
    )


def write_files(events: DataFrame, config: FilesSinkConfig) -> DataStreamWriter:
    """A streaming writer of the events into ``config.path`` (append mode)."""
    location = recheck_files_location(config.path, "files sink")
    rows = events_to_file_rows(events, config)
    file_format = "text" if config.format == "jsonl" else "parquet"
    return rows.writeStream.format(file_format).option("path", location).outputMode("append")


def write_files_batch(events: DataFrame, config: FilesSinkConfig, batch_id: int) -> None:
    """Write one micro-batch through Spark's own file sink, from ``foreachBatch``.

    The same ``FileStreamSink`` the streaming writer uses, so the directory and its
    ``_spark_metadata`` log look the same either way, and a batch id already in the log
    (a replay after a crash) writes nothing: still exactly once.
    """
    location = recheck_files_location(config.path, "files sink")
    rows = events_to_file_rows(events, config)
    _file_stream_sink(rows.sparkSession, config, location).addBatch(batch_id, rows._jdf)


_SINKS: dict[tuple[str, str], Any] = {}


def _file_stream_sink(spark: SparkSession, config: FilesSinkConfig, location: str) -> Any:
    """Spark's ``FileStreamSink`` for the checked ``location`` (one per location and format)."""
    key = (location, config.format)
    if key not in _SINKS:
        jvm = spark._jvm
        assert jvm is not None, "a classic session has a JVM gateway"  # PySpark asserts it too
        formats = jvm.org.apache.spark.sql.execution.datasources
        file_format = (
            formats.text.TextFileFormat()
            if config.format == "jsonl"
            else formats.parquet.ParquetFileFormat()
        )
        utils = jvm.org.apache.spark.api.python.PythonUtils
        options = jvm.java.util.HashMap()
        options.put("path", location)
        _SINKS[key] = jvm.org.apache.spark.sql.execution.streaming.sinks.FileStreamSink(
            spark._jsparkSession,
            location,
            file_format,
            utils.toSeq(jvm.java.util.ArrayList()),
            utils.toScalaMap(options),
        )
    return _SINKS[key]
