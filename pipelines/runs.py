"""Bounded runs of a channel beside its live query: replays and redrives.

A run reads exactly ``[start, end)`` of given Kafka partitions (a Kafka source's topics, an
HTTP channel's ingest topic, or for a redrive the channel's redrive topic) through the
channel's spec, under the available-now trigger, with a checkpoint of its own.

Spark's streaming Kafka source has no ``endingOffsets`` (only its batch reader has), and an
available-now query reads up to the latest offsets of when it starts. So the run starts at
its first offsets (``startingOffsets`` JSON) and keeps only the records before each
partition's end (:func:`bound_records`, a filter on ``partition``/``offset`` evaluated by the
Kafka scan): exactly the window, whatever was appended since. Its batches hold at most the
window's size (``maxOffsetsPerTrigger``), and the runtime stops the query as soon as a
batch's end offsets reach every partition's end (``RunBounds.reached``): a replay of an hour
a week ago reads about that hour, not the week since. Streaming rather than a batch
job keeps what a channel's query has and a batch job has not: its sinks' ``foreachBatch``
paths and retries as they are, a checkpoint (a run that fails half-way and is retried does
not write again what it committed), progress reports per partition, and stopping it cancels
it.

A redrive's records carry where they first came from in ``sluice-origin-*`` headers (see
``console.services.dead_letters``): their topic, partition, offset and timestamp replace the
redrive topic's own, so the events get the ids, times and origins the originals had (a JDBC
sink upserting on the id keeps one row).

Every event a run writes carries two CloudEvents extensions (:func:`tag_events`):
:data:`RUN_ID_EXTENSION` (the run's id) and :data:`RUN_KIND_EXTENSION` (``replay`` or
``redrive``).
"""

from __future__ import annotations

from functools import reduce
from typing import Any

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from pipelines.sources.kafka import _HEADER_MAP_SQL, kafka_source_options
from pipelines.spec.configs import KafkaSourceConfig
from pipelines.spec.runs import (
    HEADER_ORIGIN_OFFSET,
    HEADER_ORIGIN_PARTITION,
    HEADER_ORIGIN_TIMESTAMP,
    HEADER_ORIGIN_TOPIC,
    RUN_ID_EXTENSION,
    RUN_KIND_EXTENSION,
    RunBounds,
)

__all__ = ["RunBounds", "bound_records", "read_run_records", "run_batch_limit", "tag_events"]


def read_run_records(
    spark: SparkSession, kafka_config: KafkaSourceConfig, bounds: RunBounds
) -> DataFrame:
    """Streaming DataFrame of the raw records of the run's partitions, ``[start, end)``
    each; a redrive's with their headers (its origin is in them), a replay's with them only
    when the channel's source reads them (Spark builds an array of them per record).
    ``kafka_config`` is the channel's Kafka source config (for an HTTP channel, its ingest
    topic's): its brokers, security and format are kept; topics and offsets are the run's."""
    options = kafka_source_options(kafka_config)
    for name in ("subscribePattern", "startingTimestamp", "startingOffsetsByTimestampStrategy"):
        options.pop(name, None)
    options["subscribe"] = ",".join(bounds.topics())
    options["startingOffsets"] = bounds.starting_offsets_json()
    if bounds.redrive:  # a redrive's origin is in its records' headers
        options["includeHeaders"] = "true"
    options["failOnDataLoss"] = "true"
    configured = options.get("maxOffsetsPerTrigger")
    options["maxOffsetsPerTrigger"] = str(
        run_batch_limit(bounds.expected(), None if configured is None else int(configured))
    )
    records = spark.readStream.format("kafka").options(**options).load()
    return bound_records(records, bounds)


RUN_BATCHES = 10
"""About how many batches a run's window is read in. A run's progress (offsets read) is
known at each batch's end only: a window read in one batch showed "0 of 300 read" until it
was all done, while a bus's deliveries, counted as they happen, already said 168."""
MIN_RUN_BATCH = 100
"""The fewest offsets a run's batch reads (a batch has a fixed cost of its own)."""


def run_batch_limit(expected: int, configured: int | None = None) -> int:
    """``maxOffsetsPerTrigger`` of a run of ``expected`` offsets: about a tenth of the
    window (at least :data:`MIN_RUN_BATCH`), so its progress moves in steps, never more
    than the window (the query is stopped once its progress reaches every end,
    ``RunBounds.reached``: it reads about the window, not everything appended since, as the
    available-now trigger alone would), nor more than the source's own limit."""
    limit = max(1, min(expected, max(MIN_RUN_BATCH, -(-expected // RUN_BATCHES))))
    return limit if configured is None else max(1, min(limit, configured))


def bound_records(records: DataFrame, bounds: RunBounds) -> DataFrame:
    """``records`` (Spark's Kafka schema) within the run's ``[start, end)`` per partition,
    a redrive's with their origin put back (see the module docstring)."""
    conditions = [
        (F.col("topic") == topic)
        & (F.col("partition") == partition)
        & (F.col("offset") >= start)
        & (F.col("offset") < end)
        for topic, partition, start, end in bounds.partitions()
    ]
    kept = records.filter(reduce(lambda a, b: a | b, conditions, F.lit(False)))
    return with_origin_from_headers(kept) if bounds.redrive else kept


def with_origin_from_headers(records: DataFrame) -> DataFrame:
    """Records whose ``topic``, ``partition``, ``offset`` and ``timestamp`` are those of their
    ``sluice-origin-*`` headers where they have them (a redrive's original coordinates)."""
    with_map = records.withColumn("_run_headers", F.expr(_HEADER_MAP_SQL))

    def header(name: str) -> Any:
        return F.try_element_at(F.col("_run_headers"), F.lit(name))

    return (
        with_map.withColumn("topic", F.coalesce(header(HEADER_ORIGIN_TOPIC), F.col("topic")))
        .withColumn(
            "partition",
            F.coalesce(header(HEADER_ORIGIN_PARTITION).try_cast("int"), F.col("partition")),
        )
        .withColumn(
            "offset", F.coalesce(header(HEADER_ORIGIN_OFFSET).try_cast("long"), F.col("offset"))
        )
        .withColumn(
            "timestamp",
            F.coalesce(header(HEADER_ORIGIN_TIMESTAMP).try_cast("timestamp"), F.col("timestamp")),
        )
        .drop("_run_headers")
    )


def tag_events(events: DataFrame, bounds: RunBounds) -> DataFrame:
    """``events`` with the run's two CloudEvents extensions set (replacing any of the same
    name)."""
    names = (RUN_ID_EXTENSION, RUN_KIND_EXTENSION)
    others = F.map_filter(F.col("extensions"), lambda name, _: ~name.isin(*names))
    tags = F.create_map(
        F.lit(RUN_ID_EXTENSION),
        F.lit(bounds.run_id).cast("variant"),
        F.lit(RUN_KIND_EXTENSION),
        F.lit(bounds.kind).cast("variant"),
    )
    # Most events have no extensions: they get the tags alone, without map_filter's lambda
    # (a higher-order function Spark evaluates row by row outside its generated code).
    tagged = F.when(F.size("extensions") == 0, tags).otherwise(F.map_concat(others, tags))
    return events.withColumn("extensions", tagged)
