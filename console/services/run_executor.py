"""Executing bounded runs (replays, redrives): the runs' part of the control loop.

Each :class:`ChannelRun` is executed by the runtime as a connector of its own beside the
channel's live one (``<connector>.run-<id>``): the channel's current spec (the run's
revision) under the available-now trigger, with a checkpoint of its own
(``<checkpoint key>.run-<id>``), reading exactly the run's offsets, every event tagged
(:mod:`pipelines.runs`), committing no consumer-group offsets. The live connector, its
checkpoint and its consumer group are never touched.

:func:`execute_runs` is called after each reconcile pass (level-triggered, safe to repeat);
a run is first tried as its request commits (:func:`start_now`) and a read of a running run
follows it first (:func:`follow_now`), so neither waits for a pass:

* ``PENDING`` - a replay by time has its window resolved to offsets (``offsets_for_times``
  on the brokers, once); the run connector is deployed and assigned (the channel's worker
  when it is alive, else the least loaded live one); the run is ``RUNNING``. With nothing to
  read it is ``SUCCEEDED`` at once. Without a live worker it waits.
* ``RUNNING`` - progress is the offsets done over the offsets in the run, from the run
  connector's per-partition positions; ``events_written`` the sink's count. Its available-now
  query finishing makes it ``SUCCEEDED``; its failure ``FAILED`` (the trace's error line).
  A run whose worker died is assigned to a live one (it resumes from its checkpoint).
  ``events_failed`` is the events that failed on the way and became dead letters (again);
  a finished run with any is ``FAILED`` with the count (:func:`run_outcome`), not
  ``SUCCEEDED``.
* finished (``SUCCEEDED``, ``FAILED``, ``CANCELLED``) - its connector is stopped, then
  deleted from the runtime with its checkpoint.
"""

from __future__ import annotations

import logging
from collections import Counter
from datetime import timedelta
from typing import Any

from django.db import transaction
from django.db.models import Sum
from django.utils import timezone

from console.choices import FINAL_RUN_STATES, RunState, WorkerService, WorkerState
from console.crypto import decrypt_spec
from console.models import Channel, ChannelRun, Connector, Revision, Worker
from console.runtime import get_runtime
from console.services.ingest import with_ingest_fields
from console.services.reconcile.state import summarize_trace
from console.services.team_policy import policy_of
from pipelines.spec.runs import RunBounds, run_progress
from runtime_adapter import states as runtime_states
from runtime_adapter.base import (
    ConnectorStatus,
    Deployment,
    OffsetsError,
    RuntimeAdapter,
    RuntimeUnavailable,
)

logger = logging.getLogger(__name__)

#: How long a cancelled run's query may take to stop before its connector is deleted anyway.
STOP_GRACE = timedelta(seconds=30)


def run_connector_id(run: ChannelRun) -> str:
    """The runtime connector executing ``run``: ``<channel connector>.run-<id>``."""
    connector = Connector.objects.filter(channel_id=run.channel_id).only("runtime_id").first()
    base = connector.runtime_id if connector else run.channel.name
    return f"{base}.run-{run.id.hex}"


def run_checkpoint(channel: Channel, run: ChannelRun) -> str:
    """The run's own checkpoint folder (never the live query's)."""
    return f"{channel.checkpoint_key}.run-{run.id.hex}"


def run_bounds(run: ChannelRun) -> RunBounds:
    return RunBounds(
        run_id=str(run.id),
        kind=str(run.kind),
        start_offsets=run.start_offsets,
        end_offsets=run.end_offsets,
    )


def run_spec(revision: Revision, channel: Channel) -> dict[str, Any]:
    """The spec a run executes: the revision's (secrets still encrypted, the driver decrypts
    them), its HTTP source's ingest fields filled in, under the available-now trigger."""
    spec = with_ingest_fields(revision.spec, channel.name)
    runtime = dict(spec.get("runtime") or {})
    runtime["mode"] = "available-now"
    runtime.pop("interval_seconds", None)
    spec["runtime"] = runtime
    return spec


