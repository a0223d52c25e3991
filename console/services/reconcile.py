"""The control loop: make the database and the runtime agree, one pass at a time.

Level-triggered, like a Kubernetes controller: each pass looks at the whole
picture (workers, targets, observed status) instead of reacting to events, so a
missed or repeated pass does no harm. A pass

1. reads the runtime's workers and marks each ALIVE or DEAD by the console's own observation
   of its heartbeat, never by comparing the worker host's clock with this one: a heartbeat is
   fresh when its value changed since the pass before, and ``heartbeat_seen_at`` records
   when (in the console's time). A worker is DEAD once no new heartbeat was seen for
   ``SLUICE_WORKER_SESSION_TIMEOUT`` (also one no longer registered with the runtime: its
   registration may come back, as after an emptied store); a DEAD worker is ALIVE again
   only with a new heartbeat. A worker seen for the first time is ALIVE. Time during which
   the console could not read the runtime does not count against a worker: a pass that
   fails with the runtime unreachable voids the observations
   (:func:`note_runtime_unreadable`), and the first pass back gives every live worker a
   whole session timeout from then;
2. re-sends to the runtime what it lacks of the console's desired state
   (:mod:`console.services.resend`: an emptied store is repopulated, its epoch token set
   again, within this pass; a partial loss too), before anything else is sent;
3. places every connector whose target wants it hosted (RUNNING or PAUSED) and that
   has no schedulable worker (alive and in service): sticky (a schedulable current worker is
   kept), else the least loaded schedulable worker; with none it is unassigned. A connector
   on a DRAINING worker (:mod:`console.services.workers`) is handed over in two steps so two
   queries never share its checkpoint: while a driver of the draining worker still runs it
   the connector is released (unassigned: the worker stops its query), and once no live
   worker's driver runs it, it goes to the least loaded schedulable worker, which resumes
   it from its checkpoint (nothing is lost). With no schedulable worker it stays where it
   runs. A DRAINING worker hosting none of them any more becomes DRAINED;
4. reads the status of all connectors in one runtime call and writes connectors and
   tasks from it. A status older (by generation) than the connector is ignored; a
   RUNNING / PAUSED / RESTARTING report from a worker that is not alive is not
   believed (the connector is UNASSIGNED, or STOPPED if its target is); a connector
   whose target is STOPPED and that has no status is STOPPED. Tasks mirror the
   reported ones; without a trusted report they take the connector's state and keep
   their offsets (and the connector shows no driver and no reason). A reported trace is
   stored (and its error line recorded as a reason) with the deployed revision's secrets
   replaced by the marker; so are the driver that runs the query and the runtime's reason
   for the state (a source topic waited for), which is then the recorded reason of the
   change. An available-now run that reached the end of its source (STOPPED, finished)
   while its channel's target is RUNNING sets that target to STOPPED, recorded as a
   channel event with the runtime's reason ("available-now run finished: …"). A trusted
   report is dated by the pass, in the console's clock, when it is new (its ``updated_at``,
   the reporter's clock, differs from the stored one: never compared with ours):
   ``status_seen_at``, its ``report_interval`` and the deadline the readers judge it by
   (:mod:`console.selectors.reporting`: past it the connector is shown NOT_REPORTING);
   a report read again keeps its date, a status gone from the runtime keeps the deadline.
   The pass records, once each way, that a connector turned NOT_REPORTING (from its stored
   state, which stays the last observed) and that it reports again;
5. applies each channel's restart policy (:mod:`console.selectors.restart_policy`): a FAILED
   connector whose policy allows it and whose backoff has passed is restarted (a new
   generation, state RESTARTING, reason ``automatic restart 2/5 after failure: <error
   line>``); when the attempts are used up that is recorded once, as the connector turns
   FAILED; a connector RUNNING for ``SLUICE_RESTART_RESET_SECONDS`` has its count reset;
6. stores the health level of each channel whose connector changed state (or started or
   stopped reporting), and every few seconds of every channel, where it changed
   (:mod:`console.services.channel_health`: the fleet list filters and sorts by it).

Every change of state and every placement is recorded as a :class:`LifecycleEvent`
with actor ``system:reconcile`` and a reason (a new task whose state is its
connector's is covered by the connector's event). With nothing new observed, a second
pass writes nothing. Database reads are a fixed handful of queries and writes are
bulk, whatever the number of channels.
"""

from __future__ import annotations

import logging
import time
from collections import Counter
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime, timedelta
from typing import Any, cast

