"""Kafka access: client config, reachability checks, consumer groups, topics, producing.

Every confluent-kafka client the runtime makes is created here (:func:`admin_client`,
:func:`consumer`, :func:`producer`) and every topic it creates goes through
:func:`create_topic`, with the replication the runtime's settings give
(:class:`TopicReplication`), so client settings, topic settings and naming live in one place.
"""

from __future__ import annotations

import logging
import os
import socket
import threading
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from confluent_kafka import (
    Consumer,
    ConsumerGroupTopicPartitions,
    KafkaError,
    KafkaException,
    Producer,
    TopicPartition,
)

# The documented imports; confluent_kafka.admin takes NewTopic and others from cimpl
# without an __all__, which mypy's no-implicit-reexport reads as private.
from confluent_kafka.admin import (  # type: ignore[attr-defined]
    AdminClient,
    AlterConfigOpType,
    ConfigEntry,
    ConfigResource,
    NewTopic,
    ResourceType,
)

from runtime_adapter.base import RuntimeUnavailable
from runtime_adapter.config import RuntimeSettings

log = logging.getLogger(__name__)


class BrokerUnreachable(RuntimeUnavailable):
    """The brokers (the runtime's, or those named in a stage config) did not answer.

    A :class:`~runtime_adapter.base.RuntimeUnavailable`: the helpers below raise it, never
    confluent-kafka's own ``KafkaException``, for a Kafka that is down or refuses a request.
    """


@dataclass(frozen=True)
class PartitionInfo:
    topic: str
    partition: int


def consumer_group(channel: str) -> str:
    """The consumer group a channel's driver commits its processed offsets to."""
    return f"sluice-{channel}"


def ingest_topic(channel: str) -> str:
    """The Kafka topic the console writes a channel's HTTP-ingested events to."""
    return f"sluice.ingest.{channel}"


@dataclass(frozen=True)
class TopicReplication:
    """How a topic the runtime creates is replicated: ``factor`` copies, of which
    ``min_insync`` must confirm a write made with ``acks=all``. The embedded default (one
    broker) is 1/1; a cluster of three brokers runs 3/2 (``SLUICE_TOPIC_REPLICATION_FACTOR``,
    ``SLUICE_TOPIC_MIN_INSYNC_REPLICAS``)."""

    factor: int = 1
    min_insync: int = 1

    @classmethod
    def from_settings(cls, settings: RuntimeSettings | None = None) -> TopicReplication:
        """The replication the runtime's settings give (read from the environment when
        ``settings`` is None)."""
        settings = settings or RuntimeSettings.load()
        return cls(settings.topic_replication_factor, settings.topic_min_insync_replicas)

    def topic_config(self) -> dict[str, str]:
        """The topic-level settings a new topic is created with."""
        return {"min.insync.replicas": str(self.min_insync)}


def client_config(
    bootstrap_servers: str, settings: Mapping[str, object] | None = None
) -> dict[str, Any]:
    """The settings every client starts from: the brokers, a bounded connection setup, then
    ``settings`` (a stage's security, a caller's own) over them."""
    # Any, as Consumer and Producer take it: librdkafka checks the values (str, int, float,
    # bool) itself, and a stage's settings come in as object, short of AdminClient's type.
    return {
        "bootstrap.servers": bootstrap_servers,
        "socket.connection.setup.timeout.ms": 5000,
        **(settings or {}),
    }


def admin_client(
    bootstrap_servers: str,
    settings: Mapping[str, object] | None = None,
    *,
    auto_create_topics: bool = True,
) -> AdminClient:
    """An admin client. ``auto_create_topics=False`` keeps its metadata lookups from creating
    a topic on a broker that auto-creates (librdkafka's admin handle is a producer)."""
    config = client_config(bootstrap_servers, settings)
    if not auto_create_topics:
        config["allow.auto.create.topics"] = False
    return AdminClient(config)


GROUP_LOOKUP_PATIENCE = 600.0
"""Seconds librdkafka itself pursues a question about a consumer group (its members, its
committed offsets: its request timeout), far longer than a caller waits for the answer. A
request that times out inside librdkafka while its lookup of the group's coordinator is still
under way aborts the process when that lookup answers later
(``rd_kafka_enq_once_del_source_return: Assertion `eonce->refcnt > 0'``, librdkafka 2.16, with
the handle kept alive): the console's Celery worker died so whenever the runtime group's
coordinator broker was killed. So the question stays asked, the caller gives up on waiting
only, and asks nothing new until it is answered."""
KEEP_GIVEN_UP = 60.0
"""Seconds an admin client whose caller gave up on a request is kept alive (:func:`_outlive`)."""
_PENDING: list[tuple[AdminClient, list[Any], float]] = []
_PENDING_LOCK = threading.Lock()


