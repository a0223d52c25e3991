"""The newest records of Kafka topics, read for a look (a channel's live tail), bounded.

:func:`read_newest` reads, per partition, the last ``limit`` records (from ``end - limit``
to the end offset the broker gave when asked), merges them newest first and keeps
``limit``. It assigns partitions at explicit offsets: it joins no consumer group and
commits nothing, so a look never moves anybody's offsets and leaves no group behind.

Everything is bounded so that a look can sit on a page polled every two seconds:

* time: one deadline for the whole read (metadata, end offsets, records); a broker that
  does not answer the metadata request in time is :class:`~runtime_adapter.kafka.BrokerUnreachable`,
  one that answers but is slow to hand over records gives what came (``complete`` False);
* size: each value is cut at ``value_bytes`` (and keys and headers at their own ceilings)
  with a ``truncated`` mark, and the reading stops once ``total_bytes`` of records came.

Values are decoded for people: JSON when they parse as JSON, else UTF-8 text, else shown
as base64 (``value_encoding`` says which).
"""

from __future__ import annotations

import base64
import json
import re
import time
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, cast

from confluent_kafka import Consumer, KafkaError, KafkaException, Message, TopicPartition

from runtime_adapter.kafka import BrokerUnreachable, consumer, watermarks

READER_GROUP = "sluice-tail-reader"
"""librdkafka needs a ``group.id`` even for assigned partitions; the reader never joins or
commits, so this group stays empty."""
VALUE_BYTES = 16 * 1024
"""A value longer than this is cut (``truncated``): a tail row is for a look, not a dump."""
KEY_BYTES = 1024
HEADER_BYTES = 1024
TOTAL_BYTES = 2 * 1024 * 1024
"""The most record bytes one read takes in (before cutting): past it, it stops reading."""
TIMEOUT = 3.0
"""Seconds one read may take, everything included."""


@dataclass(frozen=True)
class Decoded:
    """Bytes shown to a person: ``value`` (JSON, text or base64 as ``encoding`` says),
    ``truncated`` when the bytes were longer than the ceiling and were cut."""

    value: Any
    encoding: str
    """``json``, ``text`` or ``base64``; ``null`` for an absent value (a tombstone)."""
    truncated: bool
    size: int
    """The original length in bytes."""


@dataclass(frozen=True)
class TailRecord:
    topic: str
    partition: int
    offset: int
    timestamp_ms: int | None
    key: Decoded
    headers: list[tuple[str, Decoded]]
    value: Decoded


@dataclass(frozen=True)
class TailRead:
    """What a read found: ``records`` newest first (at most the ``limit`` asked)."""

    records: list[TailRecord]
    topics: list[str]
    """The topics read (those that exist)."""
    missing: list[str]
    """Topics asked for that do not exist (yet)."""
    complete: bool
    """False when the deadline or :data:`TOTAL_BYTES` came before every partition's end."""


def decode(raw: bytes | None, ceiling: int, *, parse_json: bool = True) -> Decoded:
    """``raw`` for a person: JSON when the whole of it parses as JSON (and ``parse_json``),
    else UTF-8 text, else base64; cut at ``ceiling`` bytes (a cut value is never parsed as
    JSON: it is shown as the text it starts with)."""
    if raw is None:
        return Decoded(None, "null", False, 0)
    size = len(raw)
    truncated = size > ceiling
    kept = raw[:ceiling] if truncated else raw
    try:
        text = kept.decode("utf-8")
    except UnicodeDecodeError as exc:
        # A cut can split a character: what precedes it is still text.
        if truncated and exc.start >= len(kept) - 3 and exc.reason == "unexpected end of data":
            text = kept[: exc.start].decode("utf-8", errors="replace")
        else:
            return Decoded(base64.b64encode(kept).decode("ascii"), "base64", truncated, size)
    if parse_json and not truncated:
        try:
            return Decoded(json.loads(text), "json", False, size)
        except ValueError:
            pass
    return Decoded(text, "text", truncated, size)


def newest_first(records: Iterable[TailRecord], limit: int) -> list[TailRecord]:
    """The ``limit`` newest records: by timestamp (records without one last), then by
    offset, newest first; a stable order for records of the same millisecond."""
    return sorted(
        records,
        key=lambda r: (
            r.timestamp_ms if r.timestamp_ms is not None else -1,
            r.offset,
            r.topic,
            r.partition,
        ),
        reverse=True,
    )[:limit]


def start_offsets(
    ends: Mapping[tuple[str, int], tuple[int, int]], limit: int
) -> dict[tuple[str, int], tuple[int, int]]:
    """Per partition with records, ``(first offset to read, end offset)``: the last
    ``limit`` records, never before the partition's low watermark."""
    return {key: (max(low, high - limit), high) for key, (low, high) in ends.items() if high > low}


