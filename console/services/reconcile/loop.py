"""One reconcile pass, its steps in order (:mod:`console.services.reconcile` says what each
does), and its writes in one transaction, fenced by its token."""

from __future__ import annotations

import time

from django.db import transaction

from console.choices import (
    ConnectorState,
    TargetState,
    WorkerState,
)
from console.models import (
    Channel,
    Connector,
    LifecycleEvent,
    LoopFence,
    Task,
    Worker,
)
from console.runtime import get_runtime
from console.services import channel_health
from console.services.bulk import update_rows
from console.services.moves import Mover
from console.services.reconcile.feed import FeedFollowing
from console.services.reconcile.observe import Observing
from console.services.reconcile.placement import Placing
from console.services.reconcile.restarts import Restarting
from console.services.reconcile.state import (
    ReconcileReport,
    StalePass,
    _TaskRows,
    logger,
)
from console.services.reconcile.workers import WorkerSync
from console.services.resend import resend_lost
from runtime_adapter import states as runtime_states
from runtime_adapter.base import (
    ConnectorStatus,
    RuntimeAdapter,
    RuntimeUnavailable,
)
from runtime_adapter.logs import log_context

_CONNECTOR_FIELDS = [
    "state",
    "worker",
    "trace",
    "driver_id",
    "status_reason",
    "finished",
    "dead_letters",
    "sink_retries",
    "stage_metrics",
    "rule_metrics",
    "count_base",
    "batch_seconds",
    "state_changed_at",
    "last_status_at",
    "status_seen_at",
    "report_interval",
    "status_deadline_at",
    "silence_recorded",
]

_WORKER_FIELDS = [
    "host",
    "pid",
    "started_at",
    "last_heartbeat",
    "heartbeat_seen_at",
    "state",
    "capacity",
]

_TASK_FIELDS = [
    "state",
    "worker_id",
    "topic",
    "partition",
    "offset",
    "end_offset",
    "lag",
    "rows_per_second",
]


def reconcile(
    *, runtime: RuntimeAdapter | None = None, now: float | None = None, token: int | None = None
) -> ReconcileReport:
    """Run one pass (see the module docstring); ``now`` is a Unix time, for tests.

    Runtime errors propagate before anything is written to the database; placements
    already sent to the runtime are idempotent and are simply made again next pass. The one
    runtime call after the writes tells the runtime the targets of channels whose
    available-now run finished (which the user's next start or stop settles anyway). A pass
    that fails with the runtime unreachable voids the workers' observations first
    (:func:`note_runtime_unreadable`).

    ``token`` is the pass's fencing token (:func:`console.locks.next_token`, taken with the
    loop's lock): its writes are made only if no pass with a newer token wrote before
    (:class:`~console.models.LoopFence`); else nothing is written and the report says
    ``stale``.
    """
    try:
        return _Pass(runtime or get_runtime(), time.time() if now is None else now, token).run()
    except RuntimeUnavailable:
        note_runtime_unreadable()
        raise


def note_runtime_unreadable() -> None:
    """The console could not read the runtime: what it saw of the live workers' heartbeats
    no longer dates their silence. Their ``heartbeat_seen_at`` is cleared, so the first pass
    that reads the runtime again starts each one's session timeout afresh (a worker that ran
    all along is not found dead for the time nobody could look). One UPDATE, of the rows not
    cleared yet."""
    Worker.objects.filter(state=WorkerState.ALIVE).exclude(heartbeat_seen_at=None).update(
        heartbeat_seen_at=None
    )