def _outlive(admin: AdminClient, futures: Iterable[Any]) -> None:
    """Keep ``admin`` alive for :data:`KEEP_GIVEN_UP` seconds and until ``futures`` are done.
    librdkafka aborts the whole process (``rd_kafka_enq_once_del_source_return: Assertion
    `eonce->refcnt > 0' failed``) when an admin handle is destroyed while its lookup of a
    group's coordinator is still under way and answers later, even once the request's future
    said it timed out: a call that gave up while the coordinator moved (a killed coordinator
    broker: the fault suite's console died so, 2 s after the timeout) must not drop its
    handle at once. Kept handles are let go at a later call."""
    now = time.monotonic()
    with _PENDING_LOCK:
        _PENDING[:] = [
            (a, fs, until)
            for a, fs, until in _PENDING
            if until > now or not all(f.done() for f in fs)
        ]
        _PENDING.append((admin, list(futures), now + KEEP_GIVEN_UP))


MAX_UNANSWERED = 16
"""Admin handles kept for questions not yet answered (:func:`_outlive`) past which a group's
offsets are not asked anew: each holds librdkafka's threads and connections."""


def unanswered() -> int:
    """Admin handles kept alive for questions Kafka has not answered yet."""
    with _PENDING_LOCK:
        return sum(1 for _, futures, _ in _PENDING if not all(f.done() for f in futures))


_SHARED: dict[tuple[int, str], AdminClient] = {}
_SHARED_LOCK = threading.Lock()


def shared_admin(bootstrap_servers: str) -> AdminClient:
    """One admin client per process and cluster, never destroyed, for what is asked again and
    again (the control loop's look at the runtime group, every pass): no handle is made and
    dropped each time (see :func:`_outlive` for why dropping one can abort the process). Per
    process id: a forked child (a Celery pool worker) never uses its parent's. A client a
    request failed on is retired (:func:`retire_shared_admin`) and the next call makes a new
    one."""
    key = (os.getpid(), bootstrap_servers)
    with _SHARED_LOCK:
        admin = _SHARED.get(key)
        if admin is None:
            admin = _SHARED[key] = admin_client(bootstrap_servers, auto_create_topics=False)
        return admin


def retire_shared_admin(
    bootstrap_servers: str, admin: AdminClient, futures: Iterable[Any] = ()
) -> None:
    """Stop handing out ``admin`` (the shared client of ``bootstrap_servers``) after a request
    on it failed, and keep it alive until ``futures`` are done (:func:`_outlive`). librdkafka
    caches the broker it found coordinating a group for as long as its metadata lives
    (``metadata.max.age.ms``, 15 minutes) and does not drop that entry when the broker
    answers NOT_COORDINATOR: a kept client asked a moved group's old coordinator pass after
    pass (the fault suite's console saw its runtime group's membership unknown for minutes
    after a coordinator broker was killed, and took a live host for dead)."""
    key = (os.getpid(), bootstrap_servers)
    with _SHARED_LOCK:
        if _SHARED.get(key) is admin:
            del _SHARED[key]
    _outlive(admin, futures)


def consumer(
    bootstrap_servers: str,
    group: str,
    settings: Mapping[str, object] | None = None,
    config: Mapping[str, Any] | None = None,
) -> Consumer:
    """A consumer of ``group`` that never commits by itself; ``config`` (librdkafka's
    settings) over that."""
    return Consumer(
        {
            **client_config(bootstrap_servers, settings),
            "group.id": group,
            "enable.auto.commit": False,
            **(config or {}),
        }
    )


def producer(
    bootstrap_servers: str,
    settings: Mapping[str, object] | None = None,
    config: Mapping[str, Any] | None = None,
) -> Producer:
    """A producer whose every record is confirmed by all in-sync replicas (``acks=all``) and
    written once per send (idempotent); ``config`` (librdkafka's settings) over that."""
    return Producer(
        {
            **client_config(bootstrap_servers, settings),
            "acks": "all",
            "enable.idempotence": True,
            **(config or {}),
        }
    )


def security_settings(security: Mapping[str, object] | None) -> dict[str, object] | None:
    """librdkafka settings for a Kafka stage's ``security`` block.

    ``None`` when these clients cannot reproduce it: TLS trust and key stores are JKS or
    PKCS#12 files for Spark's Java client, which librdkafka does not read. Callers then
    skip what they would do with the brokers (Spark itself still connects).
    """
    if not security:
        return {}
    protocol = str(security.get("protocol") or "PLAINTEXT")
    if protocol in ("SSL", "SASL_SSL"):
        return None
    settings: dict[str, object] = {"security.protocol": protocol}
    if protocol == "SASL_PLAINTEXT":
        settings |= {
            "sasl.mechanism": security.get("sasl_mechanism"),
            "sasl.username": security.get("username"),
            "sasl.password": security.get("password"),
        }
    return settings