from django.conf import settings
from django.db import transaction
from django.db.models import Q
from django.db.models.functions import Mod

from console.choices import (
    HOSTED_TARGETS,
    ConnectorState,
    ShownState,
    SubjectType,
    TargetState,
    WorkerService,
    WorkerState,
)
from console.models import (
    Channel,
    Connector,
    LifecycleEvent,
    LoopCursor,
    LoopFence,
    Task,
    Worker,
)
from console.runtime import get_runtime
from console.selectors import reporting
from console.selectors.restart_policy import RestartPolicy
from console.selectors.specs import mask_known_secrets, plain_secret_values, scrub
from console.services import channel_health, count_totals
from console.services.bulk import update_rows
from console.services.lifecycle import RECONCILE_ACTOR, lifecycle_event
from console.services.moves import Mover, Room, rooms_of
from console.services.resend import Resent, resend_lost
from runtime_adapter import states as runtime_states
from runtime_adapter.base import (
    ConnectorStatus,
    RuntimeAdapter,
    RuntimeUnavailable,
    StatusFeed,
    StatusNews,
    TaskStatus,
    Vouch,
    WorkerInfo,
)
from runtime_adapter.logs import log_context

logger = logging.getLogger(__name__)

#: Observed states that mean "a driver is (or is about to be) up on the reporting worker".
_ACTIVE_STATES = frozenset(
    {ConnectorState.RUNNING, ConnectorState.PAUSED, ConnectorState.RESTARTING}
)
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
_MAX_REASON = 500


@dataclass(frozen=True)
class ReconcileReport:
    """What one pass saw and did."""

    workers_alive: int
    workers_dead: int
    connectors: int
    placements: int
    events: int
    restarts: int = 0
    resent: int = 0
    """Connectors re-sent to a runtime that had lost their desired state."""
    stale: bool = False
    """The pass wrote nothing: a pass with a newer fencing token had written first."""
    news: int = 0
    """Connectors with news in the runtime's status feed (when the pass follows it)."""
    full: bool = True
    """The pass looked at every connector (``connectors``: how many it looked at)."""


_FEED_CURSOR = "status-feed"
_FEED_BUDGET = 0.5
"""Seconds a pass may spend reading the status feed (what is left is read by the next)."""
_TICK = timedelta(microseconds=1)


class _TaskRows:
    """A pass's task rows by connector, read in one query for the connectors whose tasks it
    expects to touch (``read``; None: every connector); those of another connector are read
    when asked for (:meth:`_Pass.may_touch_tasks` makes that rare)."""

    def __init__(self, rows: Any, read: set[int] | None) -> None:
        self.read = read
        self.rows: dict[int, dict[int, Task]] = {}
        for task in rows:
            self.rows.setdefault(task.connector_id, {})[task.task_id] = task

    def of(self, connector: Connector) -> dict[int, Task]:
        if self.read is not None and connector.pk not in self.read:
            self.read.add(connector.pk)
            self.rows[connector.pk] = {
                t.task_id: t for t in Task.objects.filter(connector=connector)
            }
        return self.rows.get(connector.pk, {})


@dataclass
class _FeedPass:
    """What a pass read of the runtime's status feed."""

    cursor: dict[int, int]
    news: dict[str, StatusNews]
    vouches: dict[str, Vouch]
    """Worker id → its latest vouch in what was read."""
    full: bool
    """The pass looks at every connector, not only the news, what is due and a slice."""
    slice: int
    """The slice of the rolling resync this pass looks at."""
    caught_up: bool = True
    """The read reached the end of what was written (else its news may be old ones)."""
    taken: set[str] = field(default_factory=set)
    """Connectors whose vouch the pass applied itself (it looked at them)."""


def resync_slices() -> int:
    """Into how many slices (by connector id) the rolling resync cuts the connectors: one is
    looked at every pass, so every connector within ``SLUICE_RECONCILE_RESYNC_SECONDS``."""
    return max(
        1, round(settings.SLUICE_RECONCILE_RESYNC_SECONDS / settings.SLUICE_RECONCILE_INTERVAL)
    )


def _vouched(vouch: Vouch, age: float, at: datetime) -> dict[str, Any]:
    """The liveness fields of a connector its worker vouched for, last refreshed ``age``
    seconds before the vouch, read at ``at``: its report is dated ``age`` seconds and one
    reconcile interval (the longest a record waits for a pass) before ``at``."""
    seen_at = at - timedelta(seconds=age + settings.SLUICE_RECONCILE_INTERVAL)
    return {
        "status_seen_at": seen_at,
        "report_interval": vouch.report_interval,
        "status_deadline_at": reporting.deadline(
            ConnectorState.RUNNING, seen_at, vouch.report_interval
        ),
        "last_status_at": _timestamp(vouch.at - age) if vouch.at else None,
    }