def matching_topics(pattern: str, topics: Iterable[str]) -> list[str]:
    """The topics a Kafka source's ``topic_pattern`` reads (internal ones never), sorted."""
    compiled = re.compile(pattern)
    return sorted(t for t in topics if not t.startswith("__") and compiled.fullmatch(t))


def read_newest(
    bootstrap_servers: str,
    *,
    topics: Sequence[str] = (),
    topic_pattern: str | None = None,
    limit: int,
    settings: Mapping[str, object] | None = None,
    timeout: float = TIMEOUT,
    value_bytes: int = VALUE_BYTES,
    total_bytes: int = TOTAL_BYTES,
) -> TailRead:
    """The newest ``limit`` records of ``topics`` (or of the topics ``topic_pattern``
    matches), newest first, within ``timeout`` seconds (see the module docstring).

    Raises :class:`BrokerUnreachable` when the brokers do not answer in time."""
    deadline = time.monotonic() + timeout
    reader = consumer(
        bootstrap_servers,
        READER_GROUP,
        settings,
        {
            "enable.auto.offset.store": False,
            "enable.partition.eof": True,
            "auto.offset.reset": "latest",
            "allow.auto.create.topics": False,
            "socket.connection.setup.timeout.ms": max(1000, int(timeout * 1000)),
        },
    )
    try:
        try:
            metadata = reader.list_topics(timeout=_left(deadline))
        except KafkaException as exc:
            raise BrokerUnreachable(
                f"Kafka broker(s) {bootstrap_servers} did not answer within {timeout:.0f} s: {exc}"
            ) from exc
        present = {name: meta for name, meta in metadata.topics.items() if meta.error is None}
        wanted = (
            matching_topics(topic_pattern, present) if topic_pattern is not None else list(topics)
        )
        found = [t for t in wanted if t in present]
        missing = [t for t in wanted if t not in present]
        ends: dict[tuple[str, int], tuple[int, int]] = {}
        for topic in found:
            for partition in sorted(present[topic].partitions):
                ends[(topic, partition)] = watermarks(
                    reader, TopicPartition(topic, partition), _left(deadline)
                )
        records, complete = _consume(
            reader, start_offsets(ends, limit), deadline, value_bytes, total_bytes
        )
        return TailRead(newest_first(records, limit), found, missing, complete)
    except KafkaException as exc:
        raise BrokerUnreachable(f"Kafka broker(s) {bootstrap_servers}: {exc}") from exc
    finally:
        reader.close()


def _left(deadline: float) -> float:
    return max(0.1, deadline - time.monotonic())


def _consume(
    reader: Consumer,
    ranges: Mapping[tuple[str, int], tuple[int, int]],
    deadline: float,
    value_bytes: int,
    total_bytes: int,
) -> tuple[list[TailRecord], bool]:
    """The records of ``[start, end)`` per partition until each end, the deadline or
    ``total_bytes``; whether every range was read to its end."""
    if not ranges:
        return [], True
    reader.assign([TopicPartition(t, p, start) for (t, p), (start, _) in ranges.items()])
    pending = {key: end for key, (_, end) in ranges.items()}
    wanted = sum(end - start for start, end in ranges.values())
    found: list[TailRecord] = []
    taken = 0
    while pending and taken < total_bytes and time.monotonic() < deadline:
        # consume() returns once it has num_messages or its timeout passed: asking for no more
        # than is left keeps a read from waiting out the timeout (0.5 s a look, measured).
        batch = max(1, min(500, wanted - len(found)))
        for message in reader.consume(num_messages=batch, timeout=min(0.1, _left(deadline))):
            key = (message.topic() or "", message.partition() or 0)
            error = message.error()
            if error is not None:
                if error.code() == KafkaError._PARTITION_EOF:
                    pending.pop(key, None)
                    continue
                raise KafkaException(error)
            offset = message.offset()
            end = pending.get(key)
            if offset is None or end is None or offset >= end:
                continue
            taken += len(message.value() or b"") + len(message.key() or b"")
            found.append(_record(message, key, offset, value_bytes))
            if offset + 1 >= end:
                pending.pop(key, None)
    reader.unassign()
    return found, not pending


def _record(message: Message, where: tuple[str, int], offset: int, value_bytes: int) -> TailRecord:
    kind, stamp = message.timestamp()
    raw_headers = cast("list[tuple[str, bytes | None]]", message.headers() or [])
    raw_key = message.key()
    return TailRecord(
        topic=where[0],
        partition=where[1],
        offset=offset,
        # kind 0: TIMESTAMP_NOT_AVAILABLE
        timestamp_ms=stamp if kind != 0 and stamp >= 0 else None,
        key=decode(raw_key, KEY_BYTES, parse_json=False),
        headers=[
            (name, decode(value, HEADER_BYTES, parse_json=False)) for name, value in raw_headers
        ],
        value=decode(message.value(), value_bytes),
    )