def list_partitions(
    bootstrap_servers: str,
    topics: Iterable[str],
    timeout: float = 10.0,
    settings: Mapping[str, object] | None = None,
) -> list[PartitionInfo]:
    """The partitions of ``topics`` that exist now.

    Raises :class:`BrokerUnreachable` with the brokers' names when no broker
    answers within ``timeout`` seconds. Topics that do not exist yet are left out.
    """
    metadata = _cluster_metadata(bootstrap_servers, settings, timeout)
    found: list[PartitionInfo] = []
    for topic in topics:
        meta = metadata.topics.get(topic)
        if meta is None or meta.error is not None:
            continue
        found.extend(PartitionInfo(topic, p) for p in sorted(meta.partitions))
    return found


def list_topics(
    bootstrap_servers: str, settings: Mapping[str, object] | None = None, timeout: float = 10.0
) -> list[str]:
    """The names of the topics that exist now (internal ones left out)."""
    metadata = _cluster_metadata(bootstrap_servers, settings, timeout)
    return sorted(name for name in metadata.topics if not name.startswith("__"))


def _cluster_metadata(
    bootstrap_servers: str, settings: Mapping[str, object] | None, timeout: float
) -> Any:
    """The brokers' topic metadata; :class:`BrokerUnreachable` when none answers in time."""
    admin = admin_client(bootstrap_servers, settings)
    try:
        return admin.list_topics(timeout=timeout)
    except KafkaException as exc:
        raise BrokerUnreachable(
            f"Kafka broker(s) {bootstrap_servers} unreachable after {timeout:.0f}s: {exc}"
        ) from exc


def check_reachable(
    bootstrap_servers: str, timeout: float = 10.0, settings: Mapping[str, object] | None = None
) -> None:
    """Raise :class:`BrokerUnreachable` unless a broker of ``bootstrap_servers`` answers."""
    list_partitions(bootstrap_servers, [], timeout, settings)


class GroupCommitter:
    """Commits a channel's processed offsets to its consumer group, so Kafka tools show lag.

    It never joins the group: it commits as a standalone (non-member) consumer,
    which Kafka allows while the group has no active members.

    A commit waits for the group's coordinator, and a coordinator broker lost is replaced
    only after the brokers' session (seconds; until the broker is back with one broker). So
    commits run on a thread of their own and :meth:`commit` never waits: the connector's
    loop that calls it also reports its status, and a report held up for the length of an
    outage shows a healthy channel as not reporting. Offsets handed over while a commit is
    under way replace those not sent yet (the newest position is the only one worth
    committing); a failed commit is tried again after :attr:`retry` seconds unless newer
    offsets came meanwhile. :meth:`close` sends what is still pending, waiting at most its
    ``timeout``.
    """

    retry = 1.0

    def __init__(
        self, bootstrap_servers: str, group: str, settings: Mapping[str, object] | None = None
    ) -> None:
        self.group = group
        # librdkafka's own lines (a refused connection every 50 ms while a broker is away)
        # through logging, not straight to the driver's stderr.
        self._consumer = consumer(
            bootstrap_servers, group, settings, {"logger": logging.getLogger("sluice.kafka")}
        )
        self._changed = threading.Condition()
        self._pending: dict[tuple[str, int], int] | None = None
        self._sending = False
        self._closing = False
        self._failing_since: float | None = None
        self._thread = threading.Thread(target=self._run, name=f"commit-{group}", daemon=True)
        self._thread.start()

    def commit(self, offsets: Mapping[tuple[str, int], int]) -> None:
        """Have ``{(topic, partition): next offset to read}`` committed; returns at once."""
        if not offsets:
            return
        with self._changed:
            if self._closing:
                return
            self._pending = dict(offsets)
            self._changed.notify_all()

    def idle(self) -> bool:
        """Nothing pending and no commit under way."""
        with self._changed:
            return self._pending is None and not self._sending

    def close(self, timeout: float = 5.0) -> None:
        """Send what is pending (one try), then close; waits at most ``timeout`` seconds. A
        commit still waiting for a coordinator by then is left to end on its own thread,
        which closes the consumer after it."""
        with self._changed:
            self._closing = True
            self._changed.notify_all()
        self._thread.join(timeout)
        if self._thread.is_alive():
            log.warning(
                "consumer group %s: a commit still waits for its coordinator after %.0f s; "
                "left to end on its own",
                self.group,
                timeout,
            )

    def _run(self) -> None:
        try:
            while (offsets := self._next()) is not None:
                self._send(offsets)
        finally:
            self._consumer.close()

    def _next(self) -> dict[tuple[str, int], int] | None:
        """The offsets to send next; None once closing with nothing left to send."""
        with self._changed:
            while self._pending is None and not self._closing:
                self._changed.wait()
            offsets, self._pending = self._pending, None
            self._sending = offsets is not None
            return offsets

    def _send(self, offsets: dict[tuple[str, int], int]) -> None:
        try:
            self._consumer.commit(
                offsets=[TopicPartition(t, p, o) for (t, p), o in offsets.items()],
                asynchronous=False,
            )
        except KafkaException as exc:
            now = time.monotonic()
            if self._failing_since is None:
                self._failing_since = now
                log.warning("consumer group %s: could not commit offsets: %s", self.group, exc)
            with self._changed:
                self._sending = False
                if self._closing:
                    return  # one try at close
                if self._pending is None:
                    self._pending = offsets
                self._changed.wait(self.retry)
            return
        if self._failing_since is not None:
            log.info(
                "consumer group %s: offsets committed again after %.0f s",
                self.group,
                time.monotonic() - self._failing_since,
            )
            self._failing_since = None
        with self._changed:
            self._sending = False


