"""Acting on runtime workers: drain one, put it back in service, forget a dead one.

A worker's *service* (:class:`~console.choices.WorkerService`) is the operator's decision,
apart from its liveness (``state``, judged by the control loop from heartbeats):

* **drain** (IN_SERVICE → DRAINING): the worker gets no new placements (the control loop,
  a start, a replay) and the control loop hands each of its channels to another live worker
  in service: the query is stopped on the draining worker first, then placed on the least
  loaded other worker, which resumes it from its checkpoint, so no event is lost and two
  queries never share a checkpoint (:mod:`console.services.reconcile`). With no other
  worker in service its channels keep running where they are until one joins. Once none is
  left the control loop marks the worker DRAINED; it can then be stopped.
* **undrain** (DRAINING or DRAINED → IN_SERVICE): it takes new placements again. Channels
  that moved stay where they are (placement is sticky); one still running there stays.
* **forget**: a DEAD worker's registration, its drivers' and its database row are dropped
  (a worker that starts again with the same id registers anew). A live worker is refused:
  it would register again at its next heartbeat.

Each call records a worker lifecycle event (who, from, to, why); the API and admin
requests that make them are in the audit trail (:mod:`console.audit`).
"""

from __future__ import annotations

from dataclasses import dataclass

from django.conf import settings
from django.contrib.auth.models import User
from django.db import transaction
from django.utils import timezone

from console.choices import HOSTED_TARGETS, SubjectType, WorkerService, WorkerState
from console.errors import InvalidTransition, ServiceError, runtime_errors
from console.models import Connector, Worker
from console.runtime import get_runtime
from console.services.lifecycle import actor_for, record


class WorkerNotFound(ServiceError):
    """No runtime worker has this id (neither the console nor the runtime knows it)."""


@dataclass(frozen=True)
class DrainResult:
    """What a drain asked for: the worker, and the channels it has to hand over."""

    worker: Worker
    changed: bool
    """False when it was already draining or drained (nothing was recorded)."""
    channels: list[str]
    """The channels (RUNNING or PAUSED targets) assigned to it, which move."""
    takers: list[str]
    """The other live workers in service that can take them (none: they stay for now)."""


def drain_worker(worker_id: str, *, user: User | None = None) -> DrainResult:
    """Take ``worker_id`` out of service (idempotent: an already draining or drained worker
    is left as it is). Raises :class:`WorkerNotFound`."""
    actor = actor_for(user)
    with transaction.atomic():
        worker = _locked(worker_id)
        changed = worker.service == WorkerService.IN_SERVICE
        channels = sorted(
            Connector.objects.filter(
                worker=worker, channel__target_state__in=HOSTED_TARGETS
            ).values_list("channel__name", flat=True)
        )
        takers = sorted(
            Worker.objects.filter(state=WorkerState.ALIVE, service=WorkerService.IN_SERVICE)
            .exclude(pk=worker.pk)
            .values_list("worker_id", flat=True)
        )
        if changed:
            if not channels:
                reason = "drain requested: it hosts no channel"
            elif takers:
                reason = (
                    f"drain requested: its {len(channels)} channel(s) move to {', '.join(takers)}"
                )
            else:
                reason = (
                    f"drain requested: its {len(channels)} channel(s) stay until another "
                    "worker in service is alive"
                )
            _set_service(worker, WorkerService.DRAINING, actor, reason)
    return DrainResult(worker, changed, channels, takers)


def undrain_worker(worker_id: str, *, user: User | None = None) -> Worker:
    """Put ``worker_id`` back in service (idempotent). Raises :class:`WorkerNotFound`."""
    actor = actor_for(user)
    with transaction.atomic():
        worker = _locked(worker_id)
        if worker.service != WorkerService.IN_SERVICE:
            _set_service(
                worker, WorkerService.IN_SERVICE, actor, "back in service: takes new channels"
            )
    return worker


def forget_worker(worker_id: str, *, user: User | None = None) -> None:
    """Forget a dead worker: the runtime's registration (and its drivers'), then the
    console's row. A worker the control loop holds ALIVE is refused (:class:`InvalidTransition`,
    the API's 409): liveness is the control loop's own observation, never the worker host's
    clock against this one. One the control loop never saw may be forgotten (if it runs, it
    registers again at its next heartbeat). Raises :class:`WorkerNotFound`,
    :class:`~console.errors.RuntimeUnavailable`."""
    runtime = get_runtime()
    with runtime_errors("forget worker"):
        info = next((i for i in runtime.workers() if i.worker_id == worker_id), None)
    worker = Worker.objects.filter(worker_id=worker_id).first()
    if info is None and worker is None:
        raise WorkerNotFound(f"no runtime worker has the id {worker_id!r}")
    if worker is not None and worker.state == WorkerState.ALIVE:
        timeout = settings.SLUICE_WORKER_SESSION_TIMEOUT
        seen = worker.heartbeat_seen_at
        heard = (
            f"a new heartbeat seen {max((timezone.now() - seen).total_seconds(), 0.0):.1f} s ago"
            if seen is not None
            else "its heartbeats not judged since the runtime was last unreachable"
        )
        raise InvalidTransition(
            f"worker {worker_id} is alive ({heard}, session timeout {timeout:g} s): only a "
            "DEAD worker can be forgotten. Drain it, stop its process, and forget it once it "
            "is DEAD"
        )
    with runtime_errors("forget worker"):
        runtime.forget_worker(worker_id)
    with transaction.atomic():
        moved = 0
        if worker is not None:
            # Its connectors were re-placed when it died; any left are placed by the next pass.
            moved = Connector.objects.filter(worker=worker).update(worker=None)
            worker.delete()
        was = worker.state if worker is not None else WorkerState.DEAD
        record(
            subject_type=SubjectType.WORKER,
            subject_id=worker_id,
            from_state=was,
            to_state="FORGOTTEN",
            actor=actor_for(user),
            reason=(
                "forgotten: its registration and its drivers' dropped"
                + (f"; {moved} connector(s) left to place" if moved else "")
            ),
        )


def _locked(worker_id: str) -> Worker:
    worker = Worker.objects.select_for_update().filter(worker_id=worker_id).first()
    if worker is None:
        raise WorkerNotFound(f"no runtime worker has the id {worker_id!r}")
    return worker


def _set_service(worker: Worker, service: WorkerService, actor: str, reason: str) -> None:
    record(
        subject_type=SubjectType.WORKER,
        subject_id=worker.worker_id,
        from_state=worker.service,
        to_state=service,
        actor=actor,
        reason=reason,
    )
    worker.service = service
    worker.service_changed_at = timezone.now()
    worker.service_changed_by = actor
    worker.save(update_fields=["service", "service_changed_at", "service_changed_by"])
