"""A pass's first step: the runtime's workers, each ALIVE or DEAD by the console's own
observation of its heartbeat (see :mod:`console.services.reconcile`, step 1)."""

from __future__ import annotations

from console.choices import (
    WorkerService,
    WorkerState,
)
from console.models import (
    Worker,
)
from console.services.reconcile.state import (
    PassState,
    _timestamp,
)
from runtime_adapter.base import (
    WorkerInfo,
)


class WorkerSync(PassState):
    """Step 1: the workers."""

    def sync_workers(self, infos: list[WorkerInfo]) -> None:
        known = {worker.worker_id: worker for worker in Worker.objects.all()}
        self.worker_rows = dict(known)
        self.draining = {w for w, worker in known.items() if not worker.in_service}
        self.still_draining = {
            w for w, worker in known.items() if worker.service == WorkerService.DRAINING
        }
        self.members_unknown = self.runtime.membership and all(i.member is None for i in infos)
        for info in infos:
            self.sync_worker(info, known.pop(info.worker_id, None))
        for worker in known.values():  # in the database, not registered with the runtime now
            self.sync_unregistered(worker)

    def silence(self, worker: Worker) -> float:
        """Seconds since the console last saw a new heartbeat of ``worker``, by its own clock
        (0 when its observation was voided: :func:`note_runtime_unreadable`)."""
        seen = worker.heartbeat_seen_at or self.at
        return max((self.at - seen).total_seconds(), 0.0)

    def sync_worker(self, info: WorkerInfo, worker: Worker | None) -> None:
        heartbeat = _timestamp(info.last_heartbeat)
        fresh = worker is None or worker.last_heartbeat != heartbeat
        silence = 0.0 if fresh or worker is None else self.silence(worker)
        if info.member:
            # A member of the runtime's Kafka group: alive, whatever its heartbeats in the
            # store say (a host cut off from Redis alone keeps running its channels; one cut
            # off from Kafka leaves the group, and stops its channels before it does).
            alive = True
        elif self.members_unknown and worker is not None and worker.state != WorkerState.DEAD:
            # The group's coordinator decides who is alive, and Kafka did not say this pass:
            # heartbeats alone (a host cut off from Redis sends none, and runs its channels)
            # end nobody meanwhile. Once it says, a non-member's silence counts as before.
            alive = True
        elif fresh or (worker is not None and worker.state != WorkerState.DEAD):
            alive = silence <= self.session_timeout
        else:
            alive = False  # a DEAD worker is ALIVE again only with a new heartbeat
        if alive:
            state = WorkerState.ALIVE
            self.live.add(info.worker_id)
        else:
            state = WorkerState.DEAD
            self.dead_reasons[info.worker_id] = (
                f"worker {info.worker_id} missed its session timeout"
            )
        seen_at = self.at if fresh or worker is None else worker.heartbeat_seen_at or self.at
        values = {
            "host": info.host,
            "pid": info.pid,
            "started_at": _timestamp(info.started_at),
            "last_heartbeat": heartbeat,
            "heartbeat_seen_at": seen_at,
            "state": state,
        }
        if worker is None:
            worker = Worker(worker_id=info.worker_id, **values)
            self.new_workers.append(worker)
            self.worker_rows[info.worker_id] = worker
            self.worker_event(worker, state, f"registered from {info.host} (pid {info.pid})", "")
            return
        if state != worker.state:
            if state == WorkerState.DEAD:
                reason = (
                    f"missed its session timeout: no new heartbeat for {silence:.1f} s "
                    f"(timeout {self.session_timeout:g} s)"
                )
            else:
                reason = "heartbeats resumed"
            self.worker_event(worker, state, reason)
        self.update_worker(worker, values)

    def sync_unregistered(self, worker: Worker) -> None:
        """A worker the console knows and the runtime does not list: silent. It stays ALIVE
        for the rest of its session timeout (an emptied store loses every registration until
        the workers' next heartbeats), then is DEAD."""
        silence = self.silence(worker)
        if worker.state != WorkerState.DEAD and silence <= self.session_timeout:
            self.live.add(worker.worker_id)
            self.update_worker(worker, {"heartbeat_seen_at": worker.heartbeat_seen_at or self.at})
            return
        self.dead_reasons[worker.worker_id] = (
            f"worker {worker.worker_id} is no longer registered with the runtime"
        )
        if worker.state != WorkerState.DEAD:
            self.worker_event(
                worker,
                WorkerState.DEAD,
                f"no longer registered with the runtime (nothing heard for {silence:.1f} s, "
                f"timeout {self.session_timeout:g} s)",
            )
            self.update_worker(worker, {"state": WorkerState.DEAD})