class _Pass(WorkerSync, FeedFollowing, Placing, Observing, Restarting):
    """One pass: its steps (the parts it is made of) in order, then its writes."""

    def run(self) -> ReconcileReport:
        self.sync_workers(self.runtime.workers())
        feed = self.runtime.status_feed()
        if feed is None:
            connectors = self.every_connector()
            resent = resend_lost(
                self.runtime, self.every_connector, self.live, self.at, count=len(connectors)
            )
            self.events.extend(resent.events)
            self.place(connectors)
            self.note_drained(connectors)
            ids = [c.runtime_id for c in connectors]
            statuses = self.runtime.status(ids) if connectors else {}
        else:
            connectors, statuses, resent = self.follow_feed(feed)
            self.place(connectors)
            self.note_drained(connectors)
            if self.runtime.places:
                self.mover = Mover(self.runtime, self.rooms, self.now)
        tasks = self.task_rows(connectors, statuses)
        for connector in connectors:
            with log_context(channel=connector.channel.name, connector=connector.runtime_id):
                was = connector.state
                totals = (connector.dead_letters, connector.sink_retries)
                status = statuses.get(connector.runtime_id)
                step = None if self.mover is None else self.mover.step(connector, status)
                if step is not None:
                    status = step.status
                self.take_vouch(connector)
                self.observe(connector, status, tasks)
                if step is not None:
                    self.show_move(connector, step.reason, step.event)
                self.keep_totals(connector, *totals)
                self.apply_restart_policy(connector, was)
        try:
            self.save()
        except StalePass:
            logger.warning(
                "reconcile pass with token %s wrote nothing: a newer pass has written",
                self.token,
            )
            return ReconcileReport(
                len(self.live), len(self.dead_reasons), len(connectors), 0, 0, stale=True
            )
        self.stop_finished_in_runtime()
        moved = {event.channel_id for event in self.events if event.channel_id is not None}
        moved |= self.reporting_changed
        if self.feed is not None and not self.feed.full:
            # Following the feed, the channels this pass looked at (news, what is due, the
            # rolling resync's slice): each within the resync period, not every 5 s.
            channel_health.refresh(moved | {c.channel_id for c in connectors}, now=self.now)
        else:
            channel_health.refresh_after_pass(moved, now=self.now)
        return ReconcileReport(
            workers_alive=len(self.live),
            workers_dead=len(self.dead_reasons),
            connectors=len(connectors),
            placements=self.placements,
            events=len(self.events),
            restarts=self.restarts,
            resent=resent.connectors + resent.runs,
            news=len(self.feed.news) if self.feed is not None else 0,
            full=self.feed is None or self.feed.full,
        )

    def task_rows(
        self, connectors: list[Connector], statuses: dict[str, ConnectorStatus]
    ) -> _TaskRows:
        """The task rows of the connectors whose tasks this pass may touch (:meth:`observe`
        mirrors a trusted report's tasks, or parks them when no driver runs the connector),
        read in one query. Following the feed, most connectors looked at are running ones
        with no news (a vouch, the resync's slice): their tasks stay as they are, unread."""
        if self.feed is None or self.feed.full:
            return _TaskRows(Task.objects.all(), None)
        wanted = [c.pk for c in connectors if self.may_touch_tasks(c, statuses)]
        return _TaskRows(Task.objects.filter(connector__in=wanted), set(wanted))

    def may_touch_tasks(self, connector: Connector, statuses: dict[str, ConnectorStatus]) -> bool:
        """Whether :meth:`observe` may change the connector's tasks: it has news, or it is
        (or is about to be) parked: STOPPED or UNASSIGNED, its target STOPPED, its worker
        not alive. A superset of what :meth:`derive_state` trusts or parks."""
        return (
            connector.runtime_id in statuses
            or connector.state in (ConnectorState.STOPPED, ConnectorState.UNASSIGNED)
            or connector.channel.target_state == TargetState.STOPPED
            or connector.worker_id not in self.live
        )

    def save(self) -> None:
        with transaction.atomic():
            self.check_fence()
            Worker.objects.bulk_create(self.new_workers)
            update_rows(Worker, self.changed_workers, _WORKER_FIELDS)
            update_rows(Connector, self.changed_connectors.values(), _CONNECTOR_FIELDS)
            # Written apart so a pass never writes back a generation it did not change.
            update_rows(Connector, self.new_generations.values(), ["generation"])
            update_rows(Connector, self.new_attempts.values(), ["restart_attempts"])
            self.stop_finished_channels()
            Task.objects.filter(pk__in=self.gone_tasks).delete()
            Task.objects.bulk_create(self.new_tasks)
            update_rows(Task, self.changed_tasks, [*_TASK_FIELDS, "updated"])
            self.save_drained()
            LifecycleEvent.objects.bulk_create(self.events)
            self.save_feed()

    def check_fence(self) -> None:
        """Raise :class:`StalePass` when a pass with a newer token has written; else record
        this pass's token (the row stays locked until the transaction ends)."""
        if self.token is None:
            return
        fence, _ = LoopFence.objects.select_for_update().get_or_create(name="reconcile")
        if fence.token > self.token:
            raise StalePass(f"token {self.token} < {fence.token}")
        fence.token = self.token
        fence.written_at = self.at
        fence.save(update_fields=["token", "written_at"])

    def stop_finished_channels(self) -> None:
        """Set the target of each channel whose available-now run finished to STOPPED, unless
        someone changed it since the pass read it (a stop, or a start that ran it again: a new
        generation). Only then is the change recorded."""
        stopped = []
        for connector, generation, event in self.finished_runs:
            changed = Channel.objects.filter(
                pk=connector.channel_id,
                target_state=TargetState.RUNNING,
                connector__generation=generation,
            ).update(target_state=TargetState.STOPPED, updated=self.at)
            if changed:
                connector.channel.target_state = TargetState.STOPPED
                logger.info(
                    "channel %s target RUNNING → STOPPED: %s", event.subject_id, event.reason
                )
                self.events.append(event)
                stopped.append((connector, generation, event))
        self.finished_runs = stopped

    def stop_finished_in_runtime(self) -> None:
        """Tell the runtime the targets :meth:`stop_finished_channels` set (after the commit,
        as the console's services do: a runtime call is idempotent, a rollback is not)."""
        for connector, _, _ in self.finished_runs:
            self.runtime.set_target_state(connector.runtime_id, runtime_states.TargetState.STOPPED)
