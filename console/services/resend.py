"""Re-sending the console's desired state to a runtime that lost it (the control loop's part).

The database is the truth of what should run: every channel's connector (its deployed
revision, target, assigned worker and generation) and every running replay or redrive. The
runtime's store can lose it (Redis restarted empty, a lost volume, keys removed by hand).
Every pass of the control loop (:mod:`console.services.reconcile`) checks, in one cheap read
(:meth:`RuntimeAdapter.desired_summary`), the runtime's epoch token and how many connectors
it holds, against the database's count:

* **token missing** (the store was emptied, or never filled by this console): every
  connector is re-sent in one batch (:meth:`RuntimeAdapter.restore`, which fills in only what
  the runtime lacks and raises generations the runtime holds lower, as a deploy made since
  the loss leaves them), then a fresh token is set (:meth:`RuntimeAdapter.set_epoch`).
  Runtime workers and drivers hold still while the token is missing after they saw one, so
  nothing stops meanwhile. A fresh installation gets its token on its first pass.
* **fewer connectors than the database** (a partial loss): the missing ones are found
  (:meth:`RuntimeAdapter.desired_connectors`, read only then) and re-sent; the token stays.
* otherwise nothing more is read or written: the work of a pass does not grow with the
  fleet while nothing is lost. A count that differs only because the runtime holds extra
  connectors (left by a delete it did not hear of) is looked into once, not every pass.

A re-sent connector is what its last deploy sent (:func:`deployment_for`,
:func:`run_deployment`) with the console's generation, never 0: a driver's report is
accepted only at the generation the store holds. Its counters kept only in the runtime
(dead letters, sink retries: ``HINCRBY`` totals) go on from the totals the console last read
when the runtime's are below them, so a total shown never goes backwards (the events counted
between the console's last read and the loss are the only ones missed). A pending offset
change (KIP-875) is kept only by the runtime and is not re-sent: set it again if the store
was lost before the channel's next start.

Each re-sent connector gets a lifecycle event, and the pass logs one line with the counts
("runtime store had lost its desired state: re-sent N connectors").
"""

from __future__ import annotations

import logging
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime

from console.choices import RunState, SubjectType
from console.models import ChannelDiscovery, ChannelRun, Connector, LifecycleEvent
from console.services.deployments import deployment_for
from console.services.lifecycle import RECONCILE_ACTOR, lifecycle_event
from runtime_adapter.base import Restoration, RuntimeAdapter

logger = logging.getLogger(__name__)

_checked: tuple[str | None, int, int] | None = None
"""``(token, runtime's count, database's count)`` last looked into and found missing nothing
(the runtime held extra connectors): not looked into again while it stays the same."""


@dataclass
class Resent:
    """What one pass re-sent: counts and the lifecycle events to save with the pass."""

    emptied: bool = False
    """The runtime had no epoch token (emptied, or never filled)."""
    connectors: int = 0
    runs: int = 0
    events: list[LifecycleEvent] = field(default_factory=list)


def resend_lost(
    runtime: RuntimeAdapter,
    connectors: Callable[[], list[Connector]],
    live: set[str],
    at: datetime,
    *,
    count: int | None = None,
) -> Resent:
    """Re-send what the runtime lacks of ``connectors()`` (every connector row, as the pass
    reads them: loaded only when something is missing) and of the running runs (placed on
    their channel's worker when it is in ``live``, else on the first live one); when the
    runtime had no token, re-send them all (filling in, never overwriting) and set a fresh
    one. Runtime errors propagate (the pass is retried whole). ``count``: how many connector
    rows there are, when the caller has read them all already (else counted here)."""
    global _checked
    summary = runtime.desired_summary()
    rows = Connector.objects.count() if count is None else count
    expected = rows + ChannelRun.objects.exclude(runtime_id="").count()
    signature = (summary.epoch, summary.connectors, expected)
    if summary.epoch is not None and (summary.connectors == expected or signature == _checked):
        return Resent()
    emptied = summary.epoch is None
    every = connectors()
    held = runtime.desired_connectors()
    lost = [c for c in every if c.runtime_id not in held]
    restorations = _connector_restorations(every if emptied else lost, live)
    runs = _run_restorations(set() if emptied else held, every, live)
    runtime.restore(restorations + runs)
    if emptied:
        runtime.set_epoch(uuid.uuid4().hex)
    lost_ids = {c.runtime_id for c in lost}
    resent = Resent(
        emptied=emptied,
        connectors=sum(r.deployment.connector_id in lost_ids for r in restorations),
        runs=sum(r.deployment.connector_id not in held for r in runs),
    )
    if not emptied and not resent.connectors and not resent.runs:
        _checked = signature
    _report(resent, lost, restorations, len(restorations) + len(runs), at)
    return resent


