"""Source offsets of a connector: what a channel's Kafka source reads, and moving it.

The console records an :class:`~runtime_adapter.base.OffsetChange` for a stopped connector
(in Redis, ``{p}:desired:offsets``); the connector's next driver applies it before its query
starts (:func:`apply_change`):

* with a checkpoint that planned a batch, it appends a synthetic committed batch holding
  the new position (:func:`runtime_adapter.checkpoint.append_batch`): Spark resumes from
  it, and batch ids keep growing, so a files sink's exactly-once log stays right;
* without one, the Kafka source's ``starting_offsets`` is set to the concrete new position
  in the spec the query is built from (the saved revision is not changed).

Timestamps and resets are resolved to concrete offsets against the brokers at that moment
(``offsets_for_times``; a reset goes back to the source's configured ``starting_offsets``).
Only Kafka-backed sources (``kafka``, and ``http``, which reads its ingest topic) have
offsets here; a files or generator source keeps its own position in the checkpoint.
"""

from __future__ import annotations

import copy
import re
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from runtime_adapter.base import OffsetChange, OffsetsError
from runtime_adapter.checkpoint import (
    KafkaOffsets,
    append_batch,
    has_batches,
    latest_committed,
    uncommitted_batch_ids,
)
from runtime_adapter.kafka import (
    EARLIEST,
    LATEST,
    PartitionInfo,
    list_partitions,
    list_topics,
    partition_offsets,
    security_settings,
)

KAFKA_BACKED_SOURCES = ("kafka", "http")


@dataclass(frozen=True)
class KafkaSource:
    """What a channel's Kafka-backed source reads, and where it starts the first time."""

    source_type: str
    bootstrap_servers: str
    topics: tuple[str, ...] | None
    topic_pattern: str | None
    security: dict[str, Any] | None
    starting: str | int | dict[str, dict[str, int]]
    """``earliest``, ``latest``, epoch milliseconds or ``{"topic": {"partition": offset}}``."""

    @property
    def settings(self) -> dict[str, object] | None:
        """librdkafka settings; ``None`` for TLS, which these clients cannot reproduce."""
        return security_settings(self.security)

    def reads(self, topic: str) -> bool:
        if self.topics is not None:
            return topic in self.topics
        return bool(self.topic_pattern and re.fullmatch(self.topic_pattern, topic))


def kafka_source(spec: dict[str, Any]) -> KafkaSource | None:
    """The spec's Kafka-backed source, or ``None`` for a source without Kafka offsets.

    ``spec`` is a deployed spec (an http source names its ingest topic and brokers).
    """
    from pipelines.spec import parse_stage_config, validate_spec
    from pipelines.spec.configs.kafka import OffsetsStart, TimestampStart

    stage = validate_spec(spec).source
    if stage.type not in KAFKA_BACKED_SOURCES:
        return None
    config: Any = parse_stage_config("source", stage)
    if stage.type == "http":
        if not config.ingest_topic or not config.bootstrap_servers:
            return None
        servers, topic = config.bootstrap_servers, config.ingest_topic
        return KafkaSource("http", servers, (topic,), None, None, EARLIEST)
    start = config.starting_offsets
    if isinstance(start, TimestampStart):
        starting: str | int | dict[str, dict[str, int]] = start.millis
    elif isinstance(start, OffsetsStart):
        starting = start.offsets
    else:
        starting = start
    security = config.security.model_dump() if config.security else None
    return KafkaSource(
        "kafka",
        config.bootstrap_servers,
        tuple(config.topics) if config.topics is not None else None,
        config.topic_pattern,
        security,
        starting,
    )


def source_partitions(source: KafkaSource) -> list[PartitionInfo]:
    """Every partition the source reads now (topics matched by its pattern included)."""
    settings = client_settings(source)
    topics = source.topics
    if topics is None:
        every = list_topics(source.bootstrap_servers, settings)
        topics = tuple(topic for topic in every if source.reads(topic))
    return list_partitions(source.bootstrap_servers, topics, settings=settings)


def starting_position(source: KafkaSource, partitions: list[PartitionInfo]) -> KafkaOffsets:
    """The source's configured ``starting_offsets`` as concrete offsets of ``partitions``."""
    settings = client_settings(source)
    servers = source.bootstrap_servers
    if not isinstance(source.starting, dict):
        return partition_offsets(servers, partitions, source.starting, settings=settings)
    earliest = partition_offsets(servers, partitions, EARLIEST, settings=settings)
    latest = partition_offsets(servers, partitions, LATEST, settings=settings)
    position: KafkaOffsets = {}
    for key in earliest:
        named = source.starting.get(key[0], {}).get(str(key[1]), -2)
        position[key] = {-2: earliest[key], -1: latest[key]}.get(named, named)
    return position