EARLIEST = "earliest"
LATEST = "latest"


def watermarks(reader: Any, partition: TopicPartition, timeout: float) -> tuple[int, int]:
    """The low and high watermarks of ``partition`` read by the consumer ``reader``. A topic
    just created, or a leader just moved, answers NOT_LEADER_FOR_PARTITION (or
    LEADER_NOT_AVAILABLE) until the client's metadata catches up: those two are asked again
    for up to ``timeout`` seconds; any other error is raised at once."""
    deadline = time.monotonic() + timeout
    while True:
        try:
            low, high = reader.get_watermark_offsets(
                partition, timeout=max(0.5, deadline - time.monotonic())
            )
            return int(low), int(high)
        except KafkaException as exc:
            # (the client raises them with retriable() False: their codes say it)
            error = exc.args[0] if exc.args else None
            code = error.code() if isinstance(error, KafkaError) else None
            if code not in _LEADER_MOVING or time.monotonic() + 0.2 > deadline:
                raise
            time.sleep(0.2)


_LEADER_MOVING = frozenset({KafkaError.NOT_LEADER_FOR_PARTITION, KafkaError.LEADER_NOT_AVAILABLE})


def partition_offsets(
    bootstrap_servers: str,
    partitions: Iterable[PartitionInfo],
    at: str | int,
    *,
    settings: Mapping[str, object] | None = None,
    timeout: float = 10.0,
) -> dict[tuple[str, int], int]:
    """Concrete offsets of ``partitions``: their first (``"earliest"``) or end (``"latest"``)
    offset, or for epoch milliseconds the first record at or after that time (the end when
    there is none, as the Kafka source's ``startingOffsetsByTimestampStrategy=latest``)."""
    wanted = list(partitions)
    if not wanted:
        return {}
    lookup = consumer(bootstrap_servers, "sluice-offset-lookup", settings)
    try:
        ends = {}
        for info in wanted:
            low, high = watermarks(lookup, TopicPartition(info.topic, info.partition), timeout)
            ends[(info.topic, info.partition)] = (low, high)
        if at == EARLIEST:
            return {key: low for key, (low, _) in ends.items()}
        if at == LATEST:
            return {key: high for key, (_, high) in ends.items()}
        found = lookup.offsets_for_times(
            [TopicPartition(info.topic, info.partition, int(at)) for info in wanted],
            timeout=timeout,
        )
        # A partition with no record at or after the time answers -1: start at its end.
        return {
            (tp.topic, tp.partition): tp.offset
            if tp.offset >= 0
            else ends[(tp.topic, tp.partition)][1]
            for tp in found
        }
    except KafkaException as exc:
        raise BrokerUnreachable(f"Kafka broker(s) {bootstrap_servers}: {exc}") from exc
    finally:
        lookup.close()


def group_offsets(
    bootstrap_servers: str,
    group: str,
    *,
    settings: Mapping[str, object] | None = None,
    timeout: float = 10.0,
) -> dict[tuple[str, int], int]:
    """The offsets ``group`` committed (next offset to read), partitions without a commit left
    out. Raises :class:`BrokerUnreachable` when the brokers do not answer within ``timeout``
    seconds: librdkafka goes on asking (:data:`GROUP_LOOKUP_PATIENCE`, for the reason given
    there) with the handle kept alive until it has its answer (:func:`_outlive`); past
    :data:`MAX_UNANSWERED` such handles, no new one is made until some are answered."""
    if unanswered() >= MAX_UNANSWERED:
        raise BrokerUnreachable(
            f"could not read the offsets of consumer group {group!r} from {bootstrap_servers}: "
            f"{MAX_UNANSWERED} earlier questions to Kafka are still unanswered"
        )
    admin = admin_client(bootstrap_servers, settings)
    futures = admin.list_consumer_group_offsets(
        [ConsumerGroupTopicPartitions(group)], request_timeout=GROUP_LOOKUP_PATIENCE
    )
    try:
        answer = futures[group].result(timeout=timeout)
    except (KafkaException, TimeoutError) as exc:
        _outlive(admin, futures.values())
        raise BrokerUnreachable(
            f"could not read the offsets of consumer group {group!r} from {bootstrap_servers}: "
            f"{exc}"
        ) from exc
    return {
        (tp.topic, tp.partition): tp.offset
        for tp in answer.topic_partitions or []
        if tp.offset >= 0 and tp.error is None
    }


