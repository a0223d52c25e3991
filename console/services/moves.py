"""Capacity-aware placement when the runtime's group places channels: a real-time channel
whose slot's owner has too few free cores is moved to a slot of a worker that has them.

The group shares slots by count, so a worker runs whatever channels its slots hold. A
real-time query holds one core per source partition; a worker without that many free
reports the connector ``UNASSIGNED`` with ``cores_needed``. The control loop then moves it
(docs/runtime-group.md, "Capacity and placement"), one step per pass, each recorded in
``Connector.move`` before the runtime is asked, so a pass that dies half-way is finished by
the next:

1. **stopping**: a live worker in service whose own record says it has the cores free (its
   ``Worker.capacity``) is chosen, with one of its slots. The runtime's target of the
   connector is set to ``STOPPED`` in the slot it is in: that slot's owner stops it (it
   never started it) and reports ``STOPPED``, a write fenced by its group generation.
2. **relocating**: on that report, the desired state is moved (``relocate``: the old slot's
   tombstone confirmed by Kafka first, then the record in the new slot, with the channel's
   target), then ``Connector.slot`` records the new slot and the move ends. The new slot's
   owner starts it.

So no two workers ever run the channel: the new slot gets it only after the old slot's
owner said, fenced, that it stopped it. A move is given up, its target sent back to the
channel's, when the old slot's owner runs it after all (its cores were freed, or an edit's
deploy got there first), or after :data:`MOVE_PATIENCE` seconds without the report; a
channel stopped meanwhile ends its move where it is.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

from console.choices import TargetState
from console.models import Connector, Worker
from runtime_adapter import states as runtime_states
from runtime_adapter.base import ConnectorStatus, RuntimeAdapter, RuntimeUnavailable
from runtime_adapter.group.slots import slot_of
from runtime_adapter.states import State

logger = logging.getLogger("sluice.moves")

MOVE_PATIENCE = 120.0
"""Seconds a move waits for the old slot's owner to report the connector stopped."""

STOPPING, RELOCATING = "stopping", "relocating"

_RUNS = frozenset({State.RUNNING, State.PAUSED, State.RESTARTING})


@dataclass
class Room:
    """A worker a connector may be moved to, as its own record last described it."""

    worker_id: str
    free: int
    """Cores free: its cores less those its real-time queries hold and moves on the way."""
    slots: tuple[int, ...]
    connectors: int


def rooms_of(
    workers: Iterable[Worker], live: set[str], draining: set[str], moving: Iterable[Connector]
) -> dict[str, Room]:
    """The workers a connector may be moved to: alive, in service, saying their cores and
    owning slots; the cores of the moves already on their way to each are not free."""
    rooms: dict[str, Room] = {}
    for worker in workers:
        capacity: dict[str, Any] = worker.capacity or {}
        slots = tuple(capacity.get("slots") or ())
        if (
            worker.worker_id not in live
            or worker.worker_id in draining
            or capacity.get("draining")
            or not slots
            or not isinstance(capacity.get("cores"), int)
        ):
            continue
        free = capacity["cores"] - int(capacity.get("cores_held") or 0)
        connectors = int(capacity.get("connectors") or 0)
        rooms[worker.worker_id] = Room(worker.worker_id, free, slots, connectors)
    for connector in moving:
        move = connector.move or {}
        room = rooms.get(str(move.get("worker")))
        if room is not None:
            room.free -= int(move.get("cores") or 0)
            room.connectors += 1
    return rooms


def slot_in(room: Room, connector_id: str) -> int:
    """The slot of ``room``'s worker a connector goes to: spread over its slots by id, so a
    later rebalance moves some of them, not all."""
    slots = sorted(room.slots)
    return slots[slot_of(connector_id, len(slots))]


@dataclass
class Outcome:
    """What a move step leaves for the pass: the status to observe (a report the move took
    is not one to show), the reason to show after it, an event to record."""

    status: ConnectorStatus | None
    reason: str | None = None
    event: str | None = None