def window_offsets(
    source: KafkaSource, start_ms: int, end_ms: int
) -> tuple[KafkaOffsets, KafkaOffsets]:
    """``(first offsets, end offsets)`` of ``[start_ms, end_ms)`` in every partition the
    source reads: each partition's first record at or after each time (its end when there is
    none), Kafka's ``offsets_for_times``. A partition whose timestamps are out of order is cut
    by offsets at the first record at or after each bound."""
    partitions = source_partitions(source)
    settings = client_settings(source)
    servers = source.bootstrap_servers
    starts = partition_offsets(servers, partitions, int(start_ms), settings=settings)
    ends = partition_offsets(servers, partitions, int(end_ms), settings=settings)
    return starts, {key: max(ends[key], starts[key]) for key in starts}


def resolve_change(
    change: OffsetChange, source: KafkaSource, partitions: list[PartitionInfo]
) -> KafkaOffsets:
    """The concrete offsets ``change`` moves partitions to (all of them, except for
    ``offsets``, which names its own). Raises :class:`OffsetsError` for a partition that
    does not exist."""
    if change.kind == "reset":
        return starting_position(source, partitions)
    if change.kind == "timestamp":
        return partition_offsets(
            source.bootstrap_servers,
            partitions,
            int(change.timestamp_ms or 0),
            settings=client_settings(source),
        )
    named = {(o.topic, o.partition): o.offset for o in change.offsets}
    existing = {(p.topic, p.partition) for p in partitions}
    missing = sorted(set(named) - existing)
    if missing:
        listed = ", ".join(f"{topic}/{partition}" for topic, partition in missing)
        raise OffsetsError(f"cannot move offsets: partition(s) {listed} do not exist")
    return named


@dataclass(frozen=True)
class AppliedChange:
    """What :func:`apply_change` did."""

    spec: dict[str, Any]
    """The spec to build the query from (a copy with new starting offsets, or as it was)."""
    position: KafkaOffsets
    """The position the query now resumes from (empty when Spark's own start applies)."""
    batch_id: int | None
    """The synthetic batch written to the checkpoint, if any."""


def apply_change(
    change: OffsetChange,
    spec: dict[str, Any],
    checkpoint: Path,
    record_empty_batches: Callable[[range], None] | None = None,
) -> AppliedChange:
    """Make the next query over ``checkpoint`` resume exactly where ``change`` says.

    Before a synthetic batch is written, ``record_empty_batches`` is given the batch ids
    the sink may lack (up to the synthetic one), so a sink that logs every batch id (the
    files sink) can record them as empty: its readers fail on a gap. Idempotent in effect:
    applying the same change twice writes the same position twice. Raises
    :class:`OffsetsError` when it cannot, the checkpoint left as it was.
    """
    source = kafka_source(spec)
    if source is None:
        raise OffsetsError("the source keeps no Kafka offsets; nothing to move")
    partitions = source_partitions(source)
    moved = resolve_change(change, source, partitions)
    if has_batches(checkpoint):
        committed = latest_committed(checkpoint)
        current = committed.kafka if committed and committed.kafka else {}
        position = moved if change.kind == "reset" else {**current, **moved}
        if record_empty_batches is not None:
            record_empty_batches(uncommitted_batch_ids(checkpoint))
        return AppliedChange(spec, position, append_batch(checkpoint, position))
    if change.kind == "reset":
        return AppliedChange(spec, {}, None)  # a fresh query starts where the spec says
    if source.source_type != "kafka":
        raise OffsetsError(
            "an http source's offsets can be moved only after it ran once (it has no checkpoint)"
        )
    position = {**starting_position(source, partitions), **moved}
    return AppliedChange(with_starting_offsets(spec, position), position, None)


def with_starting_offsets(spec: dict[str, Any], position: KafkaOffsets) -> dict[str, Any]:
    """A copy of ``spec`` whose Kafka source starts at ``position`` (every partition)."""
    updated = copy.deepcopy(spec)
    offsets: dict[str, dict[str, int]] = {}
    for (topic, partition), offset in sorted(position.items()):
        offsets.setdefault(topic, {})[str(partition)] = offset
    updated["source"].setdefault("config", {})["starting_offsets"] = {"offsets": offsets}
    return updated


def client_settings(source: KafkaSource) -> dict[str, object]:
    settings = source.settings
    if settings is None:
        raise OffsetsError(
            "the source uses TLS, which the offset tools cannot reach: offsets cannot be "
            "resolved or moved (use Spark's own starting_offsets on a new channel instead)"
        )
    return settings
