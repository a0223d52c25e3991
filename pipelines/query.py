"""The query plumbing every channel builds on, linear (:mod:`pipelines.builder`) or a bus
(:mod:`pipelines.bus`): the events of a channel (its source, then its transforms), a sink
stage's batch writer under its retry policy, the trigger of the execution mode and the
query's name. It imports neither of them: both build on it.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from functools import partial
from typing import Any, TypeVar

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql.streaming.readwriter import DataStreamWriter

from pipelines.errors import failing_stage
from pipelines.patterns import use_native_matching
from pipelines.patterns.steps import member_paths
from pipelines.retry import RetriedWrite, sink_dead_letters
from pipelines.runs import RunBounds, read_run_records, tag_events
from pipelines.sinks import BATCH_SINKS
from pipelines.sinks.preview import PreviewPublisher
from pipelines.sources import SOURCES
from pipelines.sources.http import ingest_kafka_config
from pipelines.sources.kafka import kafka_records_to_events, parse_deferred_data
from pipelines.spec import ChannelSpec, StageSpec, parse_stage_config
from pipelines.spec.channel import RuntimeOptions
from pipelines.spec.configs import FilterConfig, KafkaSinkConfig, KafkaSourceConfig
from pipelines.spec.configs.http import HttpSourceConfig
from pipelines.spec.live import retry_policy
from pipelines.spec.patterns import FieldPath
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
    data_as_read: bool = False,
) -> DataFrame:
    """The streaming events DataFrame of a channel: its source, then its transforms.
    (Schema discovery samples the source beside the query, :mod:`pipelines.discovery`.)

    With ``run`` (a replay or redrive, :mod:`pipelines.runs`) the source reads exactly the
    run's Kafka partitions and offsets and each event leaves the transforms tagged with the
    run's CloudEvents extensions.

    Failed events carry the stage that failed them; ``origin_payload`` is kept only with
    ``keep_payload`` (for dead letters), else it is NULL and never carried. With
    ``count_stages`` the rows reaching each dropping transform are counted
    (:func:`pipelines.stage_metrics.observe_rows`). With ``data_as_read`` (the channel
    :func:`writes_data_as_read`) the events keep their pruned data and their record's text
    (:data:`pipelines.sources.kafka.DEFERRED_TEXT`), which the sink writes as their data.
    """
    source = plugin_implementation(SOURCES, "source", spec.source)
    config = parse_stage_config("source", spec.source)
    deferred = deferred_parse(spark, spec)
    if data_as_read and (deferred is None or deferred.filters < len(spec.transforms)):
        raise ValueError("data as read needs a channel whose transforms are pruned filters")
    with failing_stage("source"):
        if run is None:
            records = source.read(spark, config, real_time=spec.runtime.mode == "real-time")
        else:
            records = read_run_records(spark, run_kafka_config(spec.source.type, config), run)
        if deferred is None:
            events = source.to_events(records, config)
        else:
            assert isinstance(config, KafkaSourceConfig)  # deferred_parse: a Kafka source
            events = kafka_records_to_events(records, config, data_paths=deferred.paths)
    if not keep_payload:
        events = events.withColumn("origin_payload", F.lit(None).cast("string"))
    events = apply_transforms(
        events,
        spec.transforms,
        count_stages=count_stages,
        rows_are_events=spec.source.type in SOURCES_READING_EVENTS,
        parse_data_before=None if deferred is None or data_as_read else deferred.filters,
    )
    return events if run is None else tag_events(events, run)


DATA_AS_READ_FORMATS = ("cloudevents", "json")
"""The Kafka sink formats that write an event's data as JSON text, which can be the text
the event was read from."""


def writes_data_as_read(spark: SparkSession, spec: ChannelSpec, run: RunBounds | None) -> bool:
    """Whether a channel writes its events' data as it was read: a linear channel, not a run,
    from a Kafka source in ``format: json`` whose transforms are all filters reading pruned
    data (:class:`DeferredParse`) to a Kafka sink in ``format: cloudevents`` or ``json``
    without ``key_field``, ``topic_field`` or ``retry``.

    Nothing in such a channel changes the data or reads more of it than the filters' paths,
    so each kept event's data is written as the record's text (checked as JSON at the source
    all the same, its ends trimmed) instead of being parsed whole and written again, which
    was about a fifth of the benchmark channel's JIT compilation and a sixth of its tasks'
    CPU. What changes for a reader: the data's members keep the record's order and its
    numbers their spelling (parsed and written again, members came sorted by name and
    ``1e3`` as ``1000.0``); the value is the same JSON."""
    if spec.is_bus or run is not None or spec.source.type != "kafka":
        return False
    deferred = deferred_parse(spark, spec)
    if deferred is None or deferred.filters < len(spec.transforms):
        return False
    sink = spec.the_sink
    if sink.type != "kafka":
        return False
    config = parse_stage_config("sink", sink)
    assert isinstance(config, KafkaSinkConfig)
    return (
        config.format in DATA_AS_READ_FORMATS
        and config.key_field is None
        and config.topic_field is None
        and retry_policy(sink, config) is None
    )


@dataclass(frozen=True)
class DeferredParse:
    """Filters first, then the whole data: the leading ``filters`` of a channel read only
    ``paths`` below ``data``, so its JSON source parses each record's data pruned to them
    (all of it checked) and the whole data only of the events they keep (see
    :func:`pipelines.sources.kafka.kafka_records_to_events`). With the benchmark's pattern
    (3 fields, 14 % kept) parsing was about 40 % of the query's CPU."""

    filters: int
    paths: list[FieldPath]


