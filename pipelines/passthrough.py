"""Pass-through: a channel that moves Kafka records as they are.

A linear channel with no transform from a Kafka source in ``format: json`` to a Kafka sink in
``format: json`` (no ``key_field``, no ``topic_field``, no ``retry``) reads no event: each
record's value is checked to be JSON (:func:`pipelines.native.is_valid_json`, which builds
nothing) and written with its key, value, headers and timestamp as they were read
(:func:`pipelines.sinks.kafka.copied_records`). The event path parsed each value into a
VARIANT and wrote it back as JSON text, which was most of the cost of a copy: with it a
pass-through channel did about half the events per second of Spark copying key and value.

What a pass-through keeps that the event path did not: the value's bytes (the event path
wrote them again, compact, its own way), the record's headers (it wrote a ``content-type``
alone), its timestamp (it let the producer stamp the time of the copy) and a key that is not
UTF-8 text (it put the event id there). What is the same: a record without a key gets its
event id (``topic/partition/offset``) as key, a tombstone is skipped, a value that is not JSON
fails with the same error (``InvalidJson``, the record named) under the channel's error
policy, and the stages' counts are the same. A replay or redrive of such a channel takes the
event path: its events carry the run's marks.
"""

from __future__ import annotations

from collections.abc import Callable

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql.streaming.readwriter import DataStreamWriter

from pipelines import native
from pipelines.errors import fail_fast, failing_stage
from pipelines.sinks.kafka import (
    copied_records,
    write_kafka_copies,
    write_kafka_copies_batch,
)
from pipelines.sources.kafka import json_records_checked, read_kafka
from pipelines.spec import ChannelSpec, parse_stage_config
from pipelines.spec.configs import KafkaSinkConfig, KafkaSourceConfig
from pipelines.spec.live import retry_policy


def passes_through(spark: SparkSession, spec: ChannelSpec) -> bool:
    """Whether ``spec`` (validated) runs as a pass-through (see the module docstring); it
    also needs Sluice's Spark functions in the session (the check and the producer's
    timestamp interceptor are in its jar)."""
    if spec.is_bus or spec.transforms:
        return False
    if spec.source.type != "kafka" or spec.the_sink.type != "kafka":
        return False
    source = parse_stage_config("source", spec.source)
    sink = parse_stage_config("sink", spec.the_sink)
    assert isinstance(source, KafkaSourceConfig) and isinstance(sink, KafkaSinkConfig)
    return (
        source.format == "json"
        and sink.format == "json"
        and sink.key_field is None
        and sink.topic_field is None
        and retry_policy(spec.the_sink, sink) is None
        and native.native_functions(spark)
    )


def pass_through_rows(spark: SparkSession, spec: ChannelSpec, *, keep_payload: bool) -> DataFrame:
    """The rows of a pass-through channel's query (:func:`passes_through`): its records,
    checked (:func:`pipelines.sources.kafka.json_records_checked`); built in the source's
    stage (its failures name it)."""
    source = parse_stage_config("source", spec.source)
    assert isinstance(source, KafkaSourceConfig)
    with failing_stage("source"):
        records = read_kafka(
            spark, source, headers=True, real_time=spec.runtime.mode == "real-time"
        )
        return json_records_checked(records, keep_payload=keep_payload)


def copy_writer(rows: DataFrame, spec: ChannelSpec) -> DataStreamWriter:
    """``errors.tolerance: none``: the streaming writer of a pass-through's records to its
    sink (the first failed record fails the query)."""
    sink = _sink_config(spec)
    return write_kafka_copies(copied_records(fail_fast(rows), sink), sink)


def copy_batch_writer(spec: ChannelSpec) -> Callable[[DataFrame, int], None]:
    """``errors.tolerance: all``: the sink's batch writer for :func:`select_copies`' rows."""
    sink = _sink_config(spec)
    return lambda records, batch_id: write_kafka_copies_batch(records, sink, batch_id)


def select_copies(spec: ChannelSpec) -> Callable[[DataFrame], DataFrame]:
    """What the error gate hands the sink of a pass-through's healthy rows: its records."""
    sink = _sink_config(spec)
    return lambda healthy: copied_records(healthy, sink)


def _sink_config(spec: ChannelSpec) -> KafkaSinkConfig:
    sink = parse_stage_config("sink", spec.the_sink)
    assert isinstance(sink, KafkaSinkConfig)
    return sink
