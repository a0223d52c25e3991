"""A runtime worker's membership of the runtime's Kafka group, as its liveness and its fence.

The worker joins the group (:class:`~runtime_adapter.group.GroupMember`) and runs channels
only while it is a member: being a member is what keeps it alive to the console, and a
worker that cannot reach the group's coordinator stops every query it runs before its
session could expire on the broker (the self-fence, ``SLUICE_RUNTIME_SESSION_TIMEOUT``
minus ``SLUICE_RUNTIME_FENCE_MARGIN``). The console moves a worker's channels only once it
has left the group, so a channel never has two running owners, whatever happens to Redis.

Who places channels is ``SLUICE_RUNTIME_PLACEMENT``:

* ``console``: the console assigns each channel a worker through the store; the listener
  (:class:`SelfFence`) acts on a lost membership alone (fenced, or lost by the client);
* ``group``: the worker runs exactly the channels of the slots it owns (:class:`SlotOwner`):
  their ids come from the config topic, a slot's channels are stopped before the slot is let
  go of (a revocation waits for their queries to end), and a member that dies or is cut off
  has its slots, and so its channels, given to the others by the coordinator, whether the
  console runs or not.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Mapping
from typing import Protocol

from runtime_adapter.base import Deployment, RuntimeUnavailable
from runtime_adapter.group import (
    GroupConfig,
    GroupMember,
    NotOwner,
    Ownership,
    SlotListener,
    StopReason,
    ensure_runtime_topics,
    warn_of_slow_broker_failover,
)

log = logging.getLogger("sluice.worker")


class SelfFence:
    """The worker's :class:`~runtime_adapter.group.SlotListener`: ``on_fence(why)`` stops
    every query of the worker, by force, when its membership is lost."""

    def __init__(self, on_fence: Callable[[str], None]) -> None:
        self.on_fence = on_fence

    def slots_assigned(self, slots: frozenset[int]) -> None:
        pass  # channels are placed by the console for now

    def slot_ready(self, slot: int, deployments: Mapping[str, Deployment]) -> None:
        pass

    def desired_changed(self, slot: int, connector_id: str, deployment: Deployment | None) -> None:
        pass

    def stop_slots(self, slots: frozenset[int], reason: StopReason) -> None:
        if reason in (StopReason.FENCED, StopReason.LOST):
            self.on_fence(f"its membership of the runtime group was {reason.value}")


class Releaser(Protocol):
    """What a :class:`SlotOwner` asks of its worker."""

    def fence(self, why: str) -> None:
        """Stop every query now, by force (the membership is lost)."""

    def release(self, connector_ids: frozenset[str], why: str) -> None:
        """Stop the queries of ``connector_ids`` and return once none runs here any more."""

    def wake(self) -> None:
        """Act on a change of what it owns now, not at its next pass."""


class SlotOwner:
    """The worker's :class:`~runtime_adapter.group.SlotListener` when the group places
    channels: which connectors the worker owns, by the slots it owns and has read to their
    end (thread-safe: the member's threads write, the worker's loop reads)."""

    def __init__(self, worker: Releaser) -> None:
        self.worker = worker
        self._lock = threading.Lock()
        self._slots: dict[int, dict[str, Deployment]] = {}
        self.losses = 0
        """How many times slots were taken away (revoked, lost, fenced, closed): a pass of the
        worker's loop that began with another count works from a stale view of what it owns."""

    def owned(self) -> frozenset[str]:
        """The connectors of the ready slots this worker owns."""
        with self._lock:
            return frozenset(cid for ids in self._slots.values() for cid in ids)

    def owns(self, connector_id: str) -> bool:
        """Whether ``connector_id`` is in a ready slot this worker owns now."""
        with self._lock:
            return any(connector_id in ids for ids in self._slots.values())

    def slots(self) -> dict[int, frozenset[str]]:
        with self._lock:
            return {slot: frozenset(ids) for slot, ids in self._slots.items()}

    def deployments(self) -> dict[str, Deployment]:
        """The desired state of the connectors of the ready slots this worker owns, as the
        config topic holds it (the worker runs them from it: no Redis on that path)."""
        with self._lock:
            return {cid: d for found in self._slots.values() for cid, d in found.items()}

    def slots_assigned(self, slots: frozenset[int]) -> None:
        pass  # nothing to run before each slot is read to its end

    def slot_ready(self, slot: int, deployments: Mapping[str, Deployment]) -> None:
        with self._lock:
            self._slots[slot] = dict(deployments)
        self.worker.wake()

    def desired_changed(self, slot: int, connector_id: str, deployment: Deployment | None) -> None:
        with self._lock:
            found = self._slots.get(slot)
            if found is None:
                return
            if deployment is None:
                found.pop(connector_id, None)
            else:
                found[connector_id] = deployment
        self.worker.wake()

    def stop_slots(self, slots: frozenset[int], reason: StopReason) -> None:
        with self._lock:
            gone = frozenset(cid for slot in slots for cid in self._slots.pop(slot, ()))
            self.losses += 1
        if reason in (StopReason.FENCED, StopReason.LOST):
            self.worker.fence(f"its membership of the runtime group was {reason.value}")
        elif gone:
            self.worker.release(gone, f"slot(s) {sorted(slots)} {reason.value}")


