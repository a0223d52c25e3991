"""Kafka sink: serialize events into Kafka records and write them to a topic.

Each record gets:

* ``key`` - the event id (UTF-8), so replays produce the same keys and duplicates can be
  spotted downstream;
* ``value`` - ``format: json``: the event's ``data`` as JSON text (NULL when the event has
  no data, i.e. a tombstone); ``format: cloudevents``: the whole event as structured-mode
  CloudEvents JSON;
* ``headers`` - ``content-type``: ``application/json`` or
  ``application/cloudevents+json; charset=UTF-8`` (CloudEvents Kafka binding, structured mode).

Serialization is a pure function (:func:`events_to_kafka_records`); writing is a thin edge.
"""

from __future__ import annotations

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F
from pyspark.sql.streaming import DataStreamWriter

from pipelines.cloudevents import JSON_CONTENT_TYPE, STRUCTURED_CONTENT_TYPE, event_json
from pipelines.spec.configs import KafkaSinkConfig

CONTENT_TYPE_HEADER = "content-type"


def kafka_sink_options(config: KafkaSinkConfig) -> dict[str, str]:
    """The options given to Spark's Kafka sink (``format("kafka")``)."""
    return {"kafka.bootstrap.servers": config.bootstrap_servers, "topic": config.topic}


def events_to_kafka_records(events: DataFrame, config: KafkaSinkConfig) -> DataFrame:
    """Rows for Spark's Kafka sink: ``key``, ``value`` (binary) and ``headers``."""
    if config.format == "cloudevents":
        value, content_type = event_json(), STRUCTURED_CONTENT_TYPE
    else:
        value, content_type = F.to_json(F.col("data")), JSON_CONTENT_TYPE
    return events.select(
        F.col("id").cast("binary").alias("key"),
        value.cast("binary").alias("value"),
        F.array(_header(CONTENT_TYPE_HEADER, content_type)).alias("headers"),
    )


def write_kafka(events: DataFrame, config: KafkaSinkConfig) -> DataStreamWriter:
    """A streaming writer of the events to the configured topic (append mode)."""
    records = events_to_kafka_records(events, config)
    return (
        records.writeStream.format("kafka")
        .options(**kafka_sink_options(config))
        .outputMode("append")
    )


def _header(key: str, value: str) -> Column:
    return F.struct(F.lit(key).alias("key"), F.lit(value).cast("binary").alias("value"))