def run_deployment(
    run: ChannelRun, revision: Revision, worker: str | None, connector_id: str
) -> Deployment:
    """The run's connector ``connector_id`` (:func:`run_connector_id`) as the runtime is told
    it: ``revision``'s spec as :func:`run_spec` makes it, the run's bounds and checkpoint,
    target RUNNING, hosted by ``worker`` (also what the control loop re-sends of a running
    run to a runtime that lost it)."""
    channel = run.channel
    return Deployment(
        connector_id=connector_id,
        channel=channel.name,
        revision=revision.number,
        spec=run_spec(revision, channel),
        target_state=runtime_states.TargetState.RUNNING,
        worker_id=worker,
        checkpoint=run_checkpoint(channel, run),
        run=run_bounds(run).to_json(),
        team=channel.team.name,
        policy=policy_of(channel.team),
    )


def execute_runs(*, runtime: RuntimeAdapter | None = None) -> int:
    """One pass over every unfinished run and every finished run still in the runtime (see
    the module docstring); returns how many runs changed."""
    runtime = runtime or get_runtime()
    runs = list(
        ChannelRun.objects.select_related("channel", "revision").filter(
            state__in=[RunState.PENDING, RunState.RUNNING]
        )
    ) + list(
        ChannelRun.objects.select_related("channel")
        .filter(state__in=FINAL_RUN_STATES)
        .exclude(runtime_id="")
    )
    if not runs:
        return 0
    live, in_service = _workers()
    ids = [run.runtime_id for run in runs if run.runtime_id]
    statuses = runtime.status(ids) if ids else {}
    changed = 0
    for run in runs:
        try:
            if run.state == RunState.PENDING:
                changed += _start(runtime, run, in_service)
            elif run.state == RunState.RUNNING:
                changed += _follow(runtime, run, statuses.get(run.runtime_id), live)
            else:
                _clean_up(runtime, run, statuses.get(run.runtime_id))
        except RuntimeUnavailable as exc:
            logger.warning("run %s of %s waits: %s", run.id, run.channel.name, exc)
    return changed


def start_now(run: ChannelRun, *, runtime: RuntimeAdapter | None = None) -> None:
    """Start a run just recorded at once, as a channel's start deploys in its request,
    instead of at the control loop's next pass (up to one reconcile interval later). Best
    effort: without a live worker, or with the runtime unreachable, the run stays
    ``PENDING`` and the next pass starts it (:func:`_start` is safe to repeat: it takes the
    run's row lock and starts only a ``PENDING`` run)."""
    try:
        _start(runtime or get_runtime(), run, _workers()[1])
    except RuntimeUnavailable as exc:
        logger.warning("run %s of %s waits for the next pass: %s", run.id, run.channel.name, exc)


def follow_now(runs: list[ChannelRun], *, runtime: RuntimeAdapter | None = None) -> None:
    """Bring the ``RUNNING`` ones of ``runs`` up to date with the runtime (progress, and
    ``SUCCEEDED`` / ``FAILED`` as soon as their query has ended), as the loop's next pass
    would: what the API answers is the runtime's state now, not that of the last pass.
    Only their state is read here: a run whose worker is gone is moved by the loop's pass
    alone, never by a read. An unreachable runtime leaves them as they are."""
    running = [run for run in runs if run.state == RunState.RUNNING and run.runtime_id]
    if not running:
        return
    runtime = runtime or get_runtime()
    try:
        statuses = runtime.status([run.runtime_id for run in running])
        live = _workers()[0]
        for run in running:
            status = statuses.get(run.runtime_id)
            if status is not None and status.worker_id in live:
                _follow(runtime, run, status, live)
    except RuntimeUnavailable as exc:
        logger.warning("runs of %s not followed now: %s", running[0].channel.name, exc)


def _workers() -> tuple[list[str], list[str]]:
    """The live workers, and those of them in service (a draining worker keeps the runs it
    has but starts no new one: console/services/workers)."""
    alive = Worker.objects.filter(state=WorkerState.ALIVE)
    live = list(alive.values_list("worker_id", flat=True))
    in_service = list(
        alive.filter(service=WorkerService.IN_SERVICE).values_list("worker_id", flat=True)
    )
    return live, in_service


def _least_loaded(run: ChannelRun, live: list[str]) -> str | None:
    """The channel's own worker when it is alive, else the live worker hosting the fewest
    connectors."""
    if not live:
        return None
    connector = Connector.objects.filter(channel_id=run.channel_id).first()
    if connector is not None and connector.worker_id in live:
        return connector.worker_id
    hosted = Connector.objects.filter(worker_id__in=live).values_list("worker_id", flat=True)
    load = Counter(str(worker) for worker in hosted)
    return min(live, key=lambda worker: (load[worker], worker))


