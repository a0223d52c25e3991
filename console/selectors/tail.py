"""A channel's live tail: the newest events where they physically are (read only).

The places a channel's events can be read (its *points*) come from the revision its
connector runs (the latest saved one when it never ran), so the tail shows what the running
channel writes, not what a saved change would:

* ``source``: a Kafka source's topics (or the topics its ``topic_pattern`` matches now); an
  HTTP source's ingest topic on the console's Kafka, where ingestion writes each event;
* ``sink``: a linear channel's Kafka sink topic, or its Preview sink's buffer (the runtime
  keeps the newest events it wrote);
* ``rule:<name>``: each Kafka target of a bus rule (``rule:<name>:<n>`` when the rule has
  more than one Kafka target; ``n`` is the target's place in the rule's sinks, from 0);
* ``dead-letters``: a Kafka dead-letter topic.

Other stages (generator and files sources, files, JDBC and HTTP sinks) keep no place the
console reads. Kafka is read by :mod:`runtime_adapter.tail` (assigned partitions, no
consumer group, a deadline, byte ceilings): a broker that does not answer gives the state
``unreachable`` with why, never a request that hangs.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any, cast

from django.conf import settings

from console.crypto import decrypt_spec
from console.errors import RuntimeUnavailable, runtime_errors
from console.models import Channel, Connector, Revision
from console.runtime import get_runtime
from runtime_adapter import tail as reader
from runtime_adapter.kafka import BrokerUnreachable, ingest_topic, security_settings

DEFAULT_LIMIT = 50
MAX_LIMIT = 200


class UnknownTailPoint(ValueError):
    """A point the channel does not have; the message names those it has."""


@dataclass(frozen=True)
class TailPoint:
    """One place a channel's events can be read."""

    id: str
    label: str
    kind: str
    """``kafka`` or ``preview``."""
    location: str
    """Where, in words (the topics and brokers, or the preview buffer)."""
    readable: bool = True
    note: str = ""
    bootstrap_servers: str = field(default="", repr=False)
    topics: tuple[str, ...] = field(default=(), repr=False)
    topic_pattern: str | None = field(default=None, repr=False)
    settings: dict[str, object] | None = field(default=None, repr=False)
    """librdkafka's security settings, secrets in plain text: never shown."""


@dataclass(frozen=True)
class TailAnswer:
    """What one look at a point found."""

    point: TailPoint
    state: str
    """``ok``; ``unreachable`` (the brokers or the runtime did not answer in time: nothing is
    known about the events now); ``unreadable`` (the console cannot read this point)."""
    note: str
    records: list[dict[str, Any]]
    complete: bool
    read_at: datetime


def running_spec(channel: Channel) -> dict[str, Any]:
    """The spec of the revision the channel's connector runs (the latest saved one when it
    was never deployed), decrypted, with an HTTP source's ingest topic and Kafka named (the
    console writes ingested events to ``sluice.ingest.<channel>`` on its own Kafka)."""
    connector = Connector.objects.filter(channel=channel).select_related("revision").first()
    revision = connector.revision if connector is not None else None
    revision = revision or cast(Revision, channel.latest_revision_obj())
    spec = decrypt_spec(revision.spec)
    source = spec.get("source") or {}
    if source.get("type") == "http":
        source["config"] = {
            **(source.get("config") or {}),
            "ingest_topic": ingest_topic(channel.name),
            "bootstrap_servers": settings.SLUICE_KAFKA_BOOTSTRAP,
        }
    return spec


def tail_points(spec: dict[str, Any]) -> list[TailPoint]:
    """The points of a channel running ``spec``, in the order a picker offers them: the
    source, the sink or each rule's Kafka targets, the dead letters."""
    points: list[TailPoint] = []
    source = spec.get("source") or {}
    config = source.get("config") or {}
    if source.get("type") == "kafka":
        topics = tuple(config.get("topics") or ())
        pattern = config.get("topic_pattern")
        what = f"topics matching {pattern}" if pattern else _topics_words(topics)
        points.append(_kafka_point("source", "Source", config, what, topics, pattern))
    elif source.get("type") == "http":
        topic = str(config["ingest_topic"])
        points.append(
            _kafka_point(
                "source",
                "Source (ingested events)",
                config,
                f"ingest topic {topic}",
                (topic,),
                None,
            )
        )
    sink = spec.get("sink") or {}
    if sink.get("type") == "kafka":
        topic = str((sink.get("config") or {}).get("topic"))
        points.append(
            _kafka_point("sink", "Sink", sink["config"], f"topic {topic}", (topic,), None)
        )
    elif sink.get("type") == "preview":
        points.append(
            TailPoint(
                "sink",
                "Sink (preview)",
                "preview",
                "the newest events the Preview sink kept (the runtime holds them)",
            )
        )
    for rule in spec.get("rules") or []:
        sinks = enumerate(rule.get("sinks") or [])
        targets = [(index, s) for index, s in sinks if s.get("type") == "kafka"]
        for index, target in targets:
            topic = str(target["config"].get("topic"))
            point_id = f"rule:{rule['name']}" + (f":{index}" if len(targets) > 1 else "")
            label = f"Rule {rule['name']} → {topic}"
            points.append(
                _kafka_point(point_id, label, target["config"], f"topic {topic}", (topic,), None)
            )
    dead = (spec.get("errors") or {}).get("dead_letter") or {}
    if dead.get("type") == "kafka":
        topic = str(dead["config"].get("topic"))
        where = f"topic {topic}"
        points.append(
            _kafka_point("dead-letters", "Dead letters", dead["config"], where, (topic,), None)
        )
    return points


