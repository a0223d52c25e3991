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

from console.services.reconcile.feed import resync_slices
from console.services.reconcile.loop import note_runtime_unreadable, reconcile
from console.services.reconcile.state import ReconcileReport, StalePass, summarize_trace

__all__ = [
    "ReconcileReport",
    "StalePass",
    "note_runtime_unreadable",
    "reconcile",
    "resync_slices",
    "summarize_trace",
]
