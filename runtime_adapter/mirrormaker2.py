"""MirrorMaker 2's source offsets, read and written in its own Kafka Connect offsets topic.

MM2's ``MirrorSourceConnector`` keeps, per source partition, the offset of the LAST record it
copied, in its Connect offsets topic (dedicated mode: ``mm2-offsets.<source alias>.internal``
on the target cluster; a compacted topic, 25 partitions by default)::

    key   ["MirrorSourceConnector",{"cluster":"<source alias>","partition":0,"topic":"orders"}]
    value {"offset":41}

and on start seeks each partition to ``offset + 1`` (``MirrorSourceTask.initializeConsumer``;
a missing or negative offset leaves the consumer to its ``auto.offset.reset``, ``earliest``).
A channel's position is the NEXT offset to read, so:

* taking over from MM2 (:func:`read_mirror_offsets`): the channel's next offset is ``offset + 1``;
* handing back (:func:`write_mirror_offsets`): MM2's offset is the channel's next offset ``- 1``
  (``-1`` for a partition the channel read nothing from: MM2 starts it from the beginning).

Connect's offset store finds an offset by the BYTES of its key, and reads every partition of the
topic with the newest record of a key winning: a written key must be byte for byte what Connect's
``JsonConverter`` writes (fields in the order above, no spaces; an existing key's bytes are reused
as they are) and land in the partition Connect's producer would choose (Java's default
partitioner: murmur2 of the key, which librdkafka's ``murmur2`` partitioner reproduces).
Write only while every MM2 that uses the topic is stopped: a running one overwrites it.
"""

from __future__ import annotations

import json
import re
import time
import uuid
from collections.abc import Mapping
from typing import Any

from confluent_kafka import OFFSET_BEGINNING, KafkaException, TopicPartition

# ConfigResource's documented import (confluent_kafka.admin has no __all__ naming it).
from confluent_kafka.admin import AdminClient, ConfigResource  # type: ignore[attr-defined]

from runtime_adapter.base import OffsetsError, RuntimeUnavailable
from runtime_adapter.kafka import (
    BrokerUnreachable,
    TopicReplication,
    admin_client,
    consumer,
    create_topic,
    producer,
    security_settings,
    watermarks,
)

CONNECTOR = "MirrorSourceConnector"
"""The connector name MM2's dedicated driver gives its source connector (the first element of
every key it writes)."""

ALIAS = re.compile(r"[A-Za-z0-9][A-Za-z0-9_-]{0,63}")
"""A cluster alias Sluice accepts: letters, digits, ``_`` and ``-`` (MM2's default replication
policy uses ``.`` as its separator, so an alias with a dot makes ambiguous topic names)."""

OFFSETS_TOPIC_PARTITIONS = 25
"""Partitions of an offsets topic this module creates: Connect's default
(``offset.storage.partitions``)."""

MirrorOffsets = dict[tuple[str, int], int]
"""``{(topic, partition): offset of the last record MM2 copied}``, MM2's own form."""


def offsets_topic(source_alias: str) -> str:
    """The offsets topic MM2's dedicated driver uses for the flow from ``source_alias``."""
    return f"mm2-offsets.{check_alias(source_alias)}.internal"


def check_alias(alias: str) -> str:
    if not ALIAS.fullmatch(alias):
        raise OffsetsError(
            f"{alias!r} is not a cluster alias (1-64 letters, digits, '_' or '-', "
            "starting with a letter or digit)"
        )
    return alias


def encode_key(source_alias: str, topic: str, partition: int) -> bytes:
    """The key Connect's ``JsonConverter`` writes for MM2's source partition."""
    source = {"cluster": source_alias, "partition": partition, "topic": topic}
    return json.dumps([CONNECTOR, source], separators=(",", ":")).encode()


def encode_value(offset: int) -> bytes:
    return json.dumps({"offset": offset}, separators=(",", ":")).encode()


def decode_key(key: bytes | None) -> tuple[str, str, int] | None:
    """``(cluster alias, topic, partition)`` of an MM2 source key; ``None`` for any other key
    (another connector's, MM2's checkpoint or heartbeat connectors', garbage)."""
    try:
        data = json.loads(key or b"")
    except ValueError:
        return None
    if not (isinstance(data, list) and len(data) == 2 and data[0] == CONNECTOR):
        return None
    source = data[1]
    if not isinstance(source, dict):
        return None
    cluster, topic, partition = source.get("cluster"), source.get("topic"), source.get("partition")
    if not (isinstance(cluster, str) and isinstance(topic, str)):
        return None
    if isinstance(partition, bool) or not isinstance(partition, int) or partition < 0:
        return None
    return cluster, topic, partition


def decode_value(value: bytes | None) -> int | None:
    """The offset of an MM2 value; ``None`` for a tombstone (the offset was reset) or a value
    without a usable offset."""
    if value is None:
        return None
    try:
        data = json.loads(value)
    except ValueError:
        return None
    offset = data.get("offset") if isinstance(data, dict) else None
    if isinstance(offset, bool) or not isinstance(offset, int):
        return None
    return offset


