"""Build a channel's Structured Streaming query: source -> CloudEvents -> transforms -> error
gate -> sink (and dead-letter sink)."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from functools import partial
from typing import TypeVar

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql.streaming import DataStreamWriter

from pipelines.errors import ErrorRouter, capturing_failed_events, fail_fast, label_failures
from pipelines.sinks import BATCH_SINKS, SINK_CHECKS, SINKS
from pipelines.sinks.preview import PreviewPublisher, preview_buffer
from pipelines.sources import SOURCES
from pipelines.spec import ChannelSpec, StageSpec, parse_stage_config, validate_spec
from pipelines.spec.configs.preview import PreviewSinkConfig
from pipelines.transforms import TRANSFORMS

T = TypeVar("T")


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
) -> DataStreamWriter:
    """Return the fully configured writer of a channel's query; the caller calls ``start()``.

    The spec is validated again (``SpecError`` with spec-relative paths if invalid). The
    writer has ``checkpointLocation = checkpoint_dir``, ``queryName = sluice-{channel}``,
    append output mode and the default trigger (micro-batches back to back), which the
    caller may override before starting.

    Failed events (:mod:`pipelines.errors`) meet the channel's error policy before the sink:
    with ``tolerance: none`` the first one fails the query and the sink is Spark's streaming
    sink; with ``all`` each micro-batch goes through an :class:`ErrorRouter` (the sink's batch
    writer, the dead-letter sink, ``on_dead_letters`` told how many there were).

    A ``preview`` sink hands each micro-batch's newest events to ``preview_publisher``
    (see :mod:`pipelines.sinks.preview`); without one, to the channel's in-memory
    ``preview_buffer(channel, max_events)``.
    """
    spec = validate_spec(spec)
    tolerant = spec.errors.tolerance == "all"
    sink_config = parse_stage_config("sink", spec.sink)
    check = SINK_CHECKS.get(spec.sink.type)
    with capturing_failed_events(tolerant):  # only dead letters need the failed event
        events = build_events(spark, spec, keep_payload=tolerant)
        if check is not None:
            events = label_failures(check(events, sink_config), "sink")
    publisher = None
    if isinstance(sink_config, PreviewSinkConfig):  # the one sink that hands events back
        publisher = preview_publisher or preview_buffer(channel, sink_config.max_events).publish
    if not tolerant:
        write = _implementation(SINKS, "sink", spec.sink)
        if publisher is not None:
            write = partial(write, publisher=publisher)
        writer = write(fail_fast(events), sink_config)
    else:
        router = ErrorRouter(
            channel=channel,
            write_sink=_batch_writer(spec.sink, publisher),
            write_dead_letters=(
                _batch_writer(spec.errors.dead_letter, None) if spec.errors.dead_letter else None
            ),
            # A files sink's log must hold every batch id: batches without dead letters too.
            write_empty=spec.errors.dead_letter in _batch_logged_sinks(spec),
            log=spec.errors.log,
            on_dead_letters=on_dead_letters,
        )
        writer = events.writeStream.foreachBatch(router).outputMode("append")
    return writer.option("checkpointLocation", checkpoint_dir).queryName(query_name(channel))


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
        for batch_id in batch_ids:
            write_files_batch(empty, config, batch_id)


def _batch_logged_sinks(spec: ChannelSpec) -> list[StageSpec]:
    """The channel's sinks (its sink, its dead-letter sink) that log every batch id."""
    stages = [spec.sink, spec.errors.dead_letter]
    return [stage for stage in stages if stage is not None and stage.type == "files"]


def build_events(
    spark: SparkSession, spec: ChannelSpec, *, keep_payload: bool = False
) -> DataFrame:
    """The streaming events DataFrame of a channel: its source, then its transforms.

    Failed events carry the stage that failed them; ``origin_payload`` is kept only with
    ``keep_payload`` (for dead letters), else it is NULL and never carried.
    """
    source = _implementation(SOURCES, "source", spec.source)
    config = parse_stage_config("source", spec.source)
    events = label_failures(source.to_events(source.read(spark, config), config), "source")
    if not keep_payload:
        events = events.withColumn("origin_payload", F.lit(None).cast("string"))
    return apply_transforms(events, spec.transforms)


def apply_transforms(events: DataFrame, transforms: list[StageSpec]) -> DataFrame:
    """Apply transform stages in order (a pure DataFrame function); a failure gets the
    stage's place and type, e.g. ``transforms[2] (cast)``."""
    for index, stage in enumerate(transforms):
        transform = _implementation(TRANSFORMS, "transform", stage)
        events = transform(events, parse_stage_config("transform", stage))
        events = label_failures(events, f"transforms[{index}] ({stage.type})")
    return events


def _batch_writer(
    stage: StageSpec, publisher: PreviewPublisher | None
) -> Callable[[DataFrame, int], DataFrame | None]:
    """``(events, batch_id) -> rejected dead letters | None`` for a sink stage."""
    write = _implementation(BATCH_SINKS, "sink", stage)
    config = parse_stage_config("sink", stage)
    if publisher is not None:
        write = partial(write, publisher=publisher)

    def write_batch(events: DataFrame, batch_id: int) -> DataFrame | None:
        return write(events, config, batch_id)

    return write_batch


def _implementation(registry: Mapping[str, T], kind: str, stage: StageSpec) -> T:
    try:
        return registry[stage.type]
    except KeyError:
        raise LookupError(f"the {kind} plugin {stage.type!r} has no Spark implementation") from None
