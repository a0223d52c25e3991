"""Observed status in the compacted status topic, fenced by the owner's group generation.

A slot's owner writes its connectors' statuses (keyed by connector id, in the partition of
the connector's slot) in a Kafka transaction that also commits offsets to the runtime's
group with the owner's consumer group metadata (KIP-447's ``TxnOffsetCommit``). The group
coordinator accepts that commit only from a current member of the current generation; a
stale owner (expelled, or one rebalance behind) sees its transaction refused and aborted,
and readers, which read committed records only, never see its statuses.

Between the coordinator's check and the transaction's commit marker a new owner could
write first; every record therefore carries its generation, and :class:`StatusView` drops a
record whose generation is older than the newest it holds for that connector (the classic
protocol's generations only grow, group-wide).
"""

from __future__ import annotations

import json
import logging
import time
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from confluent_kafka import (
    OFFSET_BEGINNING,
    KafkaError,
    KafkaException,
    Message,
    TopicPartition,
)

from runtime_adapter.base import FeedBatch, RuntimeUnavailable, StatusNews, Vouch
from runtime_adapter.group.member import NotOwner, Ownership
from runtime_adapter.group.settings import GroupConfig
from runtime_adapter.group.slots import slot_of
from runtime_adapter.kafka import (
    BrokerUnreachable,
    list_partitions,
    topic_reader_consumer,
    transactional_producer,
)
from runtime_adapter.store import status_from_json

log = logging.getLogger("sluice.group")

VOUCH_PREFIX = "@worker:"
"""The key prefix of a worker's own records in the status topic (its vouches, see
:mod:`runtime_adapter.host.status_relay`); never a connector id's (letters, digits, ``-``,
``_`` and ``.``)."""


def vouch_key(worker_id: str) -> str:
    return f"{VOUCH_PREFIX}{worker_id}"


FENCED_CODES = frozenset(
    {
        KafkaError.ILLEGAL_GENERATION,
        KafkaError.UNKNOWN_MEMBER_ID,
        KafkaError.FENCED_INSTANCE_ID,
        KafkaError.REBALANCE_IN_PROGRESS,
        KafkaError.STALE_MEMBER_EPOCH,
    }
)
"""The coordinator's answers that mean "not a current member of the current generation"."""


class StatusRejected(RuntimeUnavailable):
    """The group coordinator refused the write: the writer is not (or no longer) a member of
    the group's current generation. Its transaction was aborted; nothing of it is visible."""

    def __init__(self, message: str, code: int) -> None:
        super().__init__(message)
        self.code = code


@dataclass(frozen=True)
class StatusRecord:
    """One connector's observed status as the status topic holds it."""

    connector_id: str
    status: dict[str, Any]
    generation: int
    member_id: str
    worker_id: str
    slot: int

    def to_json(self) -> bytes:
        return json.dumps(
            {
                "connector_id": self.connector_id,
                "status": self.status,
                "generation": self.generation,
                "member_id": self.member_id,
                "worker_id": self.worker_id,
                "slot": self.slot,
            },
            separators=(",", ":"),
            default=str,
        ).encode()

    @classmethod
    def from_json(cls, raw: bytes) -> StatusRecord:
        data = json.loads(raw)
        return cls(
            str(data["connector_id"]),
            dict(data.get("status") or {}),
            int(data["generation"]),
            str(data.get("member_id", "")),
            str(data.get("worker_id", "")),
            int(data["slot"]),
        )