def _admin(bootstrap_servers: str, settings: Mapping[str, object] | None) -> AdminClient:
    # Looking up a mistyped offsets topic must not create one.
    return admin_client(bootstrap_servers, settings, auto_create_topics=False)


def _partitions(admin: AdminClient, topic: str, servers: str, timeout: float) -> list[int] | None:
    """The partitions of ``topic``, or ``None`` when it does not exist."""
    try:
        metadata = admin.list_topics(topic=topic, timeout=timeout)
    except KafkaException as exc:
        raise BrokerUnreachable(f"could not reach the brokers {servers}: {exc}") from exc
    found = metadata.topics.get(topic)
    if found is None or found.error is not None or not found.partitions:
        return None
    return sorted(found.partitions)


MAX_KEYS = 100_000
"""Offsets of one cluster alias an offsets topic may hold (a source partition each)."""
MAX_SCANNED = 2_000_000
"""Records read from an offsets topic at most: past them it is no MM2 offsets topic."""


def _read_records(
    servers: str,
    topic: str,
    partitions: list[int],
    settings: Mapping[str, object] | None,
    timeout: float,
    source_alias: str,
) -> dict[bytes, bytes | None]:
    """Every key of MirrorMaker 2's source connector for ``source_alias`` in ``topic`` with
    its newest value (``None``: a tombstone), read from the beginning to the end each
    partition has now. Other keys are not kept, and the read is bounded (:data:`MAX_KEYS`,
    :data:`MAX_SCANNED`, ``timeout``): a topic that is not MM2's costs no more than that."""
    reader = consumer(
        servers,
        f"sluice-mm2-reader-{uuid.uuid4().hex[:12]}",
        settings,
        {"enable.partition.eof": False, "isolation.level": "read_committed"},
    )
    latest: dict[bytes, bytes | None] = {}
    scanned = 0
    deadline = time.monotonic() + timeout
    try:
        ends = {}
        for partition in partitions:
            left = deadline - time.monotonic()
            low, high = watermarks(reader, TopicPartition(topic, partition), left)
            if high > low:
                ends[partition] = high
        reader.assign([TopicPartition(topic, p, OFFSET_BEGINNING) for p in ends])
        done: set[int] = set()
        while len(done) < len(ends):
            if time.monotonic() > deadline:
                raise BrokerUnreachable(
                    f"could not read {topic} on {servers} to its end in {timeout:.0f}s"
                )
            for message in reader.consume(500, timeout=1.0):
                error = message.error()
                if error is not None:
                    raise BrokerUnreachable(f"could not read {topic} on {servers}: {error}")
                scanned += 1
                key = message.key()
                decoded = decode_key(key) if key is not None else None
                if key is not None and decoded is not None and decoded[0] == source_alias:
                    latest[key] = message.value()
                if len(latest) > MAX_KEYS or scanned > MAX_SCANNED:
                    raise OffsetsError(
                        f"{topic!r} on {servers} holds more than {MAX_KEYS:,} offsets of "
                        f"{source_alias} or {MAX_SCANNED:,} records: not an offsets topic "
                        "Sluice reads"
                    )
                at, offset = message.partition(), message.offset()
                if at is not None and offset is not None and offset + 1 >= ends[at]:
                    done.add(at)
            # A transaction marker or compacted-away tail can end a partition without a record
            # at end - 1: the consumer's position says it reached the end.
            for position in reader.position([TopicPartition(topic, p) for p in ends]):
                if position.offset >= ends[position.partition]:
                    done.add(position.partition)
    except KafkaException as exc:
        raise BrokerUnreachable(f"could not read {topic} on {servers}: {exc}") from exc
    finally:
        reader.close()
    return latest


def _require_compacted(admin: AdminClient, topic: str, servers: str, timeout: float) -> None:
    """Kafka Connect refuses an offsets topic that is not compacted: one that is not is some
    other topic, and nothing is written into it."""
    resource = ConfigResource(ConfigResource.Type.TOPIC, topic)
    try:
        found = admin.describe_configs([resource], request_timeout=timeout)[resource].result(
            timeout=timeout
        )
    except KafkaException as exc:
        raise BrokerUnreachable(f"could not describe {topic!r} on {servers}: {exc}") from exc
    entry = found.get("cleanup.policy")
    policy = str(entry.value) if entry is not None else ""
    if "compact" not in policy.split(","):
        raise OffsetsError(
            f"{topic!r} on {servers} is not a Kafka Connect offsets topic (its cleanup.policy "
            f"is {policy or 'unknown'}, not compact): nothing was written"
        )