class Mover:
    """One pass's moves (see the module's docstring)."""

    def __init__(
        self, runtime: RuntimeAdapter, rooms: Callable[[], dict[str, Room]], now: float
    ) -> None:
        self.runtime = runtime
        self._find_rooms = rooms
        self._rooms: dict[str, Room] | None = None
        self.now = now
        self.started = 0
        self.finished = 0

    def step(self, connector: Connector, status: ConnectorStatus | None) -> Outcome:
        if connector.move:
            return self._go_on(connector, status)
        if (
            status is None
            or status.state != State.UNASSIGNED
            or status.cores_needed <= 0
            or connector.channel.target_state != TargetState.RUNNING
        ):
            return Outcome(status)
        return self._begin(connector, status)

    # -- 1. stopping ---------------------------------------------------------------------

    def _begin(self, connector: Connector, status: ConnectorStatus) -> Outcome:
        needed = status.cores_needed
        if self._rooms is None:
            self._rooms = self._find_rooms()  # read once a pass, and only when needed
        fits = [
            r for r in self._rooms.values() if r.worker_id != status.worker_id and r.free >= needed
        ]
        if not fits:
            return Outcome(status, f"{status.reason} (no live worker has {needed} cores free)")
        room = max(fits, key=lambda r: (r.free, -r.connectors, r.worker_id))
        slot = slot_in(room, connector.runtime_id)
        move = {
            "worker": room.worker_id,
            "slot": slot,
            "cores": needed,
            "from": status.worker_id,
            "since": self.now,
            "phase": STOPPING,
        }
        self._record(connector, move=move)
        try:
            self.runtime.set_target_state(connector.runtime_id, runtime_states.TargetState.STOPPED)
        except RuntimeUnavailable as exc:
            self._record(connector, move=None)  # not begun: tried again on the next report
            return Outcome(status, f"{status.reason} (a move could not begin: {exc})")
        room.free -= needed
        room.connectors += 1
        self.started += 1
        text = (
            f"moving to worker {room.worker_id} (slot {slot}, {room.free + needed} cores "
            f"free) for its {needed} cores: worker {status.worker_id} is stopping it"
        )
        return Outcome(status, text, text)

    # -- 2. relocating, or given up ------------------------------------------------------------

    def _go_on(self, connector: Connector, status: ConnectorStatus | None) -> Outcome:
        move = dict(connector.move or {})
        target = connector.channel.target_state
        worker, slot = move.get("worker"), int(move["slot"])
        if move.get("phase") == RELOCATING:
            return self._relocate(connector, move, status)
        if target == TargetState.STOPPED:
            self._record(connector, move=None)  # stopped where it is, as the channel wants
            return Outcome(status, None, f"move to worker {worker} ended: the channel stopped")
        if status is not None and status.state == State.STOPPED:
            return self._relocate(connector, {**move, "phase": RELOCATING}, None)
        if status is not None and status.state in _RUNS:
            self._record(connector, move=None)
            return Outcome(
                status, None, f"move to worker {worker} given up: {status.worker_id} runs it"
            )
        if status is not None and status.state == State.UNASSIGNED:
            # Reported again short of cores (an edit's deploy sent its target back): stop it
            # there again, the move goes on.
            self._set_target(connector, runtime_states.TargetState.STOPPED)
        if self.now - float(move.get("since") or 0.0) > MOVE_PATIENCE:
            self._record(connector, move=None)
            self._set_target(connector, runtime_states.TargetState(str(target)))
            return Outcome(
                status,
                None,
                f"move to worker {worker} given up: worker {move.get('from')} did not report "
                f"it stopped within {MOVE_PATIENCE:.0f} s",
            )
        return Outcome(
            status,
            f"moving to worker {worker} (slot {slot}) for its {move.get('cores')} cores: "
            f"waiting for worker {move.get('from')} to report it stopped",
        )

    def _relocate(
        self, connector: Connector, move: dict[str, Any], status: ConnectorStatus | None
    ) -> Outcome:
        worker, slot = move.get("worker"), int(move["slot"])
        self._record(connector, move=move)
        home = self.runtime.home_slot(connector.runtime_id)
        target = runtime_states.TargetState(str(connector.channel.target_state))
        try:
            moved = self.runtime.relocate(
                connector.runtime_id, None if slot == home else slot, target
            )
        except RuntimeUnavailable as exc:
            return Outcome(status, f"moving to worker {worker} (slot {slot}): {exc}; tried again")
        self._record(connector, move=None, slot=None if slot == home else slot)
        self.finished += 1
        if moved is None:
            return Outcome(status)
        return Outcome(
            None,  # the old slot's STOPPED says nothing of where it runs now
            f"moved to worker {worker}'s slot {slot}: starting there",
            f"moved to worker {worker} (slot {slot}) for its {move.get('cores')} cores",
        )

    def _set_target(self, connector: Connector, target: runtime_states.TargetState) -> None:
        try:
            self.runtime.set_target_state(connector.runtime_id, target)
        except RuntimeUnavailable as exc:
            logger.warning("connector %s: target not sent: %s", connector.runtime_id, exc)

    @staticmethod
    def _record(connector: Connector, **values: Any) -> None:
        """Write the move's step now, apart from the pass's own writes: the runtime is asked
        only once the step it takes is recorded."""
        for name, value in values.items():
            setattr(connector, name, value)
        Connector.objects.filter(pk=connector.pk).update(**values)