class StatusWriter:
    """Writes statuses of the connectors a member owns, fenced by its generation.

    One per runtime worker (its transactional id is the worker's: a restarted worker's
    writer fences its predecessor's at :meth:`open`). Not thread-safe: one transaction at a
    time; callers serialise their writes (a worker's status loop).
    """

    def __init__(self, config: GroupConfig, worker_id: str, *, timeout: float = 10.0) -> None:
        self._config = config
        self.worker_id = worker_id
        self._timeout = timeout
        self._producer = transactional_producer(
            config.bootstrap,
            f"{config.group_id}.status.{worker_id}",
            # A writer frozen inside a transaction holds back read_committed readers of its
            # partitions until the broker aborts it: no longer than a session.
            transaction_timeout=config.session_timeout,
        )

    def open(self) -> None:
        """Register the transactional id (fencing an older writer with the same id)."""
        try:
            # (a coordinator that just took over may need longer than a write's calls)
            self._producer.init_transactions(max(self._timeout, 10.0))
        except KafkaException as exc:
            raise BrokerUnreachable(f"status writer could not start: {exc}") from exc

    def write(
        self,
        ownership: Ownership,
        statuses: Mapping[str, Mapping[str, Any] | None],
        *,
        skip_unowned: bool = False,
        slots: Mapping[str, int] | None = None,
    ) -> list[str]:
        """Write ``{connector id: status}`` as one transaction fenced by ``ownership``; the
        ids left out (with ``skip_unowned``, those outside ``ownership.slots``). A key is
        written in the partition of its slot: :func:`slot_of` it, or ``slots[key]`` (a
        worker's own record, see :mod:`runtime_adapter.host.status_relay`). A ``None``
        status is a tombstone: compaction removes the key (a deleted connector's status).

        Raises :class:`NotOwner` (nothing sent) for a connector outside ``ownership.slots``
        unless ``skip_unowned``, :class:`StatusRejected` when the coordinator refuses the
        generation (the transaction is aborted), and
        :class:`~runtime_adapter.kafka.BrokerUnreachable` when Kafka does not answer in time
        (aborted too, when it can be).
        """
        slot_for = {
            cid: (slots or {}).get(cid, slot_of(cid, self._config.slots)) for cid in statuses
        }
        skipped = [cid for cid in statuses if slot_for[cid] not in ownership.slots]
        if skipped and not skip_unowned:
            raise NotOwner(
                f"worker {self.worker_id} does not own the slots of {', '.join(sorted(skipped))}"
            )
        records: list[tuple[str, int, bytes | None]] = [
            (
                cid,
                slot_for[cid],
                None
                if s is None
                else StatusRecord(
                    cid,
                    dict(s),
                    ownership.generation,
                    ownership.member_id,
                    self.worker_id,
                    slot_for[cid],
                ).to_json(),
            )
            for cid, s in statuses.items()
            if cid not in skipped
        ]
        if not records:
            return skipped
        offsets = [
            TopicPartition(self._config.config_topic, slot, ownership.positions.get(slot, 0))
            for slot in sorted({slot for _, slot, _ in records})
        ]
        producer = self._producer
        try:
            producer.begin_transaction()
            for cid, slot, value in records:
                producer.produce(self._config.status_topic, value, cid, partition=slot)
            producer.send_offsets_to_transaction(offsets, ownership.metadata, self._timeout)
            producer.commit_transaction(self._timeout)
        except KafkaException as exc:
            self._abort(exc, ownership)
        return skipped

    def _abort(self, exc: KafkaException, ownership: Ownership) -> None:
        error = exc.args[0] if exc.args and isinstance(exc.args[0], KafkaError) else None
        if error is not None and error.fatal():
            raise BrokerUnreachable(f"status writer fenced for good: {error.str()}") from exc
        try:
            self._producer.abort_transaction(self._timeout)
        except KafkaException as abort_error:
            log.warning("status writer %s: abort failed: %s", self.worker_id, abort_error)
        if error is not None and error.code() in FENCED_CODES:
            raise StatusRejected(
                f"status write of worker {self.worker_id} (generation {ownership.generation}) "
                f"refused by the group coordinator: {error.name()}",
                error.code(),
            ) from exc
        raise BrokerUnreachable(f"status write not committed: {exc}") from exc

    def close(self) -> None:
        self._producer.flush(self._timeout)


class StatusView:
    """The latest accepted status per connector, from status records in log order.

    A record of an older generation than the one held for its connector is dropped (a
    stale owner's write that slipped past the coordinator's check).
    """

    def __init__(self) -> None:
        self.records: dict[str, StatusRecord] = {}
        self.dropped = 0

    def apply(self, connector_id: str, value: bytes | None) -> StatusRecord | None:
        """Take one record; the new status, or ``None`` (deleted, or dropped as stale)."""
        if value is None:
            self.records.pop(connector_id, None)
            return None
        record = StatusRecord.from_json(value)
        held = self.records.get(connector_id)
        if held is not None and record.generation < held.generation:
            self.dropped += 1
            return None
        self.records[connector_id] = record
        return record


_IDLE = 0.05
"""Seconds a read waits for more once the consumer has nothing fetched left: it fetches in
the background all along, so what was written before the read is normally here already."""
_FIRST_FETCH = 0.5
"""Seconds a read waits for the first records after the reader was positioned (an empty
fetch answers within ``_IDLE``: its end of partition events end the wait sooner)."""


