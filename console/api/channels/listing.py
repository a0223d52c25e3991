"""The channels list of a fleet: search, filters and sorting, all run in the database
(``search``, ``state``, ``target_state``, ``health``, ``worker``, ``label`` and every
ordering) so a page of 10,000 channels costs a fixed number of queries.

Health filters and sorts by ``Channel.health_level``, the level the control loop keeps per
channel (:mod:`console.services.channel_health`, indexed); the rows' own ``status.health``
is assessed afresh for the page.

A connector that stopped reporting is judged when read, here in SQL by the same rule as the
rows (:func:`console.selectors.reporting.not_reporting_q`, at the query's instant): it is
listed under ``state=NOT_REPORTING`` (not under its last reported state) and ``health=critical``,
and sorted so, even when no control-loop pass ran since (Redis or Celery down).
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from django.db.models import (
    Case,
    CharField,
    F,
    IntegerField,
    Q,
    QuerySet,
    Value,
    When,
)
from django.db.models.fields.json import KeyTextTransform
from django.db.models.functions import Coalesce
from django.db.models.lookups import Exact, IsNull

from console.choices import ConnectorState, ShownState
from console.models import Channel
from console.selectors import health, reporting
from console.selectors.channels import channels

#: Observed states from the most to the least in need of attention (``?ordering=state``).
STATE_RANK = (
    ConnectorState.FAILED,
    ShownState.NOT_REPORTING,
    ConnectorState.RESTARTING,
    ConnectorState.UNASSIGNED,
    ConnectorState.PAUSED,
    ConnectorState.RUNNING,
    ConnectorState.STOPPED,
)
#: Health levels from the worst (``?ordering=health``: critical first).
HEALTH_RANK = tuple(reversed(health.LEVELS))

ORDERINGS = (
    "name",
    "created",
    "updated",
    "state",
    "target_state",
    "health",
    "worker",
)
"""What ``?ordering=`` accepts, each also with a leading ``-`` (descending)."""


@dataclass(frozen=True)
class FleetQuery:
    """A validated channels-list request (the API builds it from the query string)."""

    search: str = ""
    states: Sequence[str] = ()
    target_states: Sequence[str] = ()
    healths: Sequence[str] = ()
    workers: Sequence[str] = ()
    labels: Sequence[tuple[str, str | None]] = ()
    ordering: Sequence[str] = field(default_factory=tuple)
    team_names: Sequence[str] = ()
    """``?team=``: only these teams' channels (by name)."""
    teams: Collection[int] | None = None
    """The teams the caller may see (ids; ``None``: every team): another team's channel is
    never matched, counted or listed."""
    at: datetime | None = None
    """The instant reporting is judged at (``None``: the console's clock when queried)."""


def matching(query: FleetQuery, base: QuerySet[Channel] | None = None) -> QuerySet[Channel]:
    """The channels ``query``'s database filters keep (search, state, target, worker,
    labels), from ``base`` (default: every channel)."""
    queryset = base if base is not None else Channel.objects.all()
    if query.teams is not None:
        queryset = queryset.filter(team_id__in=list(query.teams))
    if query.team_names:
        queryset = queryset.filter(team__name__in=list(query.team_names))
    silent = reporting.not_reporting_q(query.at)
    if query.search:
        queryset = queryset.filter(
            Q(name__icontains=query.search) | Q(description__icontains=query.search)
        )
    if query.states:
        observed = Q(connector__state__in=list(query.states)) & ~silent
        if ConnectorState.STOPPED in query.states:
            observed |= Q(connector__isnull=True)
        if ShownState.NOT_REPORTING in query.states:
            observed |= silent
        queryset = queryset.filter(observed)
    if query.target_states:
        queryset = queryset.filter(target_state__in=list(query.target_states))
    if query.healths:
        queryset = queryset.alias(shown_health=_shown_health(silent)).filter(
            shown_health__in=list(query.healths)
        )
    if query.workers:
        queryset = queryset.filter(connector__worker__worker_id__in=list(query.workers))
    for key, value in query.labels:
        text = KeyTextTransform(key, "labels")
        queryset = queryset.filter(IsNull(text, False) if value is None else Exact(text, value))
    return queryset


def _shown_health(silent: Q) -> Case:
    """The stored level, critical for a connector not reporting (health's rule)."""
    return Case(
        When(silent, then=Value("critical")),
        default=F("health_level"),
        output_field=CharField(),
    )


def _state_rank(silent: Q) -> Case:
    return Case(
        When(silent, then=Value(STATE_RANK.index(ShownState.NOT_REPORTING))),
        *(When(connector__state=state, then=Value(rank)) for rank, state in enumerate(STATE_RANK)),
        When(connector__isnull=True, then=Value(STATE_RANK.index(ConnectorState.STOPPED))),
        default=Value(len(STATE_RANK)),
        output_field=IntegerField(),
    )


def _health_rank(silent: Q) -> Case:
    return Case(
        When(silent, then=Value(HEALTH_RANK.index("critical"))),
        *(When(health_level=level, then=Value(rank)) for rank, level in enumerate(HEALTH_RANK)),
        default=Value(len(HEALTH_RANK)),
        output_field=IntegerField(),
    )


def _sql_order(key: str, silent: Q) -> list:
    descending = key.startswith("-")
    name = key.lstrip("-")
    expression: Any = {
        "name": F("name"),
        "created": F("created"),
        "updated": F("updated"),
        "state": _state_rank(silent),
        "target_state": F("target_state"),
        "health": _health_rank(silent),
        "worker": Coalesce(F("connector__worker__worker_id"), Value("")),
    }[name]
    return [expression.desc() if descending else expression.asc()]


def failed_first() -> Case:
    return Case(When(connector__state=ConnectorState.FAILED, then=Value(0)), default=Value(1))


def ordered(
    queryset: QuerySet[Channel],
    ordering: Sequence[str],
    *,
    status: bool,
    at: datetime | None = None,
) -> QuerySet:
    """``queryset`` in ``ordering``, by name within; without an ordering,
    by name, FAILED channels first when ``status`` (the operations view's order). Reporting
    is judged at ``at`` (default: now)."""
    if not ordering:
        return queryset.order_by(failed_first(), "name") if status else queryset.order_by("name")
    silent = reporting.not_reporting_q(at)
    order: list = []
    for key in ordering:
        order += _sql_order(key, silent)
    if not any(key.lstrip("-") == "name" for key in ordering):
        order.append(F("name").asc())
    return queryset.order_by(*order)


def ordered_ids(query: FleetQuery, *, status: bool) -> QuerySet:
    """The ids of the channels ``query`` keeps, in its order: a lean query
    (no revision subqueries, no JSON), so the database sorts 10,000 narrow rows and the page
    is then read in full for its own ids only (:func:`page_of`)."""
    return ordered(matching(query), query.ordering, status=status, at=query.at).values_list(
        "pk", flat=True
    )


def page_of(ids: Sequence[int], *, status: bool) -> list[Channel]:
    """The channels ``ids`` (one page), in that order, loaded as :func:`listed` loads them."""
    queryset = channels().filter(pk__in=list(ids))
    if status:
        queryset = queryset.prefetch_related("connector__tasks")
    by_id = {channel.pk: channel for channel in queryset}
    if status:  # their health's recent failures: one query for the page
        health.attach_recent_failures(list(by_id.values()), at=reporting.now())
    return [by_id[pk] for pk in ids if pk in by_id]