def _resolve_window(runtime: RuntimeAdapter, run: ChannelRun, spec: dict[str, Any]) -> None:
    """Turn a replay's time window into offsets (once: kept on the run)."""
    if run.start_offsets or run.window_start is None or run.window_end is None:
        return
    plain = decrypt_spec(spec)
    start_ms = int(run.window_start.timestamp() * 1000)
    end_ms = int(run.window_end.timestamp() * 1000)
    starts, ends = runtime.window_offsets(plain, start_ms, end_ms)
    run.start_offsets = {}
    run.end_offsets = {}
    for offset in starts:
        run.start_offsets.setdefault(offset.topic, {})[str(offset.partition)] = offset.offset
    for offset in ends:
        run.end_offsets.setdefault(offset.topic, {})[str(offset.partition)] = offset.offset
    run.expected = run_bounds(run).expected()


def _start(runtime: RuntimeAdapter, run: ChannelRun, live: list[str]) -> int:
    channel = run.channel
    revision = run.revision or channel.latest_revision_obj()
    if revision is None:
        return _finish(run, RunState.FAILED, "the channel has no revision to run")
    spec = run_spec(revision, channel)
    worker = _least_loaded(run, live)
    if worker is None:
        return 0  # PENDING until a runtime worker is alive
    try:
        _resolve_window(runtime, run, spec)
    except OffsetsError as exc:
        return _finish(run, RunState.FAILED, f"the window cannot be resolved: {exc}")
    bounds = run_bounds(run)
    if bounds.expected() == 0:
        run.expected = 0
        run.save(update_fields=["start_offsets", "end_offsets", "expected"])
        return _finish(run, RunState.SUCCEEDED, "", started=True)
    connector_id = run_connector_id(run)
    deployment = run_deployment(run, revision, worker, connector_id)
    with transaction.atomic():
        current = ChannelRun.objects.select_for_update().get(pk=run.pk)
        if current.state != RunState.PENDING:
            return 0  # cancelled meanwhile
        runtime.deploy(deployment)
        runtime.assign(connector_id, worker)
        run.state = RunState.RUNNING
        run.started_at = timezone.now()
        run.runtime_id = connector_id
        run.expected = bounds.expected()
        run.save(
            update_fields=[
                "state",
                "started_at",
                "runtime_id",
                "expected",
                "start_offsets",
                "end_offsets",
            ]
        )
    logger.info(
        "%s %s of channel %s started as connector %s on worker %s (%d offsets)",
        run.kind,
        run.id,
        channel.name,
        connector_id,
        worker,
        bounds.expected(),
    )
    return 1


def _positions(status: ConnectorStatus) -> dict[tuple[str, int], int]:
    return {
        (task.topic, task.partition): task.offset
        for task in status.tasks
        if task.topic is not None and task.partition is not None and task.offset is not None
    }


def _written(status: ConnectorStatus) -> int | None:
    sinks = [stage for stage in status.stages if stage.get("stage") == "sink"]
    if sinks:
        return int(sinks[-1].get("out") or 0)
    if status.rules:
        return sum(int(rule.get("delivered") or 0) for rule in status.rules)
    return None


def _follow(
    runtime: RuntimeAdapter, run: ChannelRun, status: ConnectorStatus | None, live: list[str]
) -> int:
    if status is None or (status.worker_id and status.worker_id not in live):
        worker = _least_loaded(run, live)
        if status is not None and worker is not None and status.worker_id != worker:
            runtime.assign(run.runtime_id, worker)  # its worker died: resume from its checkpoint
        return 0
    bounds = run_bounds(run)
    done, total = run_progress(bounds, _positions(status))
    written = _written(status)
    failed = int(status.dead_letters or 0)
    fields = []
    if status.state == runtime_states.State.FAILED:
        return _finish(
            run,
            RunState.FAILED,
            summarize_trace(status.trace),
            progress=(done, written),
            failed=failed,
        )
    if status.state == runtime_states.State.STOPPED and status.finished:
        state, error = run_outcome(str(run.kind), total, failed)
        return _finish(run, state, error, progress=(total, written), failed=failed)
    if failed != run.events_failed:
        run.events_failed = failed
        fields.append("events_failed")
    if done != run.events_read:
        run.events_read = done
        fields.append("events_read")
    if written is not None and written != run.events_written:
        run.events_written = written
        fields.append("events_written")
    if fields:
        ChannelRun.objects.filter(pk=run.pk, state=RunState.RUNNING).update(
            **{name: getattr(run, name) for name in fields}
        )
        if "events_failed" in fields:
            count_run_dead_letters(run.channel_id)
        return 1
    return 0