class StatusFeedReader:
    """The status topic as a :class:`~runtime_adapter.base.StatusFeed` (the console's control
    loop follows it from the cursor it stores with each pass).

    One consumer, kept between reads: it goes on fetching in the background, so a read
    usually finds what was written since the last one already here. It is positioned again
    only when the cursor asked for is not where the last read ended (another process's pass
    moved it, or a pass was not saved). Statuses of an older group generation than the newest
    read for their connector are dropped (:class:`StatusView`), as are records this code
    cannot read (logged).
    """

    def __init__(self, config: GroupConfig, *, client_id: str = "sluice-status-feed") -> None:
        self._config = config
        self._client_id = client_id
        self._consumer: Any = None
        self._partitions: list[int] = []
        self._position: dict[int, int] = {}
        self._at_end: set[int] = set()
        """Partitions whose last event since positioning was their end (librdkafka's
        partition EOF): nothing was written there after what was read."""
        self._view = StatusView()

    def read(self, cursor: Mapping[int, int] | None, *, budget: float = 0.5) -> FeedBatch:
        try:
            return self._read(cursor, budget)
        except KafkaException as exc:
            self.close()  # positioned anew next time
            raise BrokerUnreachable(f"status feed: {exc}") from exc

    def _read(self, cursor: Mapping[int, int] | None, budget: float) -> FeedBatch:
        wait = _IDLE
        if self._consumer is None or cursor is None or dict(cursor) != self._position:
            self._assign(cursor)
            wait = _FIRST_FETCH  # the first fetch after positioning takes a round trip
        consumer = self._consumer
        news: list[StatusNews] = []
        vouches: list[Vouch] = []
        deadline = time.monotonic() + budget
        idle = False
        while (left := deadline - time.monotonic()) > 0:
            messages = consumer.consume(1000, min(left, wait))
            for message in messages:
                self._take(message, news, vouches)
            if self._at_end.issuperset(self._partitions):
                idle = True  # every partition said it is at its end: what was written is read
                break
            wait = _IDLE
        return FeedBatch(news, vouches, dict(self._position), idle)

    def _assign(self, cursor: Mapping[int, int] | None) -> None:
        topic = self._config.status_topic
        if cursor is None:
            self._view = StatusView()  # from the start: every connector's latest again
        start = dict(cursor or {})
        self._at_end = set()  # an end is known again only once each partition says so
        if self._consumer is not None:
            # Positioned anew (another process's pass moved the cursor, or this one's was not
            # saved): each partition sought, the assignment kept.
            self._position = {p: start.get(p, 0) for p in self._partitions}
            for p, offset in self._position.items():
                self._consumer.seek(TopicPartition(topic, p, offset))
            return
        partitions = list_partitions(self._config.bootstrap, [topic])
        if not partitions:
            raise BrokerUnreachable(f"status topic {topic} not found")
        self._partitions = [p.partition for p in partitions]
        self._position = {p: start.get(p, 0) for p in self._partitions}
        consumer = topic_reader_consumer(
            self._config.bootstrap, client_id=self._client_id, fetch_wait=_IDLE
        )
        consumer.assign([TopicPartition(topic, p, o) for p, o in self._position.items()])
        self._consumer = consumer

    def _take(self, message: Message, news: list[StatusNews], vouches: list[Vouch]) -> None:
        partition = message.partition() or 0
        error = message.error()
        if error is not None:
            if error.code() == KafkaError._PARTITION_EOF:
                # (past the transaction markers the last record was followed by)
                self._position[partition] = message.offset() or self._position[partition]
                self._at_end.add(partition)
                return
            raise KafkaException(error)
        self._at_end.discard(partition)
        self._position[partition] = (message.offset() or 0) + 1
        key = message.key()
        if key is None:
            return
        cid = key.decode()
        try:
            record = self._view.apply(cid, message.value())
        except (ValueError, KeyError, TypeError) as exc:
            where = f"{partition}/{message.offset()}"
            log.warning("status record %s at %s unreadable: %s", cid, where, exc)
            return
        if record is None:
            if message.value() is None and not cid.startswith(VOUCH_PREFIX):
                news.append(StatusNews(cid, None, False, 0, message.partition()))
            return
        if cid.startswith(VOUCH_PREFIX):
            ages = record.status.get("ages") or {}
            vouches.append(
                Vouch(
                    record.worker_id,
                    {cid: float(age) for age, ids in ages.items() for cid in ids},
                    float(record.status.get("report_interval") or 0.0),
                    record.generation,
                    float(record.status.get("at") or 0.0),
                    _capacity(record.status.get("capacity")),
                )
            )
            return
        try:
            status = status_from_json(json.dumps(record.status))
        except (ValueError, KeyError, TypeError) as exc:
            where = f"{partition}/{message.offset()}"
            log.warning("status record %s at %s is not a status: %s", cid, where, exc)
            return
        news.append(
            StatusNews(
                cid,
                status,
                bool(record.status.get("reporting", True)),
                record.generation,
                message.partition(),
            )
        )

    def latest(self, *, timeout: float = 10.0) -> dict[str, StatusRecord]:
        """Every connector's latest status, read from the start until caught up (or
        ``timeout``): the tests' look at the whole topic."""
        deadline = time.monotonic() + timeout
        batch = self.read(None, budget=timeout)
        while not batch.caught_up and (left := deadline - time.monotonic()) > 0:
            batch = self.read(batch.cursor, budget=left)
        return dict(self._view.records)

    def close(self) -> None:
        if self._consumer is not None:
            consumer, self._consumer = self._consumer, None
            consumer.close()