def default_point(points: Sequence[TailPoint]) -> TailPoint | None:
    """The point a tail opens on: what the channel wrote (its sink, else a rule's first
    target), else what it reads."""
    for point in points:
        if point.id == "sink" or point.id.startswith("rule:"):
            return point
    return points[0] if points else None


def find_point(points: Sequence[TailPoint], point_id: str | None) -> TailPoint | None:
    """The point ``point_id`` names (the default one when ``None``); :class:`UnknownTailPoint`
    naming the valid ones when the channel has no such point."""
    if point_id is None:
        return default_point(points)
    for point in points:
        if point.id == point_id:
            return point
    valid = ", ".join(p.id for p in points)
    raise UnknownTailPoint(
        f"this channel has no point {point_id!r}; its points are: {valid}"
        if points
        else f"this channel has no point {point_id!r}: it has no Kafka topic or Preview "
        "sink the console can read"
    )


def read_tail(point: TailPoint, *, channel: Channel, limit: int = DEFAULT_LIMIT) -> TailAnswer:
    """The newest ``limit`` events at ``point``, newest first (see the module docstring)."""
    limit = max(1, min(limit, MAX_LIMIT))
    now = datetime.now(UTC)
    if not point.readable:
        return TailAnswer(point, "unreadable", point.note, [], True, now)
    if point.kind == "preview":
        return _read_preview(point, channel, limit, now)
    try:
        found = reader.read_newest(
            point.bootstrap_servers,
            topics=point.topics,
            topic_pattern=point.topic_pattern,
            limit=limit,
            settings=point.settings,
        )
    except BrokerUnreachable as exc:
        return TailAnswer(point, "unreachable", f"Kafka did not answer: {exc}", [], False, now)
    notes = []
    if found.missing:
        notes.append(f"{_topics_words(found.missing)} does not exist yet")
    if point.topic_pattern and not found.topics:
        notes.append(f"no topic matches {point.topic_pattern} now")
    if not found.complete:
        notes.append(
            f"Kafka was slow: not every partition was read within {reader.TIMEOUT:.0f} s, "
            "newer events may be missing"
        )
    records = [record_view(r) for r in found.records]
    return TailAnswer(point, "ok", "; ".join(notes), records, found.complete, now)


def record_view(record: reader.TailRecord) -> dict[str, Any]:
    """A Kafka record as the API shows it."""
    return {
        "topic": record.topic,
        "partition": record.partition,
        "offset": record.offset,
        "timestamp": _time(record.timestamp_ms),
        "key": record.key.value,
        "key_encoding": record.key.encoding,
        "headers": [
            {"name": name, "value": value.value, "encoding": value.encoding}
            for name, value in record.headers
        ],
        "value": record.value.value,
        "value_encoding": record.value.encoding,
        "truncated": record.value.truncated or record.key.truncated,
        "size": record.value.size,
    }


def channel_preview(channel: Channel, limit: int = 50) -> list[dict[str, Any]]:
    """The newest events the channel's ``preview`` sink kept, newest first.

    Empty for a channel that was never started. Raises :class:`RuntimeUnavailable` when the
    runtime cannot be reached.
    """
    connector = Connector.objects.filter(channel=channel).only("runtime_id").first()
    if connector is None:
        return []
    runtime = get_runtime()
    with runtime_errors("preview"):
        return runtime.preview(connector.runtime_id, limit)


def _read_preview(point: TailPoint, channel: Channel, limit: int, now: datetime) -> TailAnswer:
    connector = Connector.objects.filter(channel=channel).only("runtime_id").first()
    if connector is None:
        return TailAnswer(point, "ok", "the channel never ran", [], True, now)
    try:
        with runtime_errors():
            events = get_runtime().preview(connector.runtime_id, limit)
    except RuntimeUnavailable as exc:
        return TailAnswer(point, "unreachable", str(exc), [], False, now)
    return TailAnswer(point, "ok", "", [preview_view(e) for e in events], True, now)


def preview_view(event: Any) -> dict[str, Any]:
    """An event the Preview sink kept, shaped as a record (no topic, partition or offset)."""
    value = reader.decode(json.dumps(event).encode(), reader.VALUE_BYTES)
    when = event.get("time") if isinstance(event, dict) else None
    return {
        "topic": None,
        "partition": None,
        "offset": None,
        "timestamp": when if isinstance(when, str) else None,
        "key": None,
        "key_encoding": "null",
        "headers": [],
        "value": value.value,
        "value_encoding": value.encoding,
        "truncated": value.truncated,
        "size": value.size,
    }


def _kafka_point(
    point_id: str,
    label: str,
    config: dict[str, Any],
    what: str,
    topics: tuple[str, ...],
    pattern: str | None,
) -> TailPoint:
    servers = str(config.get("bootstrap_servers") or "")
    settings = security_settings(config.get("security"))
    location = f"Kafka {what} on {servers}"
    if settings is None:
        note = "TLS Kafka cannot be read by the console (its client has no Java key stores)"
        return TailPoint(point_id, label, "kafka", location, False, note)
    return TailPoint(
        point_id, label, "kafka", location, True, "", servers, topics, pattern, settings
    )


def _topics_words(topics: Sequence[str]) -> str:
    return ("topic " if len(topics) == 1 else "topics ") + ", ".join(topics)


def _time(stamp_ms: int | None) -> str | None:
    if stamp_ms is None:
        return None
    return datetime.fromtimestamp(stamp_ms / 1000, UTC).isoformat().replace("+00:00", "Z")
