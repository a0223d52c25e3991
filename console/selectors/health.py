"""Channel health: one summary per channel that sorts the fleet and explains itself.

:func:`assess` is a pure function of what the control plane already knows of a channel
(its observed and requested state, its stage counts, dead letters, lag, automatic restarts
and when it last ran healthy), so the rules are unit-tested without a runtime. Each rule
that fires takes points off a score of 100 and adds one sentence to the explanation; the
level is the worst one a rule gave (``ok`` < ``warning`` < ``critical``). A stopped channel
the user asked to stop is ``idle`` (not unhealthy, sorted after the others). A connector whose
reports stopped (:mod:`console.selectors.reporting`, judged by the console's clock when read)
is assessed as ``NOT_REPORTING``: critical, with since when and for how long.

The lag trend needs a past value: the history store gives it (lag now against lag some
minutes ago); without one the rule about a growing lag does not fire.
"""

from __future__ import annotations

import dataclasses
import time
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any

from django.db.models import Count

from console.choices import SubjectType
from console.models import Channel, LifecycleEvent
from console.selectors import reporting as reporting_

#: Levels from best to worst (``idle``: stopped on purpose, nothing to judge).
LEVELS = ("idle", "ok", "warning", "critical")

#: Thresholds of the rules (fractions of the events that entered the source).
FAILURE_RATE_WARNING = 0.001
FAILURE_RATE_CRITICAL = 0.05
DEAD_LETTER_RATE_WARNING = 0.001
DEAD_LETTER_RATE_CRITICAL = 0.05
#: A lag that grew by more than this factor (and by at least LAG_GROWTH_MIN records).
LAG_GROWTH_FACTOR = 1.5
LAG_GROWTH_MIN = 1000
#: Seconds without a healthy report of a channel that should run.
STALE_WARNING_SECONDS = 120.0
STALE_CRITICAL_SECONDS = 600.0
#: Seconds a channel asked to run may take to start (placed, its query started) before
#: being "asked to run but …" counts against it: a start takes a few seconds, a new driver's
#: JVM more.
STARTING_GRACE_SECONDS = 90.0
#: Failures in the last hour (FAILED transitions) that make a warning, then a critical.
RECENT_FAILURES_WARNING = 1
RECENT_FAILURES_CRITICAL = 3
#: The window of the recent failures.
RECENT_FAILURES_SECONDS = 3600.0
#: The states of a connector on its way to running.
STARTING_STATES = frozenset({"UNASSIGNED", "RESTARTING"})


@dataclass(frozen=True)
class Signals:
    """What the health rules read of one channel."""

    state: str
    """The state shown (``RUNNING``, ``FAILED``, ``STOPPED``, ``NOT_REPORTING``, …)."""
    target_state: str
    """The state the user asked for (``RUNNING``, ``STOPPED``, ``PAUSED``)."""
    events_in: int = 0
    """Events that entered the source since the channel was first started."""
    failed: int = 0
    """Events a stage failed since the channel was first started (stages and rules summed)."""
    dead_letters: int = 0
    """Dead letters among ``events_in`` (same window as ``events_in``)."""
    lag: float | None = None
    lag_before: float | None = None
    """The lag some minutes ago (from the history store), for the trend."""
    restarts: int = 0
    """Automatic restarts since the connector last ran healthy."""
    seconds_since_success: float | None = None
    """Seconds since the channel was last seen RUNNING (``None``: unknown). Without the
    history store this is the time since the connector left its last state (a lower bound)."""
    not_reporting: str = ""
    """NOT_REPORTING: since when and for how long (:attr:`Reporting.reason`)."""
    recent_failures: int = 0
    """Times the connector turned FAILED in the last :data:`RECENT_FAILURES_SECONDS` (a
    channel restarted after failing is not healthy only because it runs now)."""


@dataclass(frozen=True)
class Health:
    score: int
    """0 (worst) .. 100 (healthy); ``idle`` channels score 100."""
    level: str
    reasons: list[str] = field(default_factory=list)
    failure_rate: float | None = None
    dead_letter_rate: float | None = None
    lag_trend: float | None = None
    """Lag now minus lag before (records; positive: falling behind)."""
    restarts: int = 0
    seconds_since_success: float | None = None
    last_success_at: datetime | None = None
    """When the channel was last seen running (see :func:`from_record`)."""

    @property
    def explanation(self) -> str:
        """One human sentence per rule that fired (shown on hover in the console)."""
        return " ".join(self.reasons) if self.reasons else "Healthy: nothing to report."

    def as_dict(self) -> dict[str, Any]:
        return {
            "score": self.score,
            "level": self.level,
            "explanation": self.explanation,
            "reasons": list(self.reasons),
            "failure_rate": self.failure_rate,
            "dead_letter_rate": self.dead_letter_rate,
            "lag_trend": self.lag_trend,
            "restarts": self.restarts,
            "last_success_at": self.last_success_at,
        }


def _worse(a: str, b: str) -> str:
    return a if LEVELS.index(a) >= LEVELS.index(b) else b