class StatusScanner:
    """Which keys hold a record in some partitions of the status topic (committed
    transactions, read from their beginning to their end): what a slot's new owner sweeps
    (:mod:`runtime_adapter.host.status_relay`). One consumer, kept between scans."""

    def __init__(self, config: GroupConfig, *, client_id: str) -> None:
        self._config = config
        self._client_id = client_id
        self._consumer: Any = None

    def live_keys(self, slots: set[int], *, budget: float = 5.0) -> dict[int, set[str]] | None:
        """``{slot: keys whose latest record is not a tombstone}``, or ``None`` when a
        partition was not read to its end within ``budget`` seconds (Kafka slow or away)."""
        if not slots:
            return {}
        topic = self._config.status_topic
        try:
            if self._consumer is None:
                self._consumer = topic_reader_consumer(
                    self._config.bootstrap, client_id=self._client_id, fetch_wait=_IDLE
                )
            consumer = self._consumer
            consumer.assign([TopicPartition(topic, slot, OFFSET_BEGINNING) for slot in slots])
            live: dict[int, set[str]] = {slot: set() for slot in slots}
            pending = set(slots)
            deadline = time.monotonic() + budget
            while pending and (left := deadline - time.monotonic()) > 0:
                for message in consumer.consume(1000, min(left, 0.2)):
                    slot = message.partition() or 0
                    error = message.error()
                    if error is not None:
                        if error.code() == KafkaError._PARTITION_EOF:
                            pending.discard(slot)
                        continue
                    key = message.key()
                    if key is None or slot not in live:
                        continue
                    if message.value() is None:
                        live[slot].discard(key.decode())
                    else:
                        live[slot].add(key.decode())
            consumer.unassign()
        except KafkaException as exc:
            log.warning("scanning the status topic failed: %s", exc)
            self.close()
            return None
        return None if pending else live

    def close(self) -> None:
        if self._consumer is not None:
            consumer, self._consumer = self._consumer, None
            consumer.close()


def statuses_of(records: Iterable[StatusRecord]) -> dict[str, dict[str, Any]]:
    return {r.connector_id: r.status for r in records}


CAPACITY_FIELDS = {
    "cores": int,
    "cores_held": int,
    "connectors": int,
    "memory_available_mb": int,
    "draining": bool,
    "slots": list,
}
"""What a worker's own record says of its capacity, and each figure's type."""


def _capacity(raw: object) -> dict[str, Any] | None:
    """A worker's capacity as its record says it: the known figures of the right type (a
    newer worker's others are left out); ``None`` when it says none."""
    if not isinstance(raw, dict):
        return None
    found: dict[str, Any] = {}
    for name, kind in CAPACITY_FIELDS.items():
        value = raw.get(name)
        if kind is list:
            if isinstance(value, list) and all(
                isinstance(v, int) and not isinstance(v, bool) for v in value
            ):
                found[name] = value
        elif isinstance(value, kind) and (kind is bool or not isinstance(value, bool)):
            found[name] = value
    return found