def read_mirror_offsets(
    bootstrap_servers: str,
    topic: str,
    source_alias: str,
    *,
    settings: Mapping[str, object] | None = None,
    timeout: float = 30.0,
) -> MirrorOffsets:
    """MM2's offsets for ``source_alias`` in its offsets topic ``topic`` (on
    ``bootstrap_servers``, MM2's target cluster): ``{(source topic, partition): last copied
    offset}``; reset (tombstoned) and negative offsets left out. Raises :class:`OffsetsError`
    when the topic does not exist, :class:`BrokerUnreachable` when the brokers do not answer."""
    check_alias(source_alias)
    admin = _admin(bootstrap_servers, settings)
    partitions = _partitions(admin, topic, bootstrap_servers, timeout)
    if partitions is None:
        raise OffsetsError(
            f"there is no topic {topic!r} on {bootstrap_servers}: MirrorMaker 2 keeps its "
            "offsets on its TARGET cluster, in mm2-offsets.<source alias>.internal"
        )
    found: MirrorOffsets = {}
    records = _read_records(bootstrap_servers, topic, partitions, settings, timeout, source_alias)
    for key, value in records.items():
        decoded = decode_key(key)
        if decoded is None or decoded[0] != source_alias:
            continue
        offset = decode_value(value)
        if offset is not None and offset >= 0:
            found[(decoded[1], decoded[2])] = offset
    return found


def write_mirror_offsets(
    bootstrap_servers: str,
    topic: str,
    source_alias: str,
    offsets: MirrorOffsets,
    *,
    settings: Mapping[str, object] | None = None,
    replication: TopicReplication | None = None,
    timeout: float = 30.0,
) -> bool:
    """Write ``offsets`` (MM2's form: last copied offset, ``-1`` for none) for
    ``source_alias`` into MM2's offsets topic ``topic``, creating it (compacted, Connect's 25
    partitions, replicated as ``replication`` says: one copy when None) when it does not
    exist; True when this call created it. Every record is acknowledged by all in-sync
    replicas before this returns."""
    check_alias(source_alias)
    if not offsets:
        raise OffsetsError("no offsets to write")
    admin = _admin(bootstrap_servers, settings)
    partitions = _partitions(admin, topic, bootstrap_servers, timeout)
    created = False
    existing: dict[tuple[str, int], bytes] = {}
    if partitions is None:
        try:
            created = create_topic(
                bootstrap_servers,
                topic,
                partitions=OFFSETS_TOPIC_PARTITIONS,
                replication=replication or TopicReplication(),
                config={"cleanup.policy": "compact"},
                settings=settings,
                timeout=timeout,
            )
        except BrokerUnreachable:
            raise
        except RuntimeUnavailable as exc:
            raise OffsetsError(f"could not create {topic!r} on {bootstrap_servers}: {exc}") from exc
        if not created:
            # made meanwhile (an MM2 starting, or a broker's auto-creation): as if it existed
            _require_compacted(admin, topic, bootstrap_servers, timeout)
    else:
        _require_compacted(admin, topic, bootstrap_servers, timeout)
        # Reuse the exact bytes of keys Connect already wrote (lookups are by key bytes).
        for key in _read_records(
            bootstrap_servers, topic, partitions, settings, timeout, source_alias
        ):
            decoded = decode_key(key)
            if decoded is not None and decoded[0] == source_alias:
                existing[(decoded[1], decoded[2])] = key
    writer = producer(bootstrap_servers, settings, {"partitioner": "murmur2"})
    failures: list[str] = []

    def delivered(error: Any, _message: Any) -> None:
        if error is not None:
            failures.append(str(error))

    for (source_topic, partition), offset in sorted(offsets.items()):
        key = existing.get((source_topic, partition)) or encode_key(
            source_alias, source_topic, partition
        )
        writer.produce(topic, encode_value(offset), key=key, on_delivery=delivered)
    left = writer.flush(timeout)
    if left or failures:
        raise BrokerUnreachable(
            f"could not write MirrorMaker 2's offsets to {topic!r} on {bootstrap_servers}: "
            + (failures[0] if failures else f"{left} record(s) not acknowledged in {timeout:.0f}s")
        )
    return created


def spec_clusters(spec: dict[str, Any]) -> dict[str, dict[str, Any] | None]:
    """The Kafka clusters ``spec`` already reaches: ``{bootstrap servers: its stage's security
    block}``, the Kafka source's and the Kafka sink's (the sink's first, MM2's offsets topic is
    on its target cluster). Only these may hold the MM2 offsets topic a channel reads or writes:
    an editor names no other broker through this door."""
    from pipelines.spec import validate_spec

    checked = validate_spec(spec)
    clusters: dict[str, dict[str, Any] | None] = {}
    for stage in (checked.sink, checked.source):
        if stage is None or stage.type != "kafka":
            continue
        config = stage.config
        servers = config.get("bootstrap_servers")
        if isinstance(servers, str) and servers not in clusters:
            clusters[servers] = config.get("security")
    return clusters


def mirror_cluster_settings(spec: dict[str, Any], bootstrap_servers: str) -> dict[str, object]:
    """librdkafka settings for ``bootstrap_servers``, which must be one of the clusters ``spec``
    reaches (:func:`spec_clusters`), with that stage's security; else :class:`OffsetsError`."""
    clusters = spec_clusters(spec)
    if bootstrap_servers not in clusters:
        raise OffsetsError(
            f"{bootstrap_servers!r} is not a Kafka cluster the channel reads or writes"
        )
    settings = security_settings(clusters[bootstrap_servers])
    if settings is None:
        raise OffsetsError(
            "that cluster uses TLS, which the offset tools cannot reach: MirrorMaker 2's "
            "offsets cannot be read or written there"
        )
    return settings