def ensure_topic(
    bootstrap_servers: str,
    topic: str,
    *,
    partitions: int,
    replication_factor: int,
    min_insync_replicas: int = 1,
    config: Mapping[str, str] | None = None,
    timeout: float = 10.0,
) -> bool:
    """Create ``topic`` unless it exists; True when this call created it (see
    :func:`create_topic`)."""
    return create_topic(
        bootstrap_servers,
        topic,
        partitions=partitions,
        replication=TopicReplication(replication_factor, min_insync_replicas),
        config=config,
        timeout=timeout,
    )


def create_topic(
    bootstrap_servers: str,
    topic: str,
    *,
    partitions: int,
    replication: TopicReplication,
    config: Mapping[str, str] | None = None,
    settings: Mapping[str, object] | None = None,
    timeout: float = 10.0,
) -> bool:
    """Create ``topic`` unless it exists, replicated as ``replication`` says, with ``config``
    (topic settings) over that; True when this call created it, False when it existed (its
    settings then left as they are).

    Idempotent. Raises :class:`BrokerUnreachable` when the brokers do not answer, and
    :class:`~runtime_adapter.base.RuntimeUnavailable` (Kafka's refusal chained) when Kafka
    refuses the topic for another reason (too few brokers for the replication factor, …).
    """
    admin = admin_client(bootstrap_servers, settings, auto_create_topics=False)
    new = NewTopic(
        topic,
        num_partitions=partitions,
        replication_factor=replication.factor,
        config={**replication.topic_config(), **(config or {})},
    )
    future = admin.create_topics([new], request_timeout=timeout)[topic]
    return _admin_done(future, bootstrap_servers, timeout, already=KafkaError.TOPIC_ALREADY_EXISTS)


def _admin_done(
    future: Any, bootstrap_servers: str, timeout: float, *, already: int | None = None
) -> bool:
    """Wait for an admin request's ``future``: True when done, False when Kafka answered
    ``already`` (the topic exists, is gone…: nothing to do); :class:`BrokerUnreachable` when
    the brokers do not answer, :class:`~runtime_adapter.base.RuntimeUnavailable` when Kafka
    refuses."""
    try:
        future.result(timeout=timeout)
    except KafkaException as exc:
        error = exc.args[0] if exc.args else None
        if isinstance(error, KafkaError) and error.code() == already:
            return False
        if isinstance(error, KafkaError) and error.code() in _UNREACHABLE_CODES:
            raise BrokerUnreachable(
                f"Kafka broker(s) {bootstrap_servers} unreachable after {timeout:.0f}s: {exc}"
            ) from exc
        raise RuntimeUnavailable(str(exc)) from exc
    except TimeoutError as exc:  # concurrent.futures.TimeoutError is TimeoutError (3.11+)
        raise BrokerUnreachable(
            f"Kafka broker(s) {bootstrap_servers} unreachable after {timeout:.0f}s"
        ) from exc
    return True


def delete_topic(bootstrap_servers: str, topic: str, *, timeout: float = 10.0) -> bool:
    """Delete ``topic`` and every record in it; True when it existed.

    Raises :class:`BrokerUnreachable` when the brokers do not answer and
    :class:`~runtime_adapter.base.RuntimeUnavailable` when Kafka refuses.
    """
    admin = admin_client(bootstrap_servers)
    future = admin.delete_topics([topic], request_timeout=timeout, operation_timeout=timeout)[topic]
    gone = KafkaError.UNKNOWN_TOPIC_OR_PART
    if not _admin_done(future, bootstrap_servers, timeout, already=gone):
        return False
    # Deleted once the brokers no longer list it: a topic created under its name after this
    # returns is a new, empty one (not the old one, finishing its deletion under it).
    deadline = time.monotonic() + timeout
    while topic in _cluster_metadata(bootstrap_servers, None, timeout).topics:
        if time.monotonic() > deadline:
            raise RuntimeUnavailable(f"topic {topic} still listed {timeout:.0f}s after deletion")
        time.sleep(0.1)
    return True


def set_topic_retention(
    bootstrap_servers: str, topic: str, retention_ms: int | None, *, timeout: float = 10.0
) -> None:
    """Set ``topic``'s ``retention.ms`` to ``retention_ms``, or with ``None`` remove the topic's
    own value (the broker's default applies again). Other settings of the topic are kept.

    Raises :class:`BrokerUnreachable` when the brokers do not answer and
    :class:`~runtime_adapter.base.RuntimeUnavailable` when Kafka refuses the change.
    """
    entry = ConfigEntry(
        "retention.ms",
        None if retention_ms is None else str(retention_ms),
        incremental_operation=(
            AlterConfigOpType.DELETE if retention_ms is None else AlterConfigOpType.SET
        ),
    )
    resource = ConfigResource(ResourceType.TOPIC, topic, incremental_configs=[entry])
    admin = admin_client(bootstrap_servers)
    future = admin.incremental_alter_configs([resource], request_timeout=timeout)[resource]
    _admin_done(future, bootstrap_servers, timeout)