class StalePass(Exception):
    """A pass with a newer fencing token has written: this one's results are out of date."""


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


def _timestamp(seconds: float | None) -> datetime | None:
    return datetime.fromtimestamp(seconds, tz=UTC) if seconds else None


def summarize_trace(trace: str) -> str:
    """The line of a trace that says what went wrong.

    A Python traceback states its error on the last line; a JVM trace on the first.
    """
    lines = [line.strip() for line in trace.strip().splitlines() if line.strip()]
    if not lines:
        return "failed"
    line = lines[-1] if lines[0].startswith("Traceback") else lines[0]
    return line[:_MAX_REASON]


class _Pass:
    def __init__(self, runtime: RuntimeAdapter, now: float, token: int | None = None) -> None:
        self.runtime = runtime
        self.token = token
        self.now = now
        self.at = datetime.fromtimestamp(now, tz=UTC)
        self.session_timeout = settings.SLUICE_WORKER_SESSION_TIMEOUT
        self.restart_reset = settings.SLUICE_RESTART_RESET_SECONDS
        self.events: list[LifecycleEvent] = []
        self.live: set[str] = set()
        self.draining: set[str] = set()
        """Workers DRAINING or DRAINED (alive or not): no placements go to them."""
        self.dead_reasons: dict[str, str] = {}
        self.still_draining: set[str] = set()
        """Workers DRAINING (not yet DRAINED)."""
        self.members_unknown = False
        """The runtime's group decides liveness and Kafka did not say who is in it this pass."""
        self.drained: list[str] = []
        self._hosted: dict[str, str] | None = None
        self.new_workers: list[Worker] = []
        self.changed_workers: list[Worker] = []
        self.changed_connectors: dict[int, Connector] = {}
        self.new_generations: dict[int, Connector] = {}
        self.new_attempts: dict[int, Connector] = {}
        self.finished_runs: list[tuple[Connector, int, LifecycleEvent]] = []
        self.restarts = 0
        self.new_tasks: list[Task] = []
        self.changed_tasks: list[Task] = []
        self.gone_tasks: list[int] = []
        self.placements = 0
        self.secrets: dict[int, list[str]] = {}
        self.reporting_changed: set[int] = set()
        """Channels whose connector turned NOT_REPORTING or reports again (by this pass)."""
        self.feed: _FeedPass | None = None
        """What this pass read of the runtime's status feed (None: it reads every status)."""
        self._every: list[Connector] | None = None
        self.dated: set[int] = set()
        """Connectors whose report this pass dated from a worker's vouch."""
        self.worker_rows: dict[str, Worker] = {}
        """Every worker the console knows (read by :meth:`sync_workers`)."""
        self.mover: Mover | None = None
        """Capacity-aware moves (:mod:`console.services.moves`): when the runtime places
        channels and the pass follows its status feed."""

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

    def every_connector(self) -> list[Connector]:
        """Every connector, with its channel and revision (read once a pass)."""
        if self._every is None:
            self._every = list(
                Connector.objects.select_related("channel", "revision").order_by("runtime_id")
            )
        return self._every

    # -- 0. the runtime's status feed ------------------------------------------------------

    def follow_feed(
        self, feed: StatusFeed
    ) -> tuple[list[Connector], dict[str, ConnectorStatus], Resent]:
        """Read the status feed from the stored cursor and choose the connectors this pass
        looks at: those with news, those :meth:`due` (time, a worker's death, a wish not yet
        met) and one slice of all (a rolling resync: each connector once in
        :func:`resync_slices` passes); or every one (the first pass, and while a worker
        drains)."""
        stored = LoopCursor.objects.filter(name=_FEED_CURSOR).first()
        cursor = (
            {int(p): int(o) for p, o in stored.position.items()}
            if stored is not None and stored.position
            else None
        )
        batch = feed.read(cursor, budget=_FEED_BUDGET)
        news = self.news_where_placed(batch.news)
        vouches: dict[str, Vouch] = {}
        if batch.caught_up:  # (else an old vouch read on the way may not be the latest)
            for vouch in batch.vouches:
                vouches[vouch.worker_id] = vouch  # the latest of each worker
        for vouch in vouches.values():
            worker = self.worker_rows.get(vouch.worker_id)
            if worker is not None and vouch.capacity is not None:
                self.update_worker(worker, {"capacity": dict(vouch.capacity)})
        slices = resync_slices()
        next_slice = stored.resync_slice % slices if stored is not None else 0
        full = cursor is None or bool(self.still_draining)
        self.feed = _FeedPass(batch.cursor, news, vouches, full, next_slice, batch.caught_up)
        resent = resend_lost(self.runtime, self.every_connector, self.live, self.at)
        self.events.extend(resent.events)
        if full:
            connectors = self.every_connector()
        else:
            connectors = list(
                Connector.objects.select_related("channel", "revision")
                .annotate(resync_slice=Mod("id", slices))
                .filter(Q(runtime_id__in=list(news)) | Q(resync_slice=next_slice) | self.due())
                .order_by("runtime_id")
            )
        self.place(connectors)
        self.note_drained(connectors)
        statuses = {cid: n.status for cid, n in news.items() if n.status is not None}
        return connectors, statuses, resent

    def news_where_placed(self, items: list[StatusNews]) -> dict[str, StatusNews]:
        """The latest news of each connector (in log order) from the slot it is in now: its
        home slot, or the one a move placed it in. A moved connector's last records and
        tombstone in the slot it left say nothing of it any more (and the feed's slots are
        read side by side: they may come after its news from where it runs)."""
        news: dict[str, StatusNews] = {}
        placed: dict[str, int] | None = None
        for item in items:
            if item.slot is not None:
                if placed is None:
                    placed = {
                        cid: slot
                        for cid, slot in Connector.objects.filter(slot__isnull=False).values_list(
                            "runtime_id", "slot"
                        )
                        if slot is not None
                    }
                cid = item.connector_id
                expected = placed.get(cid)
                if expected is None:
                    expected = self.runtime.home_slot(cid)
                if expected is not None and item.slot != expected:
                    continue
            news[item.connector_id] = item
        return news

    def due(self) -> Q:
        """The connectors a pass looks at without news of them: what time acts on (a report
        that ran out, or is believed again; a restart's backoff; a reset of its attempts),
        what waits on the control loop (a stop not settled, a placement), and those on a
        worker that is not alive (they are not hosted)."""
        hosted = sorted(HOSTED_TARGETS)
        refreshed = sorted(reporting.REFRESHED_STATES)
        return (
            Q(state=ConnectorState.FAILED, channel__target_state__in=hosted)
            | Q(state=ConnectorState.RUNNING, restart_attempts__gt=0)
            | Q(silence_recorded=False, status_deadline_at__lt=self.at, state__in=refreshed)
            | Q(silence_recorded=True)
            | Q(channel__target_state=TargetState.STOPPED, state__in=refreshed)
            | Q(channel__target_state__in=hosted, state=ConnectorState.UNASSIGNED)
            | (Q(channel__target_state__in=hosted) & ~Q(worker_id__in=sorted(self.live)))
            | Q(move__isnull=False)
        )

    def take_vouch(self, connector: Connector) -> None:
        """A worker vouched in this pass's part of the feed that the connector, which it runs,
        still reports (and no news of it came): its report is dated by this pass."""
        feed = self.feed
        if feed is None or connector.runtime_id in feed.news:
            return
        vouch = feed.vouches.get(connector.worker_id or "")
        if (
            vouch is None
            or connector.runtime_id not in vouch.connector_ids
            or connector.state not in reporting.REFRESHED_STATES
        ):
            return
        feed.taken.add(connector.runtime_id)
        age = vouch.ages[connector.runtime_id]
        self.update_connector(connector, _vouched(vouch, age, self.at))
        self.dated.add(connector.pk)

    def keep_totals(self, connector: Connector, dead_letters: int, sink_retries: int) -> None:
        """The totals only the runtime counts never go backwards here. The re-send gives a
        store that lost them the console's totals to go on from
        (:mod:`console.services.resend`); one that lost only its counters, its connectors'
        desired state intact, goes unnoticed by it: the last totals are then kept until the
        runtime's count passes them."""
        connector.dead_letters = max(connector.dead_letters, dead_letters)
        connector.sink_retries = max(connector.sink_retries, sink_retries)

    # -- 1. workers ------------------------------------------------------------------------

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

    def update_worker(self, worker: Worker, values: dict[str, Any]) -> None:
        """Apply ``values``; the row is written only when one of them differs."""
        if all(getattr(worker, name) == value for name, value in values.items()):
            return
        for name, value in values.items():
            setattr(worker, name, value)
        if any(w is worker for w in (*self.new_workers, *self.changed_workers)):
            return  # written whole, or already to be written
        self.changed_workers.append(worker)

    def worker_event(
        self, worker: Worker, to_state: str, reason: str, from_state: str | None = None
    ) -> None:
        self.events.append(
            lifecycle_event(
                subject_type=SubjectType.WORKER,
                subject_id=worker.worker_id,
                from_state=worker.state if from_state is None else from_state,
                to_state=to_state,
                actor=RECONCILE_ACTOR,
                reason=reason,
                at=self.at,
            )
        )

    # -- 2. placement ----------------------------------------------------------------------

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

    # -- 3. observed status ----------------------------------------------------------------

    def observe(
        self, connector: Connector, status: ConnectorStatus | None, tasks: _TaskRows
    ) -> None:
        if status is not None and status.generation < connector.generation:
            status = None  # from a driver the connector has since replaced
        if (
            status is not None
            and (status.trace or status.reason)
            and connector.revision is not None
        ):
            # A driver's error may quote its config; the trace and reason are shown to users.
            secrets = self.secrets_of(connector)
            status = replace(
                status,
                trace=scrub(status.trace, secrets),
                reason=scrub(status.reason, secrets)[:_MAX_REASON],
            )
        state, reason, trusted = self.derive_state(connector, status)
        if trusted:
            # derive_state trusts only a reported status: it is not None here.
            status = cast(ConnectorStatus, status)
            if status.generation > connector.generation:
                connector.generation = status.generation
                self.new_generations[connector.pk] = connector
            stamp = _timestamp(status.updated_at)
            last_status_at = stamp or connector.last_status_at
            self.update_connector(
                connector,
                {
                    **self.report_seen(connector, state, status, stamp),
                    "trace": status.trace,
                    "driver_id": status.driver_id or "",
                    "status_reason": self.kept_reason(connector, state, status.reason),
                    "finished": status.finished or self.finished_stays(connector, state),
                    "last_status_at": last_status_at,
                    "dead_letters": status.dead_letters,
                    "sink_retries": status.sink_retries,
                    **self.counts_since_first_start(connector, status),
                    "batch_seconds": _batch_seconds(status.progress, connector.batch_seconds),
                },
            )
            if state in (ConnectorState.STOPPED, ConnectorState.UNASSIGNED) and not status.tasks:
                # A worker's word that no driver runs it lists no tasks: they are parked, not
                # gone (their offsets stay; parked_lag reads their lag from the brokers).
                self.park_tasks(connector, state, tasks.of(connector))
            else:
                self.mirror_tasks(connector, state, status.tasks, tasks.of(connector))
        elif state in (ConnectorState.STOPPED, ConnectorState.UNASSIGNED):
            # No driver runs it (or none is believed to): neither its driver nor the
            # runtime's reason is shown (but a finished run's); the connector's event says why.
            self.update_connector(
                connector,
                {
                    "driver_id": "",
                    "status_reason": self.kept_reason(connector, state, ""),
                    "status_deadline_at": None,
                },
            )
            self.park_tasks(connector, state, tasks.of(connector))
        # Else no trusted report and the state kept: its deadline stands, so a status that
        # vanished (or an old generation's, still there) turns NOT_REPORTING when it passes.
        self.set_connector_state(connector, state, reason)
        self.note_silence(connector)
        if trusted and state == ConnectorState.STOPPED and cast(ConnectorStatus, status).finished:
            self.stop_finished(connector, reason)

    @staticmethod
    def counts_since_first_start(connector: Connector, status: ConnectorStatus) -> dict[str, Any]:
        """The report's stage and rule counts with what earlier drivers counted added
        (:mod:`console.services.count_totals`)."""
        if not status.stages and not status.rules:
            return {
                "stage_metrics": count_totals.resting(connector.stage_metrics),
                "rule_metrics": count_totals.resting(connector.rule_metrics),
            }
        driver = f"{status.driver_id or ''}/{status.application_id or ''}"
        base, stages, rules = count_totals.carry(
            connector.count_base, driver, status.stages, status.rules
        )
        return {"stage_metrics": stages, "rule_metrics": rules, "count_base": base}

    @staticmethod
    def finished_stays(connector: Connector, state: str) -> bool:
        """A finished run's connector that stays STOPPED: later reports of the same stop (its
        worker's as the driver ends, none at all once it is gone) say nothing new."""
        return (
            connector.finished
            and connector.state == ConnectorState.STOPPED
            and state == ConnectorState.STOPPED
        )

    @staticmethod
    def kept_reason(connector: Connector, state: str, reason: str) -> str:
        """``reason``, or, when it says nothing and the connector is a finished run that stays
        STOPPED, why the run finished ("available-now run finished: …"): shown until the
        channel runs again."""
        if not reason and _Pass.finished_stays(connector, state):
            return connector.status_reason
        return reason

    def note_silence(self, connector: Connector) -> None:
        """Record, once each, that the connector is NOT_REPORTING (as the readers judge it, at
        this pass) and that it reports again (``silence_recorded`` remembers which was
        recorded last). The readers never wait for this record: it is the timeline's."""
        judged = reporting.of_connector(connector, at=self.at)
        silent = not judged.reporting
        if silent == connector.silence_recorded:
            return
        if silent:
            self.connector_event(connector, ShownState.NOT_REPORTING, judged.reason)
        else:
            why = (
                "reports again"
                if connector.status_seen_at == self.at or connector.pk in self.dated
                else f"no report awaited any more ({connector.state} is the control loop's own)"
            )
            self.connector_event(
                connector, connector.state, why, from_state=ShownState.NOT_REPORTING
            )
        connector.silence_recorded = silent
        self.connector_changed(connector)
        self.reporting_changed.add(connector.channel_id)

    def report_seen(
        self,
        connector: Connector,
        state: str,
        status: ConnectorStatus,
        stamp: datetime | None,
    ) -> dict[str, Any]:
        """The liveness fields of a trusted report: a report is new when its ``updated_at``
        (the reporter's clock, compared only with itself) differs from the stored one, and it
        is then dated by the pass (the console's clock); a report read again keeps its date,
        so one nobody refreshes runs out (:mod:`console.selectors.reporting`)."""
        interval = max(0.0, float(status.report_interval or 0.0))
        news = self.feed.news.get(connector.runtime_id) if self.feed is not None else None
        if news is not None and not news.reporting:
            # Its owner says its driver stopped refreshing it: not believed from now on.
            last = connector.status_seen_at or self.at
            deadline = reporting.deadline(state, last, interval)
            return {
                "status_seen_at": last,
                "report_interval": interval,
                "status_deadline_at": None if deadline is None else min(deadline, self.at - _TICK),
            }
        if news is not None:
            # News read on the way through a backlog may be old: it dates nothing.
            new = connector.status_seen_at is None or bool(self.feed and self.feed.caught_up)
        else:
            new = connector.status_seen_at is None or (
                stamp is not None and stamp != connector.last_status_at
            )
        seen_at = self.at if new else connector.status_seen_at
        return {
            "status_seen_at": seen_at,
            "report_interval": interval,
            "status_deadline_at": reporting.deadline(state, seen_at, interval),
        }

    def update_connector(self, connector: Connector, values: dict) -> None:
        """Apply ``values`` to the connector; it is written only when one of them differs."""
        if all(getattr(connector, name) == value for name, value in values.items()):
            return
        for name, value in values.items():
            setattr(connector, name, value)
        self.connector_changed(connector)

    def stop_finished(self, connector: Connector, reason: str) -> None:
        """An available-now run reached the end of its source: the channel's target follows.

        Done as a user's stop is (target STOPPED, then told to the runtime, restart count
        reset), recorded as a channel event by the control loop. Starting the channel again runs
        it again from its checkpoint, as a new generation (:func:`console.services.start_channel`),
        so this run's report is not taken for the next one's.
        """
        channel = connector.channel
        if channel.target_state != TargetState.RUNNING:
            return
        event = lifecycle_event(
            channel=channel,
            subject_type=SubjectType.CHANNEL,
            subject_id=channel.name,
            from_state=channel.target_state,
            to_state=TargetState.STOPPED,
            actor=RECONCILE_ACTOR,
            reason=reason or "available-now run finished",
            at=self.at,
            secrets=self.secrets_of(connector),
        )
        self.finished_runs.append((connector, connector.generation, event))
        if connector.restart_attempts:
            connector.restart_attempts = 0
            self.new_attempts[connector.pk] = connector

    def derive_state(
        self, connector: Connector, status: ConnectorStatus | None
    ) -> tuple[str, str, bool]:
        """``(state, reason, whether the status is to be trusted as-is)``."""
        target = connector.channel.target_state
        if target in HOSTED_TARGETS and connector.worker_id not in self.live:
            return ConnectorState.UNASSIGNED, "no live runtime worker to host it", False
        if status is None:
            if (
                self.feed is not None
                and connector.state in _ACTIVE_STATES
                and connector.worker_id in self.live
            ):
                # No news of it in this pass, not no status: its live worker's last word (a
                # query still stopping, say) stands until the next.
                return connector.state, "", False
            if target == TargetState.STOPPED:
                return ConnectorState.STOPPED, "stopped and not reported by the runtime", False
            return connector.state, "", False
        state = ConnectorState(str(status.state))
        reporter = status.worker_id
        if state in _ACTIVE_STATES and reporter is not None and reporter not in self.live:
            derived = (
                ConnectorState.UNASSIGNED if target in HOSTED_TARGETS else ConnectorState.STOPPED
            )
            return derived, f"worker {reporter} that reported it {state} is dead", False
        if status.reason:
            return state, status.reason, True
        if state == ConnectorState.FAILED:
            return state, summarize_trace(status.trace), True
        return state, f"reported by worker {reporter}" if reporter else "reported", True

    def set_connector_state(
        self, connector: Connector, state: str, reason: str, *, always_record: bool = False
    ) -> None:
        if state == connector.state and not always_record:
            return
        self.connector_event(connector, state, reason)
        if state != connector.state:
            connector.state = state
            connector.state_changed_at = self.at
            self.connector_changed(connector)

    def connector_changed(self, connector: Connector) -> None:
        self.changed_connectors[connector.pk] = connector

    # -- 4. restart policy -----------------------------------------------------------------

    def apply_restart_policy(self, connector: Connector, was: str) -> None:
        """Restart a FAILED connector when its channel's policy and backoff allow it."""
        if connector.state == ConnectorState.RUNNING:
            self.maybe_reset_attempts(connector)
            return
        channel = connector.channel
        if (
            connector.state != ConnectorState.FAILED
            or channel.target_state not in HOSTED_TARGETS
            or connector.worker_id not in self.live
        ):
            return
        policy = RestartPolicy.of(channel)
        if not policy.restarts:
            return
        failure = summarize_trace(connector.trace)
        attempt = connector.restart_attempts + 1
        if attempt > policy.max_attempts:
            if was != ConnectorState.FAILED:  # once, as it turns FAILED
                self.connector_event(
                    connector,
                    ConnectorState.FAILED,
                    f"restart policy exhausted after {connector.restart_attempts} attempts; "
                    f"last failure: {failure}",
                )
            return
        failed_at = connector.state_changed_at or self.at
        if (self.at - failed_at).total_seconds() < policy.delay(attempt):
            return
        connector.generation = self.runtime.restart(connector.runtime_id)
        self.new_generations[connector.pk] = connector
        connector.restart_attempts = attempt
        self.new_attempts[connector.pk] = connector
        self.restarts += 1
        reason = f"automatic restart {attempt}/{policy.max_attempts} after failure: {failure}"
        self.set_connector_state(connector, ConnectorState.RESTARTING, reason[:_MAX_REASON])

    def maybe_reset_attempts(self, connector: Connector) -> None:
        since = connector.state_changed_at
        if not connector.restart_attempts or since is None:
            return
        running_for = (self.at - since).total_seconds()
        if running_for < self.restart_reset:
            return
        self.connector_event(
            connector,
            ConnectorState.RUNNING,
            f"restart attempts reset after {running_for:.0f} s RUNNING "
            f"(was {connector.restart_attempts})",
        )
        connector.restart_attempts = 0
        self.new_attempts[connector.pk] = connector

    def secrets_of(self, connector: Connector) -> list[str]:
        """The plaintext secrets of the connector's deployed revision (decrypted once a pass)."""
        revision = connector.revision
        if revision is None:
            return []
        if revision.pk not in self.secrets:
            self.secrets[revision.pk] = plain_secret_values(revision.spec)
        return self.secrets[revision.pk]

    def connector_event(
        self, connector: Connector, state: str, reason: str, *, from_state: str | None = None
    ) -> None:
        """Record a connector's move from its current state (or ``from_state``) to ``state``
        (not applied).

        The reason (often a trace's error line) is masked with the revision's secrets."""
        reason = mask_known_secrets(reason, self.secrets_of(connector))
        with log_context(channel=connector.channel.name, connector=connector.runtime_id):
            logger.info("connector %s → %s: %s", from_state or connector.state, state, reason)
        self.events.append(
            lifecycle_event(
                channel=connector.channel,
                subject_type=SubjectType.CONNECTOR,
                subject_id=connector.runtime_id,
                from_state=connector.state if from_state is None else from_state,
                to_state=state,
                actor=RECONCILE_ACTOR,
                reason=reason,
                at=self.at,
            )
        )

    # -- tasks -----------------------------------------------------------------------------

    def mirror_tasks(
        self,
        connector: Connector,
        connector_state: str,
        reported: list[TaskStatus],
        tasks: dict[int, Task],
    ) -> None:
        """Make the connector's task rows equal to the reported tasks.

        A new task is recorded as an event only when its state is not its connector's.
        """
        wanted = {task.task_id: task for task in reported}
        self.gone_tasks.extend(task.pk for task_id, task in tasks.items() if task_id not in wanted)
        for task_id, status in wanted.items():
            values: dict[str, Any] = {
                "state": ConnectorState(str(status.state)),
                "worker_id": status.worker_id,
                "topic": status.topic,
                "partition": status.partition,
                "offset": status.offset,
                "end_offset": status.end_offset,
                "lag": status.lag,
                "rows_per_second": status.rows_per_second,
            }
            reason = f"reported by worker {status.worker_id}" if status.worker_id else "reported"
            task = tasks.get(task_id)
            if task is None:
                task = Task(connector=connector, task_id=task_id, updated=self.at, **values)
                if values["state"] != connector_state:  # else the connector's event says it
                    self.task_event(connector, task, "", values["state"], reason)
                self.new_tasks.append(task)
            else:
                self.update_task(connector, task, values, reason)

    def park_tasks(self, connector: Connector, state: str, tasks: dict[int, Task]) -> None:
        """No driver runs the connector: its tasks take its state and keep their offsets;
        nothing flows (rows/s 0). Their lag is then refreshed from the brokers' end offsets
        (:mod:`console.services.parked_lag`).

        Not recorded as task events: the connector's own event says why.
        """
        for task in tasks.values():
            values = {"state": state, "worker_id": None, "rows_per_second": 0.0}
            self.update_task(connector, task, values, reason=None)

    def update_task(
        self, connector: Connector, task: Task, values: dict, reason: str | None
    ) -> None:
        """Apply ``values``; a state change is recorded unless ``reason`` is None."""
        if all(getattr(task, name) == value for name, value in values.items()):
            return
        if reason is not None and values["state"] != task.state:
            self.task_event(connector, task, task.state, values["state"], reason)
        for name, value in values.items():
            setattr(task, name, value)
        task.updated = self.at
        self.changed_tasks.append(task)

    def task_event(
        self, connector: Connector, task: Task, from_state: str, to_state: str, reason: str
    ) -> None:
        self.events.append(
            lifecycle_event(
                channel=connector.channel,
                subject_type=SubjectType.TASK,
                subject_id=f"{connector.runtime_id}/{task.task_id}",
                from_state=from_state,
                to_state=to_state,
                actor=RECONCILE_ACTOR,
                reason=reason,
                at=self.at,
            )
        )

    # -- writing ---------------------------------------------------------------------------

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

    def save_feed(self) -> None:
        """Date the reports of the connectors a worker vouched for that the pass did not look
        at (an UPDATE for each age in the vouch), and store where the feed is to be read
        next."""
        feed = self.feed
        if feed is None:
            return
        skip = feed.taken | set(feed.news)
        for worker_id, vouch in feed.vouches.items():
            by_age: dict[float, list[str]] = {}
            for cid, age in vouch.ages.items():
                if cid not in skip:
                    by_age.setdefault(age, []).append(cid)
            for age, ids in sorted(by_age.items()):  # (whole seconds: a few UPDATEs a worker)
                Connector.objects.filter(
                    worker_id=worker_id,
                    runtime_id__in=sorted(ids),
                    state__in=sorted(reporting.REFRESHED_STATES),
                    silence_recorded=False,
                ).update(**_vouched(vouch, age, self.at))
        LoopCursor.objects.update_or_create(
            name=_FEED_CURSOR,
            defaults={
                "position": {str(p): o for p, o in feed.cursor.items()},
                "written_at": self.at,
                "resync_slice": (feed.slice + 1) % resync_slices(),
            },
        )

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


def _batch_seconds(progress: Any, before: float | None) -> float | None:
    """The latest micro-batch's duration from a progress report (Spark's
    ``durationMs.triggerExecution``); what was known before when the report has none."""
    durations = progress.get("durationMs") if isinstance(progress, dict) else None
    total = durations.get("triggerExecution") if isinstance(durations, dict) else None
    if isinstance(total, (int, float)) and not isinstance(total, bool):
        return float(total) / 1000.0
    return before
