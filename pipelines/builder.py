"""Build a channel's Structured Streaming query: source -> CloudEvents -> transforms -> error
gate -> sink (and dead-letter sink)."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from functools import partial
from typing import Any, TypeVar

from pyspark import StorageLevel
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql.streaming.readwriter import DataStreamWriter

from pipelines.errors import ErrorRouter, capturing_failed_events, fail_fast, failing_stage
from pipelines.retry import RetriedWrite, sink_dead_letters
from pipelines.runs import RunBounds, read_run_records, tag_events
from pipelines.sinks import BATCH_SINKS, SINK_CHECKS, SINKS
from pipelines.sinks.preview import PreviewPublisher, preview_buffer
from pipelines.sources import SOURCES
from pipelines.sources.http import ingest_kafka_config
from pipelines.spec import ChannelSpec, StageSpec, parse_stage_config, validate_spec
from pipelines.spec.channel import RuntimeOptions
from pipelines.spec.configs import KafkaSourceConfig
from pipelines.spec.configs.files import FilesSinkConfig
from pipelines.spec.configs.http import HttpSourceConfig
from pipelines.spec.configs.preview import PreviewSinkConfig
from pipelines.spec.live import retry_policy
from pipelines.transforms import TRANSFORMS

T = TypeVar("T")


STAGE_METRICS = "sluice.stages"
"""The observed metric (``DataFrame.observe``) counting a channel's events before its error
gate: ``rows`` and, per stage, ``failed_<position>``. A stage that drops events (a filter)
has its own, ``sluice.stages.before_<position>``: the ``rows`` that reach it."""

DROPPING_TRANSFORMS = frozenset({"filter"})
"""The transform types that drop events (every other stage passes each event on, failed
or not): only before these is a count needed of its own — and not before the first one,
which gets every record read (the batch's ``numInputRows``)."""

SOURCES_READING_EVENTS = frozenset({"kafka", "http", "generator"})
"""Sources whose every input row is one event, so the batch's ``numInputRows`` is the
events read (a files source reads a whole file as one row and splits it into events)."""

RetryCounter = Callable[[int], None]
"""Told how many sink writes were retried (one call per retried write)."""

SINKS_REPORTING_ROWS = frozenset({"kafka"})
"""Sinks whose Spark writer reports the rows it wrote in the batch's progress
(``sink.numOutputRows``: DataSource V2 writers). Under ``errors.tolerance: none`` a batch
either fails or has no failed events, so what reaches such a sink needs no count of its
own either: a channel like ``kafka → filter → … → kafka`` counts its stages for free."""


@dataclass(frozen=True)
class StagePoint:
    """A stage whose events the query counts: where it sits, and how its failures are named.

    ``stage`` is ``source``, ``transform`` or ``sink``; ``index`` the transform's place (None
    for the source and the sink); ``label`` the ``failure.stage`` the stage gives the events
    it fails (``transforms[2] (cast)``); ``position`` its place among all stages (0: source).
    """

    position: int
    stage: str
    index: int | None
    type: str
    label: str

    @property
    def drops(self) -> bool:
        """Whether the stage may drop events (then the rows reaching it are counted)."""
        return self.stage == "transform" and self.type in DROPPING_TRANSFORMS

    @property
    def metric(self) -> str:
        """The name of the metric counting the rows that reach a dropping stage."""
        return f"{STAGE_METRICS}.before_{self.position}"


def stage_points(spec: ChannelSpec | Mapping[str, object]) -> list[StagePoint]:
    """The counted stages of a channel, in order: its source, its transforms, its sink (a
    bus: its source and shared transforms; its rules are counted per rule instead, see
    :meth:`pipelines.bus.BatchRun.rule_counts`)."""
    if not isinstance(spec, ChannelSpec):  # a validated spec is not validated again
        spec = validate_spec(spec)
    points = [StagePoint(0, "source", None, spec.source.type, "source")]
    for index, stage in enumerate(spec.transforms):
        points.append(transform_point(index, stage))
    if spec.is_bus:
        return points
    points.append(StagePoint(len(points), "sink", None, spec.the_sink.type, "sink"))
    return points


def transform_point(index: int, stage: StageSpec) -> StagePoint:
    """A transform's point; its failures' stage is ``transforms[2] (cast)``."""
    label = f"transforms[{index}] ({stage.type})"
    return StagePoint(index + 1, "transform", index, stage.type, label)


def observes_gate(spec: ChannelSpec) -> bool:
    """Whether the events reaching the error gate must be counted by an observe of their
    own (:func:`observe_stages`): under ``errors.tolerance: all`` (failures are counted per
    stage) or when the sink does not report the rows it wrote."""
    return (
        spec.errors.tolerance == "all"
        or spec.the_sink.type not in SINKS_REPORTING_ROWS
        or retry_policy(spec.the_sink) is not None  # written by foreachBatch: no row count
    )


def observe_rows(events: DataFrame, point: StagePoint) -> DataFrame:
    """``events`` with the rows reaching a dropping stage counted as they pass."""
    return events.observe(point.metric, F.count(F.lit(1)).alias("rows"))


def observe_stages(events: DataFrame, points: list[StagePoint]) -> DataFrame:
    """``events`` (after the sink's checks, before the error gate) with the stages' counts
    observed as they pass: in the same pass as the data, no extra job, no action.

    One named ``CollectMetrics`` (plain ``count`` / ``sum(CASE ...)`` aggregates) with
    ``rows`` (every event still there, failed or not) and ``failed_<position>`` per stage
    (a failed event keeps the stage that failed it and travels on untouched); with the rows
    counted before each dropping stage (:func:`observe_rows`), :func:`stage_counts` turns
    them into events in / out / failed per stage. Each ``CollectMetrics`` costs a pass over
    the rows outside generated code: there are as few as the dropping stages allow.
    Streaming queries report them in ``StreamingQueryProgress.observedMetrics``.
    """
    stage = F.col("failure.stage")
    failed = [
        F.sum(F.when(stage == F.lit(point.label), 1).otherwise(0)).alias(f"failed_{point.position}")
        for point in points
    ]
    return events.observe(STAGE_METRICS, F.count(F.lit(1)).alias("rows"), *failed)


def stage_counts(
    points: list[StagePoint],
    observed: Mapping[str, Mapping[str, Any]],
    *,
    rows_read: int | None = None,
    rows_written: int | None = None,
) -> list[dict[str, Any]] | None:
    """One micro-batch's per-stage counts from its observed metrics, or None when the batch
    did not report them (e.g. a progress report without new data).

    ``rows_read`` (the progress' ``numInputRows``) stands for the rows reaching the first
    dropping stage, which is never observed; ``rows_written`` (``sink.numOutputRows``, -1
    when the sink does not report it) for the gate's count when that was not observed
    (:func:`observes_gate`): then no event of the batch failed.

    Each stage: ``{"stage", "index", "type", "in", "out", "failed"}``. A stage's ``in`` is
    the healthy events it received (the source: every record read), ``failed`` the events it
    failed, ``out`` the healthy ones it passed on; ``in - out - failed`` is what it dropped
    (a filter). Failed events are not counted again by later stages.
    """
    end = observed.get(STAGE_METRICS)
    if end is None and rows_written is not None and rows_written >= 0:
        end = {"rows": rows_written}
    if not points or end is None:
        return None
    marks = []  # the rows reaching each dropping stage, then those reaching the error gate
    first = True
    for point in points:
        if point.drops:
            if point.metric in observed:
                marks.append(int(observed[point.metric].get("rows") or 0))
            elif first and rows_read is not None:
                marks.append(int(rows_read))
            else:
                return None
            first = False
    marks.append(int(end.get("rows") or 0))
    rows = healthy = marks.pop(0)  # nothing is dropped before the first mark: all read
    counts: list[dict[str, Any]] = []
    for point in points:
        failed = int(end.get(f"failed_{point.position}") or 0)
        dropped = 0
        if point.drops:
            after = marks.pop(0)
            dropped, rows = max(rows - after, 0), after
        out = max(healthy - failed - dropped, 0)
        counts.append(
            {
                "stage": point.stage,
                "index": point.index,
                "type": point.type,
                "in": healthy,
                "out": out,
                "failed": failed,
            }
        )
        healthy = out
    return counts


def query_name(channel: str) -> str:
    """The Structured Streaming query name of a channel (``sluice-{channel}``)."""
    return f"sluice-{channel}"


def build_stream(
    spark: SparkSession,
    spec: ChannelSpec,
    *,
    channel: str,
    checkpoint_dir: str,
    preview_publisher: PreviewPublisher | None = None,
    on_dead_letters: Callable[[int], None] | None = None,
    count_stages: bool = True,
    on_rule_counts: Callable[[int, list[dict[str, Any]]], None] | None = None,
    on_retries: RetryCounter | None = None,
    run: RunBounds | None = None,
) -> DataStreamWriter:
    """Return the fully configured writer of a channel's query; the caller calls ``start()``.

    With ``run`` it is a bounded run's query (a replay or a redrive, :mod:`pipelines.runs`):
    the run's offsets read, its events tagged (see :func:`build_events`).

    The spec is validated again (``SpecError`` with spec-relative paths if invalid). The
    writer has ``checkpointLocation = checkpoint_dir``, ``queryName = sluice-{channel}``,
    append output mode and the trigger of the spec's execution mode (:func:`with_trigger`:
    by default micro-batches back to back).

    Failed events (:mod:`pipelines.errors`) meet the channel's error policy before the sink:
    with ``tolerance: none`` the first one fails the query and the sink is Spark's streaming
    sink; with ``all`` each micro-batch goes through an :class:`ErrorRouter` (the sink's batch
    writer, the dead-letter sink, ``on_dead_letters`` told how many there were).

    A ``preview`` sink hands each micro-batch's newest events to ``preview_publisher``
    (see :mod:`pipelines.sinks.preview`); without one, to the channel's in-memory
    ``preview_buffer(channel, max_events)``.

    With ``count_stages`` each stage's events are counted as they pass
    (:func:`observe_stages`; :func:`stage_counts` reads a batch's
    ``observedMetrics``), under either error policy.

    A bus (a spec with ``rules``) is built by :func:`pipelines.bus.build_bus_stream` (one
    query: one read, each batch routed to every rule's targets); ``on_rule_counts`` then
    receives each batch's per-rule counts (ignored for a linear channel). Use
    ``build_bus_stream`` itself to change the rules of the running query.

    A sink with a ``retry`` policy (:func:`retry_policy`) is written by ``foreachBatch``
    under either error policy, each write retried as :mod:`pipelines.retry` says;
    ``on_retries`` is told of each retried write (the dead-letter target's too).
    """
    spec = validate_spec(spec)
    if spec.is_bus:
        from pipelines.bus import build_bus_stream  # bus builds on this module

        writer, _ = build_bus_stream(
            spark,
            spec,
            channel=channel,
            checkpoint_dir=checkpoint_dir,
            on_rule_counts=on_rule_counts,
            on_dead_letters=on_dead_letters,
            on_retries=on_retries,
            run=run,
            count_stages=count_stages,
        )
        return writer
    tolerant = spec.errors.tolerance == "all"
    sink = spec.the_sink
    sink_config = parse_stage_config("sink", sink)
    check = SINK_CHECKS.get(sink.type)
    with capturing_failed_events(tolerant):  # only dead letters need the failed event
        events = build_events(
            spark,
            spec,
            keep_payload=tolerant,
            count_stages=count_stages,
            run=run,
        )
        if check is not None:
            with failing_stage("sink"):
                events = check(events, sink_config)
        if count_stages and observes_gate(spec):  # before the gate: foreachBatch gets it
            events = observe_stages(events, stage_points(spec))
    publisher = None
    if isinstance(sink_config, PreviewSinkConfig):  # the one sink that hands events back
        publisher = preview_publisher or preview_buffer(channel, sink_config.max_events).publish
    if not tolerant and retry_policy(sink, sink_config) is not None:
        strict = StrictRetriedSink(batch_writer(sink, None, channel=channel, on_retries=on_retries))
        writer = fail_fast(events).writeStream.foreachBatch(strict).outputMode("append")
    elif not tolerant:
        # (events, config) -> writer; the preview sink also takes publisher=
        write: Callable[..., DataStreamWriter] = _implementation(SINKS, "sink", sink)
        if publisher is not None:
            write = partial(write, publisher=publisher)
        writer = write(fail_fast(events), sink_config)
    else:
        dead_letter_sink = spec.errors.dead_letter
        router = ErrorRouter(
            channel=channel,
            write_sink=batch_writer(
                sink, publisher, channel=channel, on_retries=on_retries, tolerant=True
            ),
            write_dead_letters=(
                batch_writer(
                    dead_letter_sink,
                    None,
                    channel=channel,
                    on_retries=on_retries,
                    what=f"dead-letter {dead_letter_sink.type} sink",
                )
                if dead_letter_sink
                else None
            ),
            # A files sink's log must hold every batch id: batches without dead letters too.
            write_empty=spec.errors.dead_letter in _batch_logged_sinks(spec),
            log=spec.errors.log,
            on_dead_letters=on_dead_letters,
            check_batch=schema_watch(spec.source),
        )
        writer = events.writeStream.foreachBatch(router).outputMode("append")
    writer = with_trigger(writer, spec.runtime)
    return writer.option("checkpointLocation", checkpoint_dir).queryName(query_name(channel))


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


def record_empty_batches(
    spark: SparkSession, spec: ChannelSpec | Mapping[str, object], batch_ids: range
) -> None:
    """Record micro-batches that carry no events in a sink that logs every batch id.

    A files sink's ``_spark_metadata`` log must hold every batch id (its readers fail on a
    gap); a batch added to the checkpoint without being run (the runtime moving offsets) is
    written to it as an empty batch. Ids it already has are skipped, as in a replay. Other
    sinks keep no per-batch log: nothing to do.
    """
    from pipelines.cloudevents import EVENT_SCHEMA
    from pipelines.sinks.files import write_files_batch

    spec = validate_spec(spec)
    empty = spark.createDataFrame([], EVENT_SCHEMA)
    for stage in _batch_logged_sinks(spec):
        config = parse_stage_config("sink", stage)
        assert isinstance(config, FilesSinkConfig)  # the stage's type is "files"
        for batch_id in batch_ids:
            write_files_batch(empty, config, batch_id)


def _batch_logged_sinks(spec: ChannelSpec) -> list[StageSpec]:
    """The channel's sinks (its sinks, its dead-letter sink) that log every batch id."""
    stages = [stage for _, stage in spec.sink_stages()] + [spec.errors.dead_letter]
    return [stage for stage in stages if stage is not None and stage.type == "files"]


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
    (:func:`observe_rows`).
    """
    source = _implementation(SOURCES, "source", spec.source)
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
    reaching each dropping transform are counted (:func:`observe_rows`) — but the first's
    when ``rows_are_events`` (the source reads one event per row): it gets every row read,
    the batch's ``numInputRows``."""
    dropped_before = not rows_are_events
    for index, stage in enumerate(transforms):
        point = transform_point(index, stage)
        if count_stages and point.drops and dropped_before:
            events = observe_rows(events, point)
        dropped_before = dropped_before or point.drops
        transform = _implementation(TRANSFORMS, "transform", stage)
        with failing_stage(point.label):
            events = transform(events, parse_stage_config("transform", stage))
    return events


class StrictRetriedSink:
    """``errors.tolerance: none`` with a retried sink: the ``foreachBatch`` function that
    persists each micro-batch (each attempt reads it again) and writes it under the retry
    policy; a write that still fails after it fails the query (``RetriesExhausted``). The
    batch is computed before the first attempt, so a bad event fails it at once, as
    without a policy."""

    def __init__(self, write: Callable[[DataFrame, int], DataFrame | None]) -> None:
        self.write = write

    def __call__(self, batch: DataFrame, batch_id: int) -> None:
        from pipelines.cloudevents import select_event_columns

        events = select_event_columns(batch).persist(StorageLevel.MEMORY_AND_DISK)
        try:
            # Computed (and cached) first: a bad event fails the batch here with its own
            # message (the error gate), not as a sink write that would be retried.
            events.count()
            self.write(events, batch_id)
        finally:
            events.unpersist()


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
    its ``retry`` policy says (:func:`retry_policy`). ``tolerant``: events given up on are
    returned as dead letters; else the write raises ``RetriesExhausted`` (a dead-letter
    target, which has nowhere further to send them, is never tolerant)."""
    write = _implementation(BATCH_SINKS, "sink", stage)
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


def schema_watch(source: StageSpec) -> Callable[[DataFrame], None] | None:
    """For a Kafka source in a wire format: the check that fails a batch naming schema
    versions registered after the query was built (:class:`pipelines.wire.NewVersionWatch`)."""
    if source.type != "kafka":
        return None
    config = parse_stage_config("source", source)
    assert isinstance(config, KafkaSourceConfig)
    if config.schema_registry is None:  # set (defaults filled in) for wire formats only
        return None
    from pipelines.spec.configs.schema_registry import default_subject
    from pipelines.wire import NewVersionWatch

    subject = default_subject(config.schema_registry, config.topics[0] if config.topics else None)
    assert subject is not None
    return NewVersionWatch(config.schema_registry, subject, config.format)


def _implementation(registry: Mapping[str, T], kind: str, stage: StageSpec) -> T:
    try:
        return registry[stage.type]
    except KeyError:
        raise LookupError(f"the {kind} plugin {stage.type!r} has no Spark implementation") from None
