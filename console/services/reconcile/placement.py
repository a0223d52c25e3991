"""A pass's placements: where each hosted connector runs (chosen by the console, or
followed from the runtime's group), draining workers handed over (step 3 of
:mod:`console.services.reconcile`)."""

from __future__ import annotations

from collections import Counter

from console.choices import (
    HOSTED_TARGETS,
    ConnectorState,
    SubjectType,
    WorkerService,
)
from console.models import (
    Connector,
    Worker,
)
from console.services.lifecycle import RECONCILE_ACTOR, lifecycle_event
from console.services.moves import Room, rooms_of
from console.services.reconcile.state import (
    _MAX_REASON,
    PassState,
)


class Placing(PassState):
    """Step 3: placement."""

    def place(self, connectors: list[Connector]) -> None:
        if self.runtime.places:
            self.follow(connectors)
            return
        wanted = [c for c in connectors if c.channel.target_state in HOSTED_TARGETS]
        schedulable = self.live - self.draining
        load = Counter(c.worker_id for c in wanted if c.worker_id in schedulable)
        for connector in wanted:
            previous = connector.worker_id
            if previous in schedulable:
                continue  # sticky
            if previous in self.live and not schedulable:
                continue  # draining, and no worker to take it over: it keeps running there
            runs_on = self.hosted().get(connector.runtime_id)
            if runs_on is not None and runs_on not in schedulable:
                # Still running on a draining worker: stop it there first (released), and
                # place it once no driver runs it (a later pass), never both at once.
                if previous is not None:
                    self.release(connector, previous)
                continue
            if runs_on is not None:
                chosen: str | None = runs_on  # already runs there (a worker put back in service)
            else:
                chosen = min(schedulable, key=lambda w: (load[w], w)) if schedulable else None
            if chosen is None and previous is None:
                continue  # nothing to tell the runtime; observe() marks it UNASSIGNED
            reason = self.placement_reason(previous, chosen, load)
            self.runtime.assign(connector.runtime_id, chosen)
            self.placements += 1
            if chosen is not None:
                load[chosen] += 1
            connector.worker_id = chosen
            self.connector_changed(connector)
            self.set_connector_state(
                connector, ConnectorState.UNASSIGNED, reason, always_record=True
            )

    def follow(self, connectors: list[Connector]) -> None:
        """When the runtime places connectors (its group gives each slot to a worker), record
        the worker that claimed each one; a connector whose worker changed is UNASSIGNED
        until its new worker reports it (the status then says what it is)."""
        takers = self.live - self.draining
        # A draining worker leaves the runtime group (its slots go to the others) only while
        # another worker in service is alive to take them: else its channels stay.
        self.runtime.set_draining(self.draining & self.live if takers else set())
        wanted = [c for c in connectors if c.channel.target_state in HOSTED_TARGETS]
        if not wanted:
            return
        owners = self.runtime.owners([c.runtime_id for c in wanted])
        for connector in wanted:
            owner = owners.get(connector.runtime_id)
            previous = connector.worker_id
            if owner == previous:
                continue
            connector.worker_id = owner
            self.connector_changed(connector)
            self.placements += 1
            if owner is None:
                continue  # not claimed yet: derive_state says no live worker hosts it
            why = self.dead_reasons.get(previous or "", "")
            if previous in self.draining and not why:
                why = f"worker {previous} is draining"
            taken = f"taken over by worker {owner}, the owner of its slot in the runtime group"
            if previous is not None:
                taken = f"{taken}, from worker {previous}"
            reason = f"{why}; {taken}" if why else taken
            self.set_connector_state(
                connector, ConnectorState.UNASSIGNED, reason, always_record=True
            )

    def release(self, connector: Connector, worker_id: str) -> None:
        """Unassign a connector its draining worker still runs: that worker stops the query;
        a later pass places it elsewhere once no driver runs it."""
        self.runtime.assign(connector.runtime_id, None)
        self.placements += 1
        connector.worker_id = None
        self.connector_changed(connector)
        self.set_connector_state(
            connector,
            ConnectorState.UNASSIGNED,
            f"worker {worker_id} is draining: its query stops there, then another worker "
            "resumes it from its checkpoint",
            always_record=True,
        )

    def hosted(self) -> dict[str, str]:
        """Connector id → the live worker one of whose drivers runs its query now, as the
        drivers' heartbeats say (a driver lists a connector from its placement until its query
        has stopped); read once a pass, only when a connector needs placing. A dead worker's
        drivers do not count: they are gone with it."""
        if self._hosted is None:
            hosted: dict[str, str] = {}
            for driver in self.runtime.drivers():
                if driver.worker_id in self.live:
                    hosted.update(dict.fromkeys(driver.connectors, driver.worker_id))
            self._hosted = hosted
        return self._hosted

    def note_drained(self, connectors: list[Connector]) -> None:
        """A DRAINING worker whose channels all left (none assigned, none running there) is
        DRAINED, recorded once; a conditional write, so a concurrent undrain wins."""
        if not self.still_draining:
            return
        assigned = {c.worker_id for c in connectors if c.channel.target_state in HOSTED_TARGETS}
        running = set(self.hosted().values())
        self.drained = sorted(self.still_draining - assigned - running)

    def placement_reason(self, previous: str | None, chosen: str | None, load: Counter) -> str:
        if previous in self.draining and previous not in self.dead_reasons:
            why = f"worker {previous} is draining"
        elif previous:
            why = self.dead_reasons.get(previous, f"worker {previous} is unknown")
        else:
            why = ""
        if chosen is None:
            return f"{why}; no live worker to take over"
        placed = f"assigned to worker {chosen} (least loaded, hosting {load[chosen]})"
        return f"{why}; {placed}" if why else placed

    def save_drained(self) -> None:
        """Mark the workers :meth:`note_drained` found DRAINED, each recorded once; a worker
        put back in service since the pass read it stays in service."""
        for worker_id in self.drained:
            changed = Worker.objects.filter(
                worker_id=worker_id, service=WorkerService.DRAINING
            ).update(service=WorkerService.DRAINED, service_changed_at=self.at)
            if changed:
                self.events.append(
                    lifecycle_event(
                        subject_type=SubjectType.WORKER,
                        subject_id=worker_id,
                        from_state=WorkerService.DRAINING,
                        to_state=WorkerService.DRAINED,
                        actor=RECONCILE_ACTOR,
                        reason="drained: no channel runs on it or is assigned to it any more",
                        at=self.at,
                    )
                )

    def rooms(self) -> dict[str, Room]:
        """The workers a connector may be moved to, with the moves on their way there."""
        moving = Connector.objects.filter(move__isnull=False).only("id", "move")
        return rooms_of(self.worker_rows.values(), self.live, self.draining, moving)

    def show_move(self, connector: Connector, reason: str | None, event: str | None) -> None:
        """A move's word on the connector (:mod:`console.services.moves`): its reason shown,
        its step recorded as an event."""
        if reason is not None:
            self.update_connector(connector, {"status_reason": reason[:_MAX_REASON]})
        if event is not None:
            self.connector_event(connector, connector.state, event[:_MAX_REASON])