def _connector_restorations(connectors: list[Connector], live: set[str]) -> list[Restoration]:
    """The channels' ``connectors`` as their last deploy sent them, hosted by their worker
    when it is in ``live`` (a fixed number of queries: the channels that discover their
    schema are few, read whole, not by id)."""
    if not connectors:
        return []
    discovering = set(
        ChannelDiscovery.objects.filter(enabled=True).values_list("channel_id", flat=True)
    )
    restorations = []
    for connector in connectors:
        if connector.revision is None:
            logger.warning("connector %s has no deployed revision to re-send", connector)
            continue
        channel = connector.channel
        deployment = deployment_for(
            channel,
            connector,
            connector.revision,
            target=channel.target_state,
            discovery=channel.pk in discovering,
            live=live,
        )
        restorations.append(
            Restoration(
                deployment,
                dead_letters=connector.dead_letters,
                sink_retries=connector.sink_retries,
            )
        )
    return restorations


def _run_restorations(
    held: set[str], connectors: list[Connector], live: set[str]
) -> list[Restoration]:
    """The running replays and redrives whose connector is not in ``held``."""
    # Imported here: run_executor imports the control loop, which imports this module.
    from console.services.run_executor import run_deployment

    by_channel = {c.channel_id: c for c in connectors}
    restorations = []
    for run in (
        ChannelRun.objects.select_related("channel", "revision")
        .filter(state=RunState.RUNNING)
        .exclude(runtime_id="")
    ):
        if run.runtime_id in held:
            continue
        revision = run.revision or run.channel.latest_revision_obj()
        if revision is None:
            continue
        own = by_channel.get(run.channel_id)
        worker = own.worker_id if own is not None and own.worker_id in live else None
        if worker is None and live:
            worker = min(live)
        restorations.append(Restoration(run_deployment(run, revision, worker, run.runtime_id)))
    return restorations


def _report(
    resent: Resent,
    lost: list[Connector],
    restorations: list[Restoration],
    sent: int,
    at: datetime,
) -> None:
    """The log line with the counts, and an event for each connector the runtime had lost
    (``sent``: how many were sent, filled in where something lacked)."""
    total = resent.connectors + resent.runs
    if not total:
        if resent.emptied:
            logger.info(
                "runtime store had no epoch token and lacked no connector: the desired state "
                "of %d connectors confirmed, token set",
                sent,
            )
        return
    what = "lost its desired state" if resent.emptied else "lost part of its desired state"
    logger.warning(
        "runtime store had %s: re-sent %d connectors (%d channels, %d runs)",
        what,
        total,
        resent.connectors,
        resent.runs,
    )
    by_id = {c.runtime_id: c for c in lost}
    for restoration in restorations:
        deployment = restoration.deployment
        connector = by_id.get(deployment.connector_id)
        if connector is None:
            continue  # held by the runtime: filled in, not lost
        worker = deployment.worker_id or "none"
        resent.events.append(
            lifecycle_event(
                channel=connector.channel,
                subject_type=SubjectType.CONNECTOR,
                subject_id=connector.runtime_id,
                from_state=connector.state,
                to_state=connector.state,
                actor=RECONCILE_ACTOR,
                reason=(
                    f"runtime store had {what}: re-sent revision {deployment.revision}, "
                    f"target {deployment.target_state}, worker {worker}, "
                    f"generation {deployment.generation}"
                ),
                at=at,
            )
        )