def deferred_parse(spark: SparkSession, spec: ChannelSpec) -> DeferredParse | None:
    """How a channel's data is parsed after its leading filters, when it can be: a Kafka
    source in ``format: json``, filters first, none testing ``data`` itself (a step on the
    whole value needs all of it) and Sluice's functions in the session (its matcher decides
    the pruned value as the whole one). None otherwise: parsed whole at the source."""
    if spec.source.type != "kafka":
        return None
    config = parse_stage_config("source", spec.source)
    assert isinstance(config, KafkaSourceConfig)
    if config.format != "json":
        return None
    paths: list[FieldPath] = []
    filters = 0
    for stage in spec.transforms:
        if stage.type != "filter":
            break
        filter_config = parse_stage_config("transform", stage)
        assert isinstance(filter_config, FilterConfig)
        found = member_paths(filter_config.pattern, "data")
        if found is None:
            return None
        paths += [path for path in found if path not in paths]
        filters += 1
    if filters == 0 or not use_native_matching(spark, None):
        return None
    return DeferredParse(filters, paths)


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
    parse_data_before: int | None = None,
) -> DataFrame:
    """Apply transform stages in order (a pure DataFrame function); a failure gets the
    stage's place and type, e.g. ``transforms[2] (cast)``. With ``count_stages`` the rows
    reaching each dropping transform are counted (:func:`pipelines.stage_metrics.observe_rows`)
    — but the first's when ``rows_are_events`` (the source reads one event per row): it gets
    every row read, the batch's ``numInputRows``. ``parse_data_before``: the events' data
    was pruned (:class:`DeferredParse`) and is parsed whole before that transform (or after
    the last)."""
    dropped_before = not rows_are_events
    for index, stage in enumerate(transforms):
        if index == parse_data_before:
            events = parse_deferred_data(events)
        point = transform_point(index, stage)
        if count_stages and point.drops and dropped_before:
            events = observe_rows(events, point)
        dropped_before = dropped_before or point.drops
        transform = plugin_implementation(TRANSFORMS, "transform", stage)
        with failing_stage(point.label):
            events = transform(events, parse_stage_config("transform", stage))
    if parse_data_before is not None and parse_data_before >= len(transforms):
        events = parse_deferred_data(events)
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