def assess(signals: Signals) -> Health:
    """The health of one channel (see the module's docstring for the rules)."""
    s = signals
    failure_rate = s.failed / s.events_in if s.events_in > 0 else None
    dead_letter_rate = s.dead_letters / s.events_in if s.events_in > 0 else None
    lag_trend = s.lag - s.lag_before if s.lag is not None and s.lag_before is not None else None

    def health(score: int, level: str, reasons: list[str]) -> Health:
        return Health(
            score=score,
            level=level,
            reasons=reasons,
            failure_rate=failure_rate,
            dead_letter_rate=dead_letter_rate,
            lag_trend=lag_trend,
            restarts=s.restarts,
            seconds_since_success=s.seconds_since_success,
        )

    if s.target_state == "STOPPED" and s.state in ("STOPPED", "UNASSIGNED", ""):
        return health(100, "idle", ["Stopped on purpose."])

    score = 100
    level = "ok"
    reasons: list[str] = []

    def fire(points: int, at: str, text: str) -> None:
        nonlocal score, level
        score -= points
        level = _worse(level, at)
        reasons.append(text)

    starting = (
        s.target_state == "RUNNING"
        and s.state in STARTING_STATES
        and s.seconds_since_success is not None
        and s.seconds_since_success < STARTING_GRACE_SECONDS
    )
    if s.state == "NOT_REPORTING":
        why = s.not_reporting or "not reporting"
        fire(60, "critical", f"{why[0].upper()}{why[1:]}: its last state is unknown.")
    elif s.state == "FAILED":
        fire(60, "critical", "The channel FAILED.")
    elif starting:
        # No ticking count of seconds: the same health twice in a row reads the same.
        reasons.append(
            f"Starting ({s.state}): a warning if not RUNNING within {STARTING_GRACE_SECONDS:.0f} s."
        )
    elif s.target_state == "RUNNING" and s.state != "RUNNING":
        fire(20, "warning", f"Asked to run but {s.state or 'not placed'}.")
    if s.recent_failures >= RECENT_FAILURES_CRITICAL:
        fire(30, "critical", f"Failed {s.recent_failures} times in the last hour.")
    elif s.recent_failures >= RECENT_FAILURES_WARNING and s.state != "FAILED":
        times = "once" if s.recent_failures == 1 else f"{s.recent_failures} times"
        fire(10, "warning", f"Failed {times} in the last hour.")
    if failure_rate is not None:
        pct = f"{failure_rate:.2%}"
        if failure_rate >= FAILURE_RATE_CRITICAL:
            fire(40, "critical", f"{pct} of events failed a stage ({s.failed} of {s.events_in}).")
        elif failure_rate >= FAILURE_RATE_WARNING:
            fire(15, "warning", f"{pct} of events failed a stage ({s.failed} of {s.events_in}).")
    if dead_letter_rate is not None:
        pct = f"{dead_letter_rate:.2%}"
        if dead_letter_rate >= DEAD_LETTER_RATE_CRITICAL:
            fire(30, "critical", f"{pct} of events became dead letters ({s.dead_letters}).")
        elif dead_letter_rate >= DEAD_LETTER_RATE_WARNING:
            fire(10, "warning", f"{pct} of events became dead letters ({s.dead_letters}).")
    if (
        lag_trend is not None
        and s.lag is not None
        and s.lag_before is not None
        and lag_trend >= LAG_GROWTH_MIN
        and s.lag >= LAG_GROWTH_FACTOR * max(s.lag_before, 1.0)
    ):
        fire(20, "warning", f"Lag grows: {s.lag_before:.0f} → {s.lag:.0f} records.")
    if s.restarts >= 3:
        fire(
            30, "critical", f"Restarted automatically {s.restarts} times since it last ran healthy."
        )
    elif s.restarts > 0:
        fire(
            10,
            "warning",
            f"Restarted automatically {s.restarts} time(s) since it last ran healthy.",
        )
    if s.target_state == "RUNNING" and s.state != "RUNNING" and not starting:
        since = s.seconds_since_success
        if since is None:
            pass  # unknown: no rule (the state rule above already fired)
        elif since >= STALE_CRITICAL_SECONDS:
            fire(20, "critical", f"Last ran healthy {since / 60:.0f} min ago.")
        elif since >= STALE_WARNING_SECONDS:
            fire(10, "warning", f"Last ran healthy {since:.0f} s ago.")
    return health(max(score, 0), level, reasons)


def sort_key(health: Health) -> tuple[int, int]:
    """Worst first: by level (critical, warning, ok, idle), then by score."""
    return (-LEVELS.index(health.level), health.score)


