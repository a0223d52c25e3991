"""Whether a connector still reports: the state the console shows, judged when read.

A status is a claim with a date, and the date that counts is the console's own: the control
loop stores, by its clock, when it first read each new report (``Connector.status_seen_at``,
a report being new when its ``updated_at`` differs from the one stored) and the report's
promise (``report_interval``: its reporter rewrites it at least that often). A report whose
state its reporter keeps refreshing (:data:`REFRESHED_STATES`) is believed until
``status_seen_at + 2 * report_interval`` (``Connector.status_deadline_at``, stored with it);
past that the connector is shown NOT_REPORTING, since its last report.

The driver's own ``updated_at`` (``last_status_at``) is never compared with the console's
clock: a host whose clock is ahead or behind neither hides nor fakes a silence. The judgement
is made by whoever reads (the API, the fleet list's filters and sorting, health, the Connect
facade, ``/metrics``), so it holds when nothing is written: with Redis or Celery down no
control-loop pass runs, and the read itself says "not reporting since T".
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from django.db.models import Q
from django.utils import timezone

from console.choices import ConnectorState, ShownState

#: A report is believed for this many of its intervals after the console first read it.
MISSED_REPORTS = 2

#: Reported states that claim an owner is at work and keeps saying so: a driver runs (or
#: pauses, or is restarting) the query, or a worker holds the connector while it waits (a
#: source topic, a free core). FAILED and STOPPED are final facts about a query that no
#: longer runs: they stay true when nobody repeats them.
REFRESHED_STATES = frozenset(
    state.value
    for state in (
        ConnectorState.RUNNING,
        ConnectorState.PAUSED,
        ConnectorState.RESTARTING,
        ConnectorState.UNASSIGNED,
    )
)


def now() -> datetime:
    """The console's clock (one place, so that tests can move it)."""
    return timezone.now()


def deadline(state: str, seen_at: datetime | None, report_interval: float) -> datetime | None:
    """Until when a report of ``state`` first read at ``seen_at`` is believed (``None``:
    for good: a final state, or a report that promises no refresh)."""
    if seen_at is None or report_interval <= 0 or state not in REFRESHED_STATES:
        return None
    return seen_at + timedelta(seconds=MISSED_REPORTS * report_interval)


@dataclass(frozen=True)
class Reporting:
    """A connector's reporting as read at one instant."""

    reporting: bool
    """False: its state is one its reporter keeps refreshing and the refresh is overdue."""
    since: datetime | None = None
    """Not reporting: when its last report was seen (the console's clock)."""
    silent_seconds: float | None = None
    """Not reporting: seconds since ``since``."""
    report_interval: float | None = None
    """The last report's interval (``None`` when it promised none)."""

    @property
    def reason(self) -> str:
        """``not reporting since T (no status for N s; reports every R s)``; empty when
        reporting."""
        if self.reporting or self.since is None:
            return ""
        return (
            f"not reporting since {self.since.isoformat(timespec='seconds')} "
            f"(no status for {self.silent_seconds or 0:.0f} s; "
            f"reports every {self.report_interval or 0:g} s)"
        )


REPORTING = Reporting(reporting=True)


def judge(
    *,
    state: str | None,
    seen_at: datetime | None,
    deadline_at: datetime | None,
    report_interval: float | None,
    at: datetime | None = None,
) -> Reporting:
    """Whether a connector with these stored values still reports at ``at`` (default:
    :func:`now`)."""
    if state not in REFRESHED_STATES or deadline_at is None or seen_at is None:
        return REPORTING
    at = now() if at is None else at
    if at <= deadline_at:
        return Reporting(reporting=True, report_interval=report_interval or None)
    return Reporting(
        reporting=False,
        since=seen_at,
        silent_seconds=max(0.0, (at - seen_at).total_seconds()),
        report_interval=report_interval or None,
    )


def of_connector(connector: Any, *, at: datetime | None = None) -> Reporting:
    """:func:`judge` of a :class:`~console.models.Connector` (``None``: never deployed)."""
    if connector is None:
        return REPORTING
    return judge(
        state=connector.state,
        seen_at=connector.status_seen_at,
        deadline_at=connector.status_deadline_at,
        report_interval=connector.report_interval,
        at=at,
    )


def of_row(row: Any, *, at: datetime | None = None, prefix: str = "connector__") -> Reporting:
    """:func:`judge` of a ``values()`` row holding ``<prefix>state``, ``status_seen_at``,
    ``status_deadline_at`` and ``report_interval``."""
    return judge(
        state=row[f"{prefix}state"],
        seen_at=row[f"{prefix}status_seen_at"],
        deadline_at=row[f"{prefix}status_deadline_at"],
        report_interval=row[f"{prefix}report_interval"],
        at=at,
    )


#: The stored fields :func:`of_row` reads (prefix them as the query needs).
ROW_FIELDS = ("state", "status_seen_at", "status_deadline_at", "report_interval")


def shown(state: str | None, reporting: Reporting) -> str:
    """The state shown: NOT_REPORTING in place of an overdue one; STOPPED when never
    deployed."""
    if not reporting.reporting:
        return ShownState.NOT_REPORTING
    return state or ShownState.STOPPED


def shown_state(connector: Any, *, at: datetime | None = None) -> str:
    """The shown state of a connector (``None``: never deployed)."""
    return shown(connector.state if connector is not None else None, of_connector(connector, at=at))


def not_reporting_q(at: datetime | None = None, *, prefix: str = "connector__") -> Q:
    """The rows not reporting at ``at``, in SQL: the same rule as :func:`judge` (a deadline is
    stored only for the refreshed states)."""
    at = now() if at is None else at
    return Q(
        **{
            f"{prefix}status_deadline_at__lt": at,
            f"{prefix}state__in": sorted(REFRESHED_STATES),
        }
    )
