"""The query plumbing every channel builds on, linear (:mod:`pipelines.builder`) or a bus
(:mod:`pipelines.bus`): the events of a channel (its source, then its transforms), a sink
stage's batch writer under its retry policy, the trigger of the execution mode and the
query's name. It imports neither of them: both build on it.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from functools import partial
from typing import Any, TypeVar

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql.streaming.readwriter import DataStreamWriter

from pipelines.errors import failing_stage
from pipelines.retry import RetriedWrite, sink_dead_letters
from pipelines.runs import RunBounds, read_run_records, tag_events
from pipelines.sinks import BATCH_SINKS
from pipelines.sinks.preview import PreviewPublisher
from pipelines.sources import SOURCES
from pipelines.sources.http import ingest_kafka_config
from pipelines.spec import ChannelSpec, StageSpec, parse_stage_config
from pipelines.spec.channel import RuntimeOptions
from pipelines.spec.configs import KafkaSourceConfig
from pipelines.spec.configs.http import HttpSourceConfig
from pipelines.spec.live import retry_policy
from pipelines.stage_metrics import observe_rows, transform_point
from pipelines.transforms import TRANSFORMS

T = TypeVar("T")

SOURCES_READING_EVENTS = frozenset({"kafka", "http", "generator"})
"""Sources whose every input row is one event, so the batch's ``numInputRows`` is the
events read (a files source reads a whole file as one row and splits it into events)."""

RetryCounter = Callable[[int], None]
"""Told how many sink writes were retried (one call per retried write)."""


def query_name(channel: str) -> str:
    """The Structured Streaming query name of a channel (``sluice-{channel}``)."""
    return f"sluice-{channel}"


REAL_TIME_CHECKPOINT_SECONDS = 300.0
"""How often a real-time query checkpoints its progress unless ``interval_seconds`` says:
Spark's own default (5 minutes). Each checkpoint ends the running tasks and plans and starts
the next batch, a pause of about half a second on a 2-core host during which events wait: at
one a minute that pause alone made the p99 at 5,000 events/s a few hundred milliseconds; at
one every five minutes it touches 0.2 % of the events. A stop replays up to one interval."""


def with_trigger(writer: DataStreamWriter, options: RuntimeOptions) -> DataStreamWriter:
    """The writer with the trigger of the channel's execution mode (see
    :class:`pipelines.spec.channel.RuntimeOptions`)."""
    if options.mode == "available-now":
        return writer.trigger(availableNow=True)
    if options.mode == "real-time":
        seconds = options.interval_seconds or REAL_TIME_CHECKPOINT_SECONDS
        interval = f"{round(seconds * 1000)} milliseconds"
        # PySpark 4.2 declares trigger()'s overloads without realTime, which it takes.
        real_time: DataStreamWriter = writer.outputMode("update").trigger(realTime=interval)  # type: ignore[call-overload]
        return real_time
    if options.interval_seconds:
        return writer.trigger(
            processingTime=f"{round(options.interval_seconds * 1000)} milliseconds"
        )
    return writer


def build_events(
    spark: SparkSession,
    spec: ChannelSpec,
    *,
    keep_payload: bool = False,
    count_stages: bool = False,
    run: RunBounds | None = None,
) -> DataFrame:
    """The streaming events DataFrame of a channel: its source, then its transforms.
    (Schema discovery samples the source beside the query, :mod:`pipelines.discovery`.)

    With ``run`` (a replay or redrive, :mod:`pipelines.runs`) the source reads exactly the
    run's Kafka partitions and offsets and each event leaves the transforms tagged with the
    run's CloudEvents extensions.

    Failed events carry the stage that failed them; ``origin_payload`` is kept only with
    ``keep_payload`` (for dead letters), else it is NULL and never carried. With
    ``count_stages`` the rows reaching each dropping transform are counted
    (:func:`pipelines.stage_metrics.observe_rows`).
    """
    source = plugin_implementation(SOURCES, "source", spec.source)
    config = parse_stage_config("source", spec.source)
    with failing_stage("source"):
        if run is None:
            records = source.read(spark, config)
        else:
            records = read_run_records(spark, run_kafka_config(spec.source.type, config), run)
        events = source.to_events(records, config)
    if not keep_payload:
        events = events.withColumn("origin_payload", F.lit(None).cast("string"))
    events = apply_transforms(
        events,
        spec.transforms,
        count_stages=count_stages,
        rows_are_events=spec.source.type in SOURCES_READING_EVENTS,
    )
    return events if run is None else tag_events(events, run)


def run_kafka_config(source_type: str, config: Any) -> KafkaSourceConfig:
    """The Kafka source config a bounded run of a ``source_type`` channel reads with: a
    Kafka source's own, an HTTP source's ingest topic's; other sources keep no events."""
    if isinstance(config, KafkaSourceConfig):
        return config
    if isinstance(config, HttpSourceConfig):
        return ingest_kafka_config(config)
    raise ValueError(f"a {source_type} source cannot be replayed: it keeps no events to read")