def signals_from_stages(stages: Any, rules: Any = None) -> tuple[int, int]:
    """(events in, failed) from a connector's ``stage_metrics`` (source ``in``, failures
    summed over every stage) and, for a bus, its ``rule_metrics`` (each rule's failures: its
    own transforms' and its targets'); (0, 0) for anything that is not such a list."""
    events_in = 0
    failed = 0
    for stage in stages if isinstance(stages, list) else []:
        if not isinstance(stage, dict):
            continue
        if stage.get("stage") == "source":
            events_in = max(events_in, _number(stage.get("in")))
        failed += _number(stage.get("failed"))
    for rule in rules if isinstance(rules, list) else []:
        if isinstance(rule, dict):
            failed += _number(rule.get("failed"))
    return events_in, failed


def _number(value: Any) -> int:
    return int(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else 0


def from_record(
    *,
    state: str | None,
    target_state: str,
    stage_metrics: Any,
    dead_letters: int | None,
    restarts: int | None,
    state_changed_at: datetime | None,
    lag: float | None,
    last_status_at: datetime | None = None,
    lag_before: float | None = None,
    reporting: reporting_.Reporting = reporting_.REPORTING,
    now: float | None = None,
    rule_metrics: Any = None,
    recent_failures: int = 0,
) -> Health:
    """The health from what reconcile recorded of a channel's connector (``state`` ``None``:
    never started). The dead letters count since the channel was first started while the
    stage counts restart with its driver, so the dead letters are capped at the events in.
    ``last_success_at``: the last status report of a RUNNING channel; otherwise when it left
    its last state (an approximation until the history store gives the exact time).
    ``reporting``: the connector's reporting as judged at ``now``; not reporting, it is
    assessed as NOT_REPORTING, last seen running (at best) when its last report was read."""
    events_in, failed = signals_from_stages(stage_metrics, rule_metrics)
    observed = reporting_.shown(state, reporting)
    since: float | None
    last_success: datetime | None
    if not reporting.reporting:
        since, last_success = reporting.silent_seconds, reporting.since
    elif observed == "RUNNING":
        since, last_success = 0.0, last_status_at or state_changed_at
    elif state_changed_at is not None:
        since = max(0.0, (time.time() if now is None else now) - state_changed_at.timestamp())
        last_success = state_changed_at
    else:
        since, last_success = None, None
    assessed = assess(
        Signals(
            state=observed,
            target_state=target_state,
            events_in=events_in,
            failed=failed,
            dead_letters=min(dead_letters or 0, events_in),
            lag=lag,
            lag_before=lag_before,
            restarts=restarts or 0,
            seconds_since_success=since,
            not_reporting=reporting.reason,
            recent_failures=recent_failures,
        )
    )
    return dataclasses.replace(assessed, last_success_at=last_success)


def of_channel(
    channel: Channel, *, lag_before: float | None = None, at: datetime | None = None
) -> Health:
    """The health of a channel loaded with its connector and tasks (prefetch-friendly), at
    ``at`` (default: the console's clock now)."""
    at = reporting_.now() if at is None else at
    connector = getattr(channel, "connector", None)  # RelatedObjectDoesNotExist: never started
    if connector is None:
        return from_record(
            state=None,
            target_state=channel.target_state,
            stage_metrics=None,
            dead_letters=0,
            restarts=0,
            state_changed_at=None,
            lag=None,
            now=at.timestamp(),
        )
    lags = [task.lag for task in connector.tasks.all() if task.lag is not None]
    recent = getattr(channel, "recent_failures", None)  # annotated by the lists
    if recent is None:
        recent = recent_failures([channel.pk], at=at).get(channel.pk, 0)
    return from_record(
        state=connector.state,
        target_state=channel.target_state,
        stage_metrics=connector.stage_metrics,
        dead_letters=connector.all_dead_letters,
        restarts=connector.restart_attempts,
        state_changed_at=connector.state_changed_at,
        last_status_at=connector.last_status_at,
        lag=float(sum(lags)) if lags else None,
        lag_before=lag_before,
        reporting=reporting_.of_connector(connector, at=at),
        now=at.timestamp(),
        rule_metrics=connector.rule_metrics,
        recent_failures=recent,
    )


def attach_recent_failures(channels: list[Channel], *, at: datetime) -> list[Channel]:
    """Give each of ``channels`` its ``recent_failures`` in one query, for :func:`of_channel`
    (which otherwise asks for each channel's: a list must call this first)."""
    failures = recent_failures([channel.pk for channel in channels], at=at)
    for channel in channels:
        channel.recent_failures = failures.get(channel.pk, 0)  # type: ignore[attr-defined]
    return channels


def recent_failures(channel_ids: list[int], *, at: datetime) -> dict[int, int]:
    """Times each channel's connector turned FAILED in the last hour before ``at`` (one
    query; channels without any are left out)."""
    since = at - timedelta(seconds=RECENT_FAILURES_SECONDS)
    rows = (
        LifecycleEvent.objects.filter(
            channel_id__in=channel_ids,
            to_state="FAILED",
            subject_type=SubjectType.CONNECTOR,
            created_at__gte=since,
        )
        .exclude(from_state="FAILED")  # a FAILED connector's own repeats are not new failures
        .values("channel_id")
        .annotate(n=Count("id"))
        .values_list("channel_id", "n")
    )
    return dict(rows)
