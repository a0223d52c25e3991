"""Kafka source: read records from topics and turn each into a CloudEvent.

Reading is a thin edge (:func:`read_kafka`); the conversion is a pure function of a DataFrame
with Spark's Kafka source schema (``key``, ``value``, ``topic``, ``partition``, ``offset``,
``timestamp``, ...), so it is tested on small batch DataFrames without Kafka.

* ``format: json`` - the value is any JSON document; it becomes ``data`` of a new event with
  ``id = "{topic}/{partition}/{offset}"`` (stable across replays), ``source =
  "kafka://{topic}"``, ``type = "sluice.kafka.record"``, ``specversion = "1.0"``, ``time`` =
  the record timestamp and ``datacontenttype = "application/json"``.
* ``format: cloudevents`` - the value is a structured-mode CloudEvent (JSON object with
  ``specversion`` "1.0", ``id``, ``source``, ``type``, optional attributes, extensions and
  ``data``).

A record whose value is not valid JSON (or, for ``cloudevents``, not a valid CloudEvent)
fails the query with a message naming its topic, partition and offset; dead-letter routing
comes later. Records with a NULL value (tombstones) carry no event and are skipped.
"""

from __future__ import annotations

from pyspark.sql import Column, DataFrame, SparkSession
from pyspark.sql import functions as F

from pipelines.cloudevents import (
    JSON_CONTENT_TYPE,
    OPTIONAL_STRING_ATTRIBUTES,
    RESERVED_MEMBERS,
    SPECVERSION,
    no_extensions,
    select_event_columns,
)
from pipelines.spec.configs import KafkaSourceConfig

KAFKA_RECORD_TYPE = "sluice.kafka.record"
SNIPPET_CHARS = 60
"""How much of a bad value an error message quotes."""


def kafka_source_options(config: KafkaSourceConfig) -> dict[str, str]:
    """The options given to Spark's Kafka source (``format("kafka")``)."""
    return {
        "kafka.bootstrap.servers": config.bootstrap_servers,
        "subscribe": ",".join(config.topics),
        "startingOffsets": config.starting_offsets,
    }


def read_kafka(spark: SparkSession, config: KafkaSourceConfig) -> DataFrame:
    """Streaming DataFrame of the raw records of the configured topics."""
    return spark.readStream.format("kafka").options(**kafka_source_options(config)).load()


def kafka_records_to_events(records: DataFrame, config: KafkaSourceConfig) -> DataFrame:
    """Turn Kafka records into events (:data:`pipelines.cloudevents.EVENT_SCHEMA`).

    Skips tombstones; the resulting DataFrame fails, when evaluated, on the first record
    that cannot be read (see the module docstring).
    """
    records = records.filter(F.col("value").isNotNull())
    if config.format == "cloudevents":
        return structured_records_to_events(records)
    return json_records_to_events(records)


def json_records_to_events(records: DataFrame) -> DataFrame:
    """Wrap records whose value is plain JSON into events (``format: json``)."""
    parsed = _with_origin(records).withColumn("data", F.try_parse_json("_text"))
    checked = _fail_on_problem(
        parsed, F.when(F.col("data").isNull(), F.lit("value is not valid JSON"))
    )
    events = checked.select(
        F.concat_ws("/", "origin_topic", "origin_partition", "origin_offset").alias("id"),
        F.concat(F.lit("kafka://"), F.col("origin_topic")).alias("source"),
        F.lit(SPECVERSION).alias("specversion"),
        F.lit(KAFKA_RECORD_TYPE).alias("type"),
        F.lit(None).cast("string").alias("subject"),
        F.col("origin_timestamp").alias("time"),
        F.lit(JSON_CONTENT_TYPE).alias("datacontenttype"),
        F.lit(None).cast("string").alias("dataschema"),
        no_extensions().alias("extensions"),
        "data",
        "origin_topic",
        "origin_partition",
        "origin_offset",
        "origin_timestamp",
    )
    return select_event_columns(events)


def structured_records_to_events(records: DataFrame) -> DataFrame:
    """Read records whose value is a structured-mode CloudEvent (``format: cloudevents``)."""
    parsed = _with_origin(records).withColumn("_event", F.try_parse_json("_text"))
    with_attributes = parsed.select("*", *_structured_attributes(F.col("_event")))
    checked = _fail_on_problem(with_attributes, _structured_problem())
    events = checked.withColumn("time", F.try_to_timestamp("_time")).withColumn(
        "data", F.try_variant_get("_event", "$.data", "variant")
    )
    return select_event_columns(events.withColumn("extensions", _extensions(F.col("_event"))))


def _with_origin(records: DataFrame) -> DataFrame:
    return records.select(
        F.col("topic").alias("origin_topic"),
        F.col("partition").alias("origin_partition"),
        F.col("offset").alias("origin_offset"),
        F.col("timestamp").alias("origin_timestamp"),
        F.col("value").cast("string").alias("_text"),
    )


def _structured_attributes(event: Column) -> list[Column]:
    strings = ("id", "source", "specversion", "type", *OPTIONAL_STRING_ATTRIBUTES)
    columns = [F.try_variant_get(event, f"$.{name}", "string").alias(name) for name in strings]
    return [
        *columns,
        F.try_variant_get(event, "$.time", "string").alias("_time"),
        F.try_variant_get(event, "$.data_base64", "variant").isNotNull().alias("_binary"),
    ]


def _structured_problem() -> Column:
    """Why a parsed structured record is not a usable CloudEvent (NULL when it is)."""
    problem = F.when(F.col("_event").isNull(), F.lit("value is not valid JSON"))
    for name in ("specversion", "id", "source", "type"):
        problem = problem.when(
            F.col(name).isNull() | (F.col(name) == ""),
            F.lit(f"value is not a CloudEvent: attribute {name!r} is missing"),
        )
    return (
        problem.when(
            F.col("specversion") != SPECVERSION,
            F.concat(F.lit("unsupported CloudEvents specversion "), F.col("specversion")),
        )
        .when(
            F.col("_time").isNotNull() & F.try_to_timestamp("_time").isNull(),
            F.concat(F.lit("attribute 'time' is not an RFC 3339 timestamp: "), F.col("_time")),
        )
        .when(F.col("_binary"), F.lit("data_base64 (binary data) is not supported yet"))
    )


def _extensions(event: Column) -> Column:
    """Members of the JSON object that are not CloudEvents core members."""
    members = F.try_variant_get(event, "$", "map<string,variant>")
    kept = F.map_filter(members, lambda name, _: ~name.isin(*RESERVED_MEMBERS))
    return F.coalesce(kept, no_extensions())


def _fail_on_problem(df: DataFrame, problem: Column) -> DataFrame:
    """Keep the rows whose ``problem`` is NULL; raise a readable error for the first other.

    The message names the record: ``Kafka record topic=orders partition=3 offset=42: value
    is not valid JSON (value starts with: ...)``.
    """
    location = F.concat(
        F.lit("Kafka record topic="),
        F.col("origin_topic"),
        F.lit(" partition="),
        F.col("origin_partition").cast("string"),
        F.lit(" offset="),
        F.col("origin_offset").cast("string"),
        F.lit(": "),
    )
    snippet = F.concat(
        F.lit(" (value starts with: "), F.substring("_text", 1, SNIPPET_CHARS), F.lit(")")
    )
    message = F.concat(location, problem, snippet)
    return df.filter(F.when(problem.isNull(), F.lit(True)).otherwise(F.raise_error(message)))
