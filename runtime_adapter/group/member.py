"""A runtime worker's membership of the runtime's group: which slots it owns, and when to stop.

:class:`GroupMember` joins the group on the config topic (classic protocol,
``cooperative-sticky``), reads the desired state of exactly the slots it is assigned, and
tells its :class:`SlotListener`:

* ``slots_assigned`` as soon as slots are gained (their desired state is still being read),
* ``slot_ready`` once a gained slot has been read to its end (its connectors to run),
* ``desired_changed`` for every later change in a ready slot,
* ``stop_slots`` when slots must stop: revoked (the member lets go of them only after the
  call returned), lost (the coordinator already gave them away: stop at once), fenced (no
  answer from the coordinator for ``session timeout - fence margin`` seconds: stop before
  the session could expire, then rejoin: the slots the new generation assigns, kept ones
  too, are read again and reported ready anew), or closed.

While the coordinator is silent, a third thread asks the cluster whether the group has a live
coordinator at all (:func:`~runtime_adapter.kafka.probe_group_coordinator`); while it has
none (its broker was killed and no other has taken over yet), the fence waits, up to
``coordinator_ride_out`` seconds longer (:mod:`runtime_adapter.group.fence`).

Every callback runs on the member's poll thread but ``stop_slots`` for a fence, which runs on
its watchdog thread, possibly while the poll thread is inside another callback (a revoke whose
stop takes longer than the fence window): the listener must be thread-safe. ``stop_slots``
must return only once the slots' channels are stopped, and may be called again for slots
already stopped. :meth:`GroupMember.ownership` is what a status write is fenced with
(:mod:`runtime_adapter.group.status`).
"""

from __future__ import annotations

import logging
import threading
import time
from collections import deque
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Protocol

from confluent_kafka import OFFSET_BEGINNING, Consumer, KafkaError, Message, TopicPartition

from runtime_adapter.base import Deployment, RuntimeUnavailable
from runtime_adapter.group.desired import DesiredSlots
from runtime_adapter.group.fence import CoordinatorContact, parse_group_metadata
from runtime_adapter.group.settings import GroupConfig
from runtime_adapter.kafka import (
    CoordinatorProbe,
    admin_client,
    group_member_consumer,
    probe_group_coordinator,
)

log = logging.getLogger("sluice.group")

PROBE_EVERY = 0.5
"""Seconds between two looks at the cluster while the coordinator is silent."""

Probe = Callable[[], CoordinatorProbe | None]


class StopReason(StrEnum):
    REVOKED = "revoked"
    """The coordinator moves the slots to another member; they are released after the stop."""
    LOST = "lost"
    """The member was expelled (its session expired): someone else may own them already."""
    FENCED = "fenced"
    """No answer from the coordinator for too long: stopped before the session could expire."""
    CLOSED = "closed"
    """The member leaves the group (a drain, a shutdown)."""


class SlotListener(Protocol):
    """What a runtime worker does with the slots its member gains and loses."""

    def slots_assigned(self, slots: frozenset[int]) -> None:
        """Slots gained; their connectors follow in :meth:`slot_ready`."""

    def slot_ready(self, slot: int, deployments: Mapping[str, Deployment]) -> None:
        """A gained slot read to its end: ``deployments`` is its whole desired state."""

    def desired_changed(self, slot: int, connector_id: str, deployment: Deployment | None) -> None:
        """A connector of a ready slot changed (``None``: deleted)."""

    def stop_slots(self, slots: frozenset[int], reason: StopReason) -> None:
        """Stop every channel of ``slots``; return only once they are stopped. Idempotent.

        It must not fail: a channel that does not stop in time is stopped by force (its
        driver killed). Raising is logged and the slots are released all the same."""


class NotOwner(RuntimeUnavailable):
    """This member owns no such slot now (never had it, let go of it, lost or fenced)."""


@dataclass(frozen=True)
class Ownership:
    """A snapshot of what a member owns, for one fenced status write.

    ``metadata`` is librdkafka's consumer group metadata: the broker accepts a transaction
    that commits offsets with it only while ``member_id`` is a member of ``generation``.
    """

    member_id: str
    generation: int
    slots: frozenset[int]
    positions: Mapping[int, int]
    metadata: bytes


@dataclass(frozen=True)
class MemberEvent:
    """One step of a member's life, on this host's monotonic clock."""

    at: float
    kind: str
    slots: frozenset[int] = frozenset()
    detail: str = ""