def apply_transforms(
    events: DataFrame,
    transforms: list[StageSpec],
    *,
    count_stages: bool = False,
    rows_are_events: bool = True,
) -> DataFrame:
    """Apply transform stages in order (a pure DataFrame function); a failure gets the
    stage's place and type, e.g. ``transforms[2] (cast)``. With ``count_stages`` the rows
    reaching each dropping transform are counted (:func:`pipelines.stage_metrics.observe_rows`)
    — but the first's when ``rows_are_events`` (the source reads one event per row): it gets
    every row read, the batch's ``numInputRows``."""
    dropped_before = not rows_are_events
    for index, stage in enumerate(transforms):
        point = transform_point(index, stage)
        if count_stages and point.drops and dropped_before:
            events = observe_rows(events, point)
        dropped_before = dropped_before or point.drops
        transform = plugin_implementation(TRANSFORMS, "transform", stage)
        with failing_stage(point.label):
            events = transform(events, parse_stage_config("transform", stage))
    return events


def batch_writer(
    stage: StageSpec,
    publisher: PreviewPublisher | None,
    *,
    channel: str = "",
    on_retries: RetryCounter | None = None,
    tolerant: bool = False,
    what: str | None = None,
) -> Callable[[DataFrame, int], DataFrame | None]:
    """``(events, batch_id) -> rejected dead letters | None`` for a sink stage, retried as
    its ``retry`` policy says (:func:`pipelines.spec.live.retry_policy`). ``tolerant``: events
    given up on are returned as dead letters; else the write raises ``RetriesExhausted`` (a
    dead-letter target, which has nowhere further to send them, is never tolerant)."""
    write = plugin_implementation(BATCH_SINKS, "sink", stage)
    config = parse_stage_config("sink", stage)
    if publisher is not None:
        write = partial(write, publisher=publisher)
    policy = retry_policy(stage, config)

    def write_batch(events: DataFrame, batch_id: int) -> DataFrame | None:
        if policy is None:
            return write(events, config, batch_id)
        retried = RetriedWrite(
            write=lambda pending: write(pending, config, batch_id),
            policy=policy,
            what=what or f"{stage.type} sink",
            tolerant=tolerant,
            dead_letters=sink_dead_letters("sink"),
            on_retry=on_retries,
            where=f", channel {channel}, batch {batch_id}",
        )
        return retried(events)

    return write_batch


def plugin_implementation(registry: Mapping[str, T], kind: str, stage: StageSpec) -> T:
    """The Spark implementation of ``stage``'s plugin in ``registry`` (LookupError when the
    catalogue lists a type that has none)."""
    try:
        return registry[stage.type]
    except KeyError:
        raise LookupError(f"the {kind} plugin {stage.type!r} has no Spark implementation") from None