_UNREACHABLE_CODES = (
    KafkaError._TRANSPORT,
    KafkaError._TIMED_OUT,
    KafkaError._ALL_BROKERS_DOWN,
    KafkaError.REQUEST_TIMED_OUT,
)


class DurableProducer:
    """Writes records and waits for Kafka to confirm each one (acks=all, idempotent).

    One instance is shared by every thread of a process (confluent-kafka producers are
    thread-safe); each :meth:`produce` call waits for its own delivery reports only.
    """

    def __init__(self, bootstrap_servers: str, delivery_timeout: float = 10.0) -> None:
        self.delivery_timeout = delivery_timeout
        # Kafka gives up on a record after message.timeout.ms, so every record gets a report.
        self._producer = producer(
            bootstrap_servers,
            config={"linger.ms": 5, "message.timeout.ms": int(delivery_timeout * 1000)},
        )

    def produce(
        self,
        topic: str,
        records: list[tuple[str, bytes]] | list[tuple[str, bytes | None]],
        *,
        partitions: Sequence[int] | None = None,
    ) -> list[str | None]:
        """Write ``(key, value)`` records to ``topic``; one answer per record, in order.

        A ``None`` value is a tombstone (a compacted topic forgets the key);
        ``partitions[i]`` is record ``i``'s partition (unset: the producer's partitioner).
        ``None`` as an answer means Kafka confirmed the record (written to every in-sync
        replica); a string says why it was not confirmed: refused, timed out, or no report in
        time. An unconfirmed record may still have been written (a lost acknowledgement).
        """
        outcome: list[str | None] = ["no delivery report from Kafka"] * len(records)
        pending = set(range(len(records)))
        lock = threading.Lock()

        def reporter(index: int) -> Callable[[KafkaError | None, object], None]:
            def on_delivery(error: KafkaError | None, _message: object) -> None:
                with lock:
                    outcome[index] = None if error is None else f"Kafka refused it: {error.str()}"
                    pending.discard(index)

            return on_delivery

        for index, (key, value) in enumerate(records):
            try:
                if partitions is None:
                    self._producer.produce(topic, value, key, on_delivery=reporter(index))
                else:
                    self._producer.produce(
                        topic, value, key, partition=partitions[index], on_delivery=reporter(index)
                    )
            except (BufferError, KafkaException) as exc:
                with lock:
                    outcome[index] = f"not sent to Kafka: {exc}"
                    pending.discard(index)
            self._producer.poll(0)
        deadline = time.monotonic() + self.delivery_timeout + 2.0
        while time.monotonic() < deadline:
            with lock:
                if not pending:
                    break
            self._producer.poll(0.05)
        with lock:
            return list(outcome)

    def close(self, timeout: float = 5.0) -> None:
        self._producer.flush(timeout)


@dataclass(frozen=True)
class TopicDescription:
    """What the brokers say of one topic: its partition count and its settings."""

    topic: str
    partitions: int
    config: dict[str, str]


def describe_topic(
    bootstrap_servers: str, topic: str, *, timeout: float = 10.0
) -> TopicDescription | None:
    """``topic``'s partition count and effective settings; ``None`` when it does not exist.

    Raises :class:`BrokerUnreachable` when the brokers do not answer.
    """
    metadata = _cluster_metadata(bootstrap_servers, None, timeout)
    meta = metadata.topics.get(topic)
    if meta is None or meta.error is not None:
        return None
    admin = AdminClient(client_config(bootstrap_servers))
    resource = ConfigResource(ResourceType.TOPIC, topic)
    try:
        entries = admin.describe_configs([resource], request_timeout=timeout)[resource].result(
            timeout=timeout
        )
    except KafkaException as exc:
        error = exc.args[0] if exc.args else None
        if isinstance(error, KafkaError) and error.code() == KafkaError.UNKNOWN_TOPIC_OR_PART:
            # Just created: the broker that answered for its settings has not learnt of it
            # yet (a cluster of several brokers). Not there yet, as for the metadata.
            return None
        raise BrokerUnreachable(
            f"could not read the settings of topic {topic!r} from {bootstrap_servers}: {exc}"
        ) from exc
    except TimeoutError as exc:
        raise BrokerUnreachable(
            f"could not read the settings of topic {topic!r} from {bootstrap_servers}: {exc}"
        ) from exc
    config = {name: str(entry.value) for name, entry in entries.items() if entry.value is not None}
    return TopicDescription(topic, len(meta.partitions), config)


# -- the runtime group's clients (runtime_adapter.group) ------------------------------------


_LOOKUPS: dict[tuple[int, str, str], tuple[AdminClient, Any]] = {}
_LOOKUPS_LOCK = threading.Lock()