JOIN_RETRY = 5.0
"""Seconds between two tries to join while Kafka does not answer."""


class Membership:
    """Joins the group in a thread of its own (again and again while Kafka does not answer:
    the worker's loop, and its heartbeats, never wait for it) and says whether the worker is
    a member now (:meth:`live`)."""

    def __init__(self, config: GroupConfig, worker_id: str, listener: SlotListener):
        self.config = config
        self.worker_id = worker_id
        self.listener = listener
        self.member: GroupMember | None = None
        self.stopping = threading.Event()
        self.joiner: threading.Thread | None = None
        self.leaver: threading.Thread | None = None

    def join(self) -> None:
        """Start joining, once (the runtime's topics created if need be, then the member);
        not while a :meth:`leave` is under way."""
        if self.leaver is not None:
            if self.leaver.is_alive():
                return
            self.leaver = None
        if self.joiner is None:
            self.joiner = threading.Thread(target=self._join, name="group-join", daemon=True)
            self.joiner.start()

    def _join(self) -> None:
        while not self.stopping.is_set():
            try:
                ensure_runtime_topics(self.config)
            except RuntimeUnavailable as exc:
                log.warning("cannot join the runtime group yet (trying again): %s", exc)
                self.stopping.wait(JOIN_RETRY)
                continue
            warn_of_slow_broker_failover(self.config)
            member = GroupMember(self.config, self.worker_id, listener=self.listener)
            member.start()
            self.member = member
            log.info("joining runtime group %s", self.config.group_id)
            return

    def ownership(self) -> Ownership:
        """What the worker owns now, for a fenced status write (raises
        :class:`~runtime_adapter.group.NotOwner` when it is not a member)."""
        member = self.member
        if member is None:
            raise NotOwner(f"worker {self.worker_id} has not joined the runtime group")
        return member.ownership()

    def live(self) -> bool:
        """A member now: joined, assigned its share of the slots, not fenced."""
        member = self.member
        return member is not None and not member.fenced and bool(member.owned())

    def joined(self) -> bool:
        """Joined, or joining (:meth:`leave` undoes it)."""
        return self.joiner is not None and self.leaver is None

    def leave(self) -> None:
        """Leave the group in a thread of its own (a drain): every slot is revoked, its
        channels stopped through the listener while the worker's loop goes on, then the
        member leaves; :meth:`join` joins again afterwards."""
        if self.leaver is not None or self.joiner is None:
            return
        self.leaver = threading.Thread(target=self._leave, name="group-leave", daemon=True)
        self.leaver.start()

    def _leave(self) -> None:
        log.info("leaving runtime group %s (drained)", self.config.group_id)
        self.close()
        self.stopping.clear()
        self.joiner = None
        log.info("left runtime group %s", self.config.group_id)

    def close(self) -> None:
        self.stopping.set()
        if self.joiner is not None:
            self.joiner.join(timeout=15)
        if self.member is not None:
            self.member.close()
            self.member = None