@dataclass
class _State:
    owned: set[int] = field(default_factory=set)
    stopped: set[int] = field(default_factory=set)
    fenced: bool = False
    closing: bool = False
    rejoin: bool = False
    metadata: bytes | None = None
    """The consumer group metadata of the latest assignment. Read on the poll thread only:
    librdkafka's call blocks while another thread polls."""


def client_id_of(worker_id: str) -> str:
    """The Kafka client id of runtime worker ``worker_id``'s member: how the group's
    coordinator names it (:func:`runtime_adapter.kafka.group_members`)."""
    return f"sluice-worker-{worker_id}"


class GroupMember:
    """One runtime worker's member of the runtime group (see the module's description).

    :meth:`start` joins in the background; :meth:`close` leaves (revoking every slot
    through ``stop_slots`` first). ``clock`` is :func:`time.monotonic` but in tests;
    ``probe`` is :func:`~runtime_adapter.kafka.probe_group_coordinator` on an admin client of
    the member's own but in tests.
    """

    def __init__(
        self,
        config: GroupConfig,
        worker_id: str,
        listener: SlotListener,
        *,
        clock: Callable[[], float] = time.monotonic,
        probe: Probe | None = None,
    ) -> None:
        self.config = config
        self.worker_id = worker_id
        self._listener = listener
        self._clock = clock
        self._lock = threading.Lock()
        self._state = _State()
        self._desired = DesiredSlots()
        self._contact = CoordinatorContact(clock(), config.coordinator_ride_out)
        self._probe = probe
        self._vacancy_noted = float("-inf")
        self._stop = threading.Event()
        self._consumer: Consumer | None = None
        self._threads: list[threading.Thread] = []
        self.events: deque[MemberEvent] = deque(maxlen=10_000)
        """What happened (assigned, ready, revoked, lost, fenced, rejoining, closed)."""

    # -- the public face ----------------------------------------------------------------

    def start(self) -> None:
        """Create the consumer, join the group and run the poll loop and the watchdog."""
        self._consumer = group_member_consumer(
            self.config.bootstrap,
            self.config.group_id,
            client_id=client_id_of(self.worker_id),
            session_timeout=self.config.session_timeout,
            heartbeat_interval=self.config.heartbeat_interval,
            max_poll_interval=self.config.max_poll_interval,
            stats_interval=self.config.stats_interval,
            on_stats=self._contact.observe,
            on_error=self._on_error,
        )
        self._subscribe()
        if self._probe is None and self.config.coordinator_ride_out > 0:
            admin = admin_client(self.config.bootstrap, auto_create_topics=False)
            group_id = self.config.group_id
            self._probe = lambda: probe_group_coordinator(admin, group_id)
        threads = [(self._run, "member"), (self._watch, "fence")]
        if self._probe is not None:
            threads.append((self._look_for_coordinator, "probe"))
        for target, name in threads:
            thread = threading.Thread(target=target, name=f"group-{name}", daemon=True)
            thread.start()
            self._threads.append(thread)

    def close(self, timeout: float = 30.0) -> None:
        """Leave the group: every owned slot is stopped (``CLOSED``) and released."""
        with self._lock:
            self._state.closing = True
        self._stop.set()
        for thread in self._threads:
            thread.join(timeout)

    def owned(self) -> frozenset[int]:
        """The slots this member owns and has not been fenced from."""
        with self._lock:
            return frozenset() if self._state.fenced else frozenset(self._state.owned)

    @property
    def fenced(self) -> bool:
        with self._lock:
            return self._state.fenced

    def ownership(self) -> Ownership:
        """What this member owns now, with the group metadata a status write is fenced with.

        Raises :class:`NotOwner` when it owns nothing, is fenced, or has not joined yet.
        """
        with self._lock:
            raw = self._state.metadata
            if raw is None or self._state.fenced or not self._state.owned:
                raise NotOwner(f"worker {self.worker_id} owns no slot now")
            slots = frozenset(self._state.owned - self._state.stopped)
            positions = {s: p for s, p in self._desired.positions.items() if s in slots}
        identity = parse_group_metadata(raw)
        return Ownership(identity.member_id, identity.generation, slots, positions, raw)

    def seconds_since_coordinator(self) -> float:
        """Seconds since the coordinator last answered (monotonic)."""
        return self._contact.unanswered(self._clock())

    # -- the poll loop (the member's own thread) -------------------------------------------

    def _subscribe(self) -> None:
        assert self._consumer is not None
        self._consumer.subscribe(
            [self.config.config_topic],
            on_assign=self._on_assign,
            on_revoke=self._on_revoke,
            on_lost=self._on_lost,
        )

    def _run(self) -> None:
        consumer = self._consumer
        assert consumer is not None
        try:
            while not self._stop.is_set():
                try:
                    self._poll_once(consumer)
                except Exception:
                    # A listener's or Kafka's error never ends membership: the loop goes on
                    # (and a loop that cannot poll any more fences itself, by silence).
                    log.exception("runtime group member %s: poll loop error", self.worker_id)
                    self._stop.wait(0.5)
        finally:
            consumer.close()  # revokes what is left (stop_slots CLOSED), then leaves
            self._record("closed")

    def _poll_once(self, consumer: Consumer) -> None:
        with self._lock:
            rejoin, self._state.rejoin = self._state.rejoin, False
        if rejoin:
            self._record("rejoining")
            consumer.unsubscribe()
            self._subscribe()
        message = consumer.poll(0.1)
        if message is not None:
            self._take(message)

    def _take(self, message: Message) -> None:
        error = message.error()
        slot = message.partition()
        if error is not None:
            if error.code() == KafkaError._PARTITION_EOF and slot is not None:
                deployments = self._desired.caught_up(slot)
                if deployments is not None:
                    self._record("ready", frozenset({slot}), f"{len(deployments)} connector(s)")
                    self._listener.slot_ready(slot, deployments)
            else:
                log.warning("runtime group member %s: %s", self.worker_id, error.str())
            return
        key, offset = message.key(), message.offset()
        if slot is None or key is None or offset is None:
            return
        change = self._desired.apply(slot, key.decode(), message.value(), offset)
        if change is not None:
            self._listener.desired_changed(change.slot, change.connector_id, change.deployment)

    def _on_assign(self, consumer: Consumer, partitions: list[TopicPartition]) -> None:
        gained = frozenset(p.partition for p in partitions)
        self._contact.heard(self._clock())  # the SyncGroup answer that brought them
        kept: frozenset[int] = frozenset()
        still = {p.partition for p in consumer.assignment()}  # what the client holds now
        metadata = consumer.consumer_group_metadata()  # this generation's, known by now
        generation = parse_group_metadata(metadata).generation
        with self._lock:
            if self._state.fenced:  # the first assignment after rejoining
                # Slots the client kept through the rejoin were stopped by the fence: this
                # generation confirms them, so they are read again and run anew, as gained.
                kept = frozenset(self._state.stopped & self._state.owned & still)
                self._state.fenced = False
                self._state.stopped.clear()
            # The slots, the generation their writes are fenced with and the step that says
            # so change together: no reader sees a slot owned before its assignment is noted,
            # nor owned under the previous generation's metadata.
            self._state.owned |= gained
            self._state.stopped -= gained
            self._state.metadata = metadata
            self._record("assigned", gained, f"generation {generation}")
            if kept:
                self._record("kept", kept, "through the rejoin: stopped by the fence, run anew")
        topic = self.config.config_topic
        if kept:  # assigned anew: read from their beginning, their end signalled again
            consumer.incremental_unassign([TopicPartition(topic, slot) for slot in sorted(kept)])
        self._desired.gain(gained | kept)
        consumer.incremental_assign(
            [TopicPartition(p.topic, p.partition, OFFSET_BEGINNING) for p in partitions]
            + [TopicPartition(topic, slot, OFFSET_BEGINNING) for slot in sorted(kept)]
        )
        if gained | kept:
            self._listener.slots_assigned(gained | kept)

    def _on_revoke(self, consumer: Consumer, partitions: list[TopicPartition]) -> None:
        with self._lock:
            reason = StopReason.CLOSED if self._state.closing else StopReason.REVOKED
        self._release(consumer, partitions, reason)

    def _on_lost(self, consumer: Consumer, partitions: list[TopicPartition]) -> None:
        self._release(consumer, partitions, StopReason.LOST)

    def _release(
        self, consumer: Consumer, partitions: list[TopicPartition], reason: StopReason
    ) -> None:
        slots = frozenset(p.partition for p in partitions)
        with self._lock:
            if reason is StopReason.LOST:
                self._state.fenced = True  # no write is fenced with the old generation now
            to_stop = slots - self._state.stopped
        if to_stop:
            self._stop_slots(to_stop, reason)  # before the slots are let go of
        if slots:
            self._record(str(reason), slots)
        with self._lock:
            self._state.owned -= slots
            self._state.stopped -= slots
            if not self._state.owned and reason is StopReason.LOST:
                self._state.fenced = False  # owns nothing: the next assignment is clean
        self._desired.drop(slots)
        consumer.incremental_unassign(partitions)

    def _on_error(self, error: KafkaError) -> None:
        # librdkafka logs every refused connection itself; the self-fence acts on silence.
        level = logging.ERROR if error.fatal() else logging.DEBUG
        log.log(level, "runtime group member %s: Kafka: %s", self.worker_id, error.str())

    # -- the coordinator probe (while the coordinator is silent) --------------------------

    def _look_for_coordinator(self) -> None:
        while not self._stop.wait(PROBE_EVERY):
            self._probe_once()

    def _probe_once(self) -> None:
        """When the coordinator has been silent for half the fence window (two heartbeats at
        least), ask the cluster whether the group has a live coordinator at all."""
        probe, config = self._probe, self.config
        assert probe is not None
        start_after = max(2 * config.heartbeat_interval, config.fence_after / 2)
        with self._lock:
            idle = self._state.fenced or self._state.closing or not self._state.owned
        if idle or self._contact.unanswered(self._clock()) < start_after:
            return
        asked_at = self._clock()
        try:
            found = probe()
        except Exception:
            log.exception("runtime group member %s: coordinator probe failed", self.worker_id)
            return
        if found is None or not found.vacant:
            return
        self._contact.vacated(asked_at)
        if self._vacancy_noted < self._contact.last:  # once per silence
            self._vacancy_noted = self._contact.last
            why = (
                "its partition has no leader"
                if found.leader is None
                else f"broker {found.leader} ({found.address}) refuses connections"
            )
            self._record("coordinator-vacant", detail=why)
            log.warning(
                "runtime group member %s: the group has no live coordinator (%s): its "
                "channels keep running until one takes over (at most %.0f s beyond the fence)",
                self.worker_id,
                why,
                config.coordinator_ride_out,
            )

    # -- the watchdog (the self-fence) ---------------------------------------------------

    def _watch(self) -> None:
        tick = min(0.1, self.config.heartbeat_interval / 4)
        while not self._stop.wait(tick):
            self._fence_if_due()

    def _fence_if_due(self) -> None:
        """Fence (stop every owned slot, then rejoin) once the silence reaches the window."""
        now = self._clock()
        silence = self._contact.silence(now)
        unanswered = self._contact.unanswered(now)
        with self._lock:
            state = self._state
            if state.fenced or state.closing or not state.owned:
                return
            if silence < self.config.fence_after:
                return
            state.fenced = True
            slots = frozenset(state.owned - state.stopped)
            state.stopped |= slots
        self._record("fenced", slots, f"no answer from the coordinator for {unanswered:.1f} s")
        log.warning(
            "runtime group member %s: no answer from the group coordinator for %.1f s "
            "(session %.0f s): stopping the channels of %d slot(s) before it can expire",
            self.worker_id,
            unanswered,
            self.config.session_timeout,
            len(slots),
        )
        self._stop_slots(slots, StopReason.FENCED)
        self._record("fence-stopped", slots)
        with self._lock:
            state.rejoin = True

    def _stop_slots(self, slots: frozenset[int], reason: StopReason) -> None:
        try:
            self._listener.stop_slots(slots, reason)
        except Exception:
            # The contract is to stop, by force if need be; a hook that raised broke it, and
            # holding the slots would stall the whole group's rebalance.
            log.exception(
                "runtime group member %s: the stop hook failed for slots %s (%s); they are "
                "released anyway",
                self.worker_id,
                sorted(slots),
                reason,
            )

    def _record(self, kind: str, slots: frozenset[int] = frozenset(), detail: str = "") -> None:
        self.events.append(MemberEvent(self._clock(), kind, slots, detail))
        log.info("runtime group member %s: %s %s %s", self.worker_id, kind, sorted(slots), detail)