def group_members(bootstrap_servers: str, group_id: str, *, timeout: float = 2.0) -> set[str]:
    """The client ids of the members of consumer group ``group_id`` now, as its coordinator
    says (empty for a group with no member). Raises :class:`BrokerUnreachable` when no
    answer comes within ``timeout``: the question then stays asked (see
    :data:`GROUP_LOOKUP_PATIENCE`), and a later call waits for its answer instead of asking
    again; an answer already in when a call comes is stale and asked anew."""
    key = (os.getpid(), bootstrap_servers, group_id)
    with _LOOKUPS_LOCK:
        pending = _LOOKUPS.get(key)
        if pending is None or pending[1].done():
            admin = shared_admin(bootstrap_servers)
            future = admin.describe_consumer_groups(
                [group_id], request_timeout=GROUP_LOOKUP_PATIENCE
            )[group_id]
            pending = _LOOKUPS[key] = (admin, future)
    admin, future = pending
    try:
        description = future.result(timeout=timeout)
    except TimeoutError as exc:
        raise BrokerUnreachable(
            f"consumer group {group_id!r} on {bootstrap_servers}: no answer within {timeout:g} s "
            "(still asked)"
        ) from exc
    except KafkaException as exc:
        retire_shared_admin(bootstrap_servers, admin, [future])
        raise BrokerUnreachable(
            f"cannot describe consumer group {group_id!r} on {bootstrap_servers}: {exc}"
        ) from exc
    return {member.client_id for member in description.members}


OFFSETS_TOPIC = "__consumer_offsets"


def group_partition(group_id: str, partitions: int) -> int:
    """The partition of ``__consumer_offsets`` whose leader coordinates ``group_id``: Kafka's
    ``Utils.abs(groupId.hashCode()) % partitions``, with Java's ``String.hashCode`` (over UTF-16
    code units, in 32-bit two's complement) and ``abs(Integer.MIN_VALUE) = 0``."""
    if partitions < 1:
        raise ValueError(f"{OFFSETS_TOPIC} must have a partition, not {partitions}")
    units = group_id.encode("utf-16-be")
    value = 0
    for i in range(0, len(units), 2):
        value = (31 * value + int.from_bytes(units[i : i + 2], "big")) & 0xFFFFFFFF
    signed = value - (1 << 32) if value & 0x80000000 else value
    return (0 if signed == -(1 << 31) else abs(signed)) % partitions


@dataclass(frozen=True)
class CoordinatorProbe:
    """What one look at the runtime group's coordinator found.

    ``leader`` is the broker the cluster's metadata names as leader of the group's
    ``__consumer_offsets`` partition (``None``: the partition has no leader); ``refused`` is
    true when a TCP connection to that broker's listener was refused: no broker process
    listens there, so it coordinates nothing. ``vacant`` holds when either says the group has
    no live coordinator."""

    leader: int | None
    address: str
    refused: bool

    @property
    def vacant(self) -> bool:
        return self.leader is None or self.refused


def probe_group_coordinator(
    admin: AdminClient, group_id: str, *, timeout: float = 1.0
) -> CoordinatorProbe | None:
    """Ask a broker (any that answers through ``admin``) who leads ``group_id``'s partition of
    ``__consumer_offsets``, then try a TCP connection to that leader's listener. ``None``
    when no broker answered, or the answer named a leader it gave no address for: nothing is
    known then. A connection that times out or fails otherwise than by a refusal is not a
    refusal (a cut network drops packets; only a host with no process on the port refuses)."""
    try:
        metadata = admin.list_topics(topic=OFFSETS_TOPIC, timeout=timeout)
    except KafkaException:
        return None
    topic = metadata.topics.get(OFFSETS_TOPIC)
    if topic is None or topic.error is not None or not topic.partitions:
        return None
    partition = topic.partitions.get(group_partition(group_id, len(topic.partitions)))
    if partition is None:
        return None
    if partition.leader < 0:
        return CoordinatorProbe(None, "", refused=False)
    broker = metadata.brokers.get(partition.leader)
    if broker is None:
        return None
    address = f"{broker.host}:{broker.port}"
    try:
        with socket.create_connection((broker.host, broker.port), timeout=timeout):
            refused = False
    except ConnectionRefusedError:
        refused = True
    except OSError:
        refused = False
    return CoordinatorProbe(partition.leader, address, refused)


@dataclass(frozen=True)
class FailoverWait:
    """How long a dead broker's partitions wait before another broker leads them (seconds).

    ``broker_session``: the controller's wait for a silent broker
    (``broker.session.timeout.ms``). ``controller_election``: when the brokers are
    controllers too (KRaft's combined mode), the dead broker may have been the active
    controller, and a new one is elected first: the followers wait
    ``controller.quorum.fetch.timeout.ms``, then ``controller.quorum.election.timeout.ms`` at
    most; the new controller then waits the broker session from its own start. 0 with
    dedicated controllers."""

    broker_session: float
    controller_election: float = 0.0

    @property
    def total(self) -> float:
        return self.broker_session + self.controller_election


