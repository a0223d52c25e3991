"""Build a channel's Structured Streaming query: source -> CloudEvents -> transforms -> sink."""

from __future__ import annotations

from collections.abc import Mapping
from functools import partial
from typing import TypeVar

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql.streaming import DataStreamWriter

from pipelines.sinks import SINKS
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
) -> DataStreamWriter:
    """Return the fully configured writer of a channel's query; the caller calls ``start()``.

    The spec is validated again (``SpecError`` with spec-relative paths if invalid). The
    writer has ``checkpointLocation = checkpoint_dir``, ``queryName = sluice-{channel}``,
    append output mode and the default trigger (micro-batches back to back), which the
    caller may override before starting.

    A ``preview`` sink hands each micro-batch's newest events to ``preview_publisher``
    (see :mod:`pipelines.sinks.preview`); without one, to the channel's in-memory
    ``preview_buffer(channel, max_events)``.
    """
    spec = validate_spec(spec)
    events = build_events(spark, spec)
    write = _implementation(SINKS, "sink", spec.sink)
    sink_config = parse_stage_config("sink", spec.sink)
    if isinstance(sink_config, PreviewSinkConfig):  # the one sink that hands events back
        publisher = preview_publisher or preview_buffer(channel, sink_config.max_events).publish
        write = partial(write, publisher=publisher)
    writer = write(events, sink_config)
    return writer.option("checkpointLocation", checkpoint_dir).queryName(query_name(channel))


def build_events(spark: SparkSession, spec: ChannelSpec) -> DataFrame:
    """The streaming events DataFrame of a channel: its source, then its transforms."""
    source = _implementation(SOURCES, "source", spec.source)
    config = parse_stage_config("source", spec.source)
    return apply_transforms(source.to_events(source.read(spark, config), config), spec.transforms)


def apply_transforms(events: DataFrame, transforms: list[StageSpec]) -> DataFrame:
    """Apply transform stages in order (a pure DataFrame function)."""
    for stage in transforms:
        transform = _implementation(TRANSFORMS, "transform", stage)
        events = transform(events, parse_stage_config("transform", stage))
    return events


def _implementation(registry: Mapping[str, T], kind: str, stage: StageSpec) -> T:
    try:
        return registry[stage.type]
    except KeyError:
        raise LookupError(f"the {kind} plugin {stage.type!r} has no Spark implementation") from None