def count_run_dead_letters(channel_id: int) -> None:
    """The channel's dead letters from its runs (the events its replays and redrives failed)
    onto its connector (:attr:`Connector.run_dead_letters`), summed again from the runs: the
    channel's dead-letter count is its own driver's plus these, as its dead-letter list,
    which holds both, says."""
    total = ChannelRun.objects.filter(channel_id=channel_id).aggregate(n=Sum("events_failed"))
    Connector.objects.filter(channel_id=channel_id).update(run_dead_letters=total["n"] or 0)


def run_outcome(kind: str, read: int, failed: int) -> tuple[RunState, str]:
    """How a run whose query read its whole window ends: ``SUCCEEDED`` when every event
    went through, else ``FAILED`` with the count (a redrive whose letters fail again did not
    do what it was asked; they are dead letters again, under new ids)."""
    if failed <= 0:
        return RunState.SUCCEEDED, ""
    events = "event" if read == 1 else "events"
    if kind == "redrive":
        return RunState.FAILED, (
            f"{failed} of {read} redriven {events} failed again: they are new dead letters "
            "(or were skipped, as the channel's error policy says); fix the cause first"
        )
    return RunState.FAILED, (
        f"{failed} of {read} replayed {events} failed: they went to the dead letters "
        "(or were skipped, as the channel's error policy says)"
    )


def _finish(
    run: ChannelRun,
    state: RunState,
    error: str,
    *,
    started: bool = False,
    progress: tuple[int, int | None] | None = None,
    failed: int | None = None,
) -> int:
    """Move an unfinished run to the final ``state`` (unless it was cancelled meanwhile)."""
    now = timezone.now()
    values: dict[str, Any] = {"state": state, "finished_at": now, "error": error[:2000]}
    if failed is not None:
        values["events_failed"] = failed
    if started:
        values["started_at"] = now
    if progress is not None:
        values["events_read"] = progress[0]
        if progress[1] is not None:
            values["events_written"] = progress[1]
    updated = ChannelRun.objects.filter(
        pk=run.pk, state__in=[RunState.PENDING, RunState.RUNNING]
    ).update(**values)
    if updated:
        for name, value in values.items():
            setattr(run, name, value)
        if failed:
            count_run_dead_letters(run.channel_id)
        logger.info("%s %s of channel %s: %s %s", run.kind, run.id, run.channel.name, state, error)
    return updated


def _clean_up(runtime: RuntimeAdapter, run: ChannelRun, status: ConnectorStatus | None) -> None:
    """Remove a finished run's connector and checkpoint from the runtime; a cancelled run's
    query is stopped first (deleted anyway after :data:`STOP_GRACE`)."""
    running = status is not None and status.state in (
        runtime_states.State.RUNNING,
        runtime_states.State.RESTARTING,
        runtime_states.State.PAUSED,
    )
    overdue = run.finished_at is None or timezone.now() - run.finished_at > STOP_GRACE
    if running and not overdue:
        runtime.set_target_state(run.runtime_id, runtime_states.TargetState.STOPPED)
        return
    runtime.delete(run.runtime_id)
    ChannelRun.objects.filter(pk=run.pk).update(runtime_id="")
    logger.info("run %s: connector %s and its checkpoint removed", run.id, run.runtime_id)


def stop_run_now(run: ChannelRun) -> None:
    """Ask the runtime to stop a cancelled run's query at once (the next pass removes it);
    an unreachable runtime only delays it to that pass."""
    if not run.runtime_id:
        return
    try:
        get_runtime().set_target_state(run.runtime_id, runtime_states.TargetState.STOPPED)
    except RuntimeUnavailable as exc:
        logger.warning("run %s: its stop waits for the next pass: %s", run.id, exc)