def failover_wait(admin: AdminClient, *, timeout: float = 5.0) -> FailoverWait | None:
    """The cluster's :class:`FailoverWait`, as one broker reports its settings; ``None`` when
    no broker answers or it does not report ``broker.session.timeout.ms`` (a broker that is
    no controller may not)."""
    try:
        metadata = admin.list_topics(timeout=timeout)
        if not metadata.brokers:
            return None
        resource = ConfigResource(ResourceType.BROKER, str(min(metadata.brokers)))
        entries = admin.describe_configs([resource], request_timeout=timeout)[resource].result(
            timeout=timeout
        )
    except (KafkaException, TimeoutError):
        return None

    def seconds(name: str) -> float | None:
        entry = entries.get(name)
        try:
            return int(entry.value) / 1000 if entry is not None and entry.value else None
        except ValueError:
            return None

    session = seconds("broker.session.timeout.ms")
    if session is None:
        return None
    roles = entries.get("process.roles")
    if roles is None or "controller" not in (roles.value or ""):
        return FailoverWait(session)
    fetch = seconds("controller.quorum.fetch.timeout.ms") or 2.0  # Kafka's defaults
    election = seconds("controller.quorum.election.timeout.ms") or 1.0
    return FailoverWait(session, fetch + election)


def group_member_consumer(
    bootstrap_servers: str,
    group_id: str,
    *,
    client_id: str,
    session_timeout: float,
    heartbeat_interval: float,
    max_poll_interval: float,
    stats_interval: float,
    on_stats: Callable[[str], None],
    on_error: Callable[[KafkaError], None] | None = None,
) -> Consumer:
    """A member of the runtime's group (:mod:`runtime_adapter.group.member`).

    The classic protocol with ``cooperative-sticky`` assignment: a member lets go only of the
    slots that move, after its revoke callback returned. No offsets are committed by the
    consumer itself (a slot is always read from its beginning); partition EOF events tell
    when a gained slot has been read to its end. ``on_stats`` receives librdkafka's
    statistics (JSON) every ``stats_interval`` seconds, from :meth:`Consumer.poll`.
    """
    settings: dict[str, Any] = {
        **client_config(bootstrap_servers),
        "group.id": group_id,
        "client.id": client_id,
        "partition.assignment.strategy": "cooperative-sticky",
        "session.timeout.ms": int(session_timeout * 1000),
        "heartbeat.interval.ms": int(heartbeat_interval * 1000),
        "max.poll.interval.ms": int(max_poll_interval * 1000),
        "statistics.interval.ms": int(stats_interval * 1000),
        "stats_cb": on_stats,
        "enable.auto.commit": False,
        "enable.auto.offset.store": False,
        "enable.partition.eof": True,
        "auto.offset.reset": "earliest",
        "isolation.level": "read_committed",
        # fetch.wait.max.ms stays librdkafka's 500 ms: at 100 ms a gained slot was read 1 s
        # sooner after a kill, but 20 idle members doubled the brokers' CPU (make bench-group).
        # A lost coordinator is found again quickly: the self-fence counts on fresh contact.
        "reconnect.backoff.ms": 100,
        "reconnect.backoff.max.ms": 1000,
        # librdkafka's own lines (every refused connection while cut off) through logging.
        "logger": logging.getLogger("sluice.kafka"),
    }
    if on_error is not None:
        settings["error_cb"] = on_error
    return Consumer(settings)


def topic_reader_consumer(
    bootstrap_servers: str, *, client_id: str, fetch_wait: float | None = None
) -> Consumer:
    """A consumer that joins no group: it reads the partitions it is ``assign``-ed, committed
    transactions only, with partition EOF events (the runtime's status topic, a console's
    view of the config topic). ``fetch_wait``: the longest a broker holds a fetch that found
    nothing new (``fetch.wait.max.ms``; librdkafka's 0.5 s by default)."""
    extra: dict[str, object] = {}
    if fetch_wait is not None:
        extra["fetch.wait.max.ms"] = int(fetch_wait * 1000)
    return Consumer(
        {
            **client_config(bootstrap_servers),
            **extra,
            # librdkafka wants a group id even for assign(); nothing is ever committed to it.
            "group.id": f"{client_id}-reader",
            "client.id": client_id,
            "enable.auto.commit": False,
            "enable.auto.offset.store": False,
            "enable.partition.eof": True,
            "auto.offset.reset": "earliest",
            "isolation.level": "read_committed",
        }
    )


def transactional_producer(
    bootstrap_servers: str, transactional_id: str, *, transaction_timeout: float
) -> Producer:
    """A transactional producer (acks=all, idempotent) under ``transactional_id``; a newer
    producer with the same id fences this one when it calls ``init_transactions``."""
    return Producer(
        {
            **client_config(bootstrap_servers),
            "transactional.id": transactional_id,
            "transaction.timeout.ms": int(transaction_timeout * 1000),
            "enable.idempotence": True,
            "acks": "all",
            "linger.ms": 0,
        }
    )
