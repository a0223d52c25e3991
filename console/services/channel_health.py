"""Each channel's health level, kept in the database (``Channel.health_level``, indexed) so
the fleet list filters and sorts 10,000 channels by health in SQL.

The level is :mod:`console.selectors.health`'s (the same rules as the channel's own
``status.health``), assessed from what the control plane recorded. The control loop
refreshes it (:func:`refresh_after_pass`) for the channels whose connector changed state in
the pass (a FAILED channel is listed as critical a pass later) and, every
:data:`FLEET_REFRESH_SECONDS`, for the whole fleet (the time-based rules, the history store's
lag trend, the counters). When the loop follows the runtime's status feed it refreshes instead
the channels each pass looked at: those with news or whose state time changed, and one slice
of all, so every channel within ``SLUICE_RECONCILE_RESYNC_SECONDS`` (the time-based rules
and the lag trend act that much later; 5,000 channels cost 0.4 s of CPU a refresh). Each
lifecycle change (the single and the bulk services) refreshes its channels at once, so a
channel just stopped or started is listed under its new level without waiting. Only the
levels that changed are written.

A connector not reporting (:mod:`console.selectors.reporting`) is critical here as well, as of
the pass; between passes (or with none running: Redis or Celery down) the list judges it in
SQL at read time (:mod:`console.api.channels.listing`), so the stored level never hides it.
"""

from __future__ import annotations

from collections.abc import Iterable
from datetime import UTC, datetime
from typing import Any

from django.db.models import Sum

from console.models import Channel, Task
from console.selectors import health, history, reporting
from console.services.bulk import update_rows

_FIELDS = (
    "id",
    "name",
    "target_state",
    "health_level",
    "connector__id",
    "connector__state",
    "connector__stage_metrics",
    "connector__rule_metrics",
    "connector__dead_letters",
    "connector__run_dead_letters",
    "connector__restart_attempts",
    "connector__state_changed_at",
    "connector__last_status_at",
    *(f"connector__{name}" for name in reporting.ROW_FIELDS if name != "state"),
)


#: Seconds between two refreshes of every channel's level by the control loop (10,000
#: channels cost about half a second of the pass).
FLEET_REFRESH_SECONDS = 5.0
_last_fleet_refresh = float("-inf")


def refresh_after_pass(changed: Iterable[int], *, now: float) -> int:
    """The control loop's share: ``changed`` channels (their connector changed state in the
    pass at ``now``, a Unix time), or every channel when the last such refresh is
    :data:`FLEET_REFRESH_SECONDS` old (by ``now``)."""
    global _last_fleet_refresh
    if not now - FLEET_REFRESH_SECONDS < _last_fleet_refresh <= now:
        _last_fleet_refresh = now
        return refresh(now=now)
    return refresh(changed, now=now)


def refresh(channel_ids: Iterable[int] | None = None, *, now: float | None = None) -> int:
    """Assess ``channel_ids`` (every channel when ``None``) and store the levels that changed
    (three queries and one batched ``UPDATE``); returns how many changed. ``now``: a Unix
    time (the control loop's pass), else the clock."""
    channels = Channel.objects.all()
    tasks = Task.objects.filter(lag__isnull=False)
    if channel_ids is not None:
        ids = list(channel_ids)
        if not ids:
            return 0
        channels = channels.filter(pk__in=ids)
        tasks = tasks.filter(connector__channel_id__in=ids)
    rows = list(channels.values(*_FIELDS))
    if not rows:
        return 0
    lags = dict(
        tasks.values_list("connector__channel_id")
        .annotate(total=Sum("lag"))
        .values_list("connector__channel_id", "total")
    )
    before = history.lags_before()
    at = reporting.now() if now is None else datetime.fromtimestamp(now, tz=UTC)
    failures = health.recent_failures([row["id"] for row in rows], at=at)
    changed = []
    for row in rows:
        level = level_of(
            row,
            lags.get(row["id"]),
            before.get(row["name"]),
            now=now,
            recent_failures=failures.get(row["id"], 0),
        )
        if level != row["health_level"]:
            changed.append(Channel(pk=row["id"], health_level=level))
    update_rows(Channel, changed, ["health_level"])
    return len(changed)


def level_of(
    row: dict[str, Any],
    lag: float | None,
    lag_before: float | None,
    *,
    now: float | None = None,
    recent_failures: int = 0,
) -> str:
    """The health level of one row of ``Channel.objects.values(*_FIELDS)``."""
    deployed = row["connector__id"] is not None
    at = reporting.now() if now is None else datetime.fromtimestamp(now, tz=UTC)
    return health.from_record(
        state=row["connector__state"] if deployed else None,
        target_state=row["target_state"],
        stage_metrics=row["connector__stage_metrics"] if deployed else None,
        dead_letters=_all_dead_letters(row) if deployed else 0,
        restarts=row["connector__restart_attempts"] if deployed else 0,
        state_changed_at=row["connector__state_changed_at"],
        last_status_at=row["connector__last_status_at"],
        lag=float(lag) if deployed and lag is not None else None,
        lag_before=lag_before,
        reporting=reporting.of_row(row, at=at) if deployed else reporting.REPORTING,
        now=at.timestamp(),
        rule_metrics=row["connector__rule_metrics"] if deployed else None,
        recent_failures=recent_failures,
    ).level


def _all_dead_letters(row: dict[str, Any]) -> int:
    """The channel's drivers' dead letters and its runs' (``Connector.all_dead_letters``)."""
    return int(row["connector__dead_letters"] or 0) + int(row["connector__run_dead_letters"] or 0)
