"""The channels list of a fleet: search, filters and sorting, run in the database where they
can be (``search``, ``state``, ``target_state``, ``worker``, ``label``, every ordering but
health) so a page of 10,000 channels costs a fixed number of queries.

Health is a Python rule set (:mod:`console.services.health`) over what the control plane
knows of each channel; filtering or sorting by it assesses every channel that passed the
other filters from a lean load (its connector's counters and its tasks' lags), then reads
the page's channels in full.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from django.db.models import (
    Case,
    F,
    IntegerField,
    Q,
    QuerySet,
    Sum,
    Value,
    When,
)
from django.db.models.fields.json import KeyTextTransform
from django.db.models.functions import Coalesce
from django.db.models.lookups import Exact, IsNull

from console.choices import ConnectorState
from console.models import Channel, Task
from console.selectors.channels import channels
from console.services import health, history

#: Observed states from the most to the least in need of attention (``?ordering=state``).
STATE_RANK = (
    ConnectorState.FAILED,
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

    @property
    def needs_health(self) -> bool:
        return bool(self.healths) or any(key.lstrip("-") == "health" for key in self.ordering)


def matching(query: FleetQuery, base: QuerySet[Channel] | None = None) -> QuerySet[Channel]:
    """The channels ``query``'s database filters keep (search, state, target, worker,
    labels), from ``base`` (default: every channel)."""
    queryset = base if base is not None else Channel.objects.all()
    if query.search:
        queryset = queryset.filter(
            Q(name__icontains=query.search) | Q(description__icontains=query.search)
        )
    if query.states:
        observed = Q(connector__state__in=list(query.states))
        if ConnectorState.STOPPED in query.states:
            observed |= Q(connector__isnull=True)
        queryset = queryset.filter(observed)
    if query.target_states:
        queryset = queryset.filter(target_state__in=list(query.target_states))
    if query.workers:
        queryset = queryset.filter(connector__worker__worker_id__in=list(query.workers))
    for key, value in query.labels:
        text = KeyTextTransform(key, "labels")
        queryset = queryset.filter(IsNull(text, False) if value is None else Exact(text, value))
    return queryset


def _state_rank() -> Case:
    return Case(
        *(When(connector__state=state, then=Value(rank)) for rank, state in enumerate(STATE_RANK)),
        When(connector__isnull=True, then=Value(STATE_RANK.index(ConnectorState.STOPPED))),
        default=Value(len(STATE_RANK)),
        output_field=IntegerField(),
    )


def _sql_order(key: str) -> list:
    descending = key.startswith("-")
    name = key.lstrip("-")
    expression: Any = {
        "name": F("name"),
        "created": F("created"),
        "updated": F("updated"),
        "state": _state_rank(),
        "target_state": F("target_state"),
        "worker": Coalesce(F("connector__worker__worker_id"), Value("")),
    }[name]
    return [expression.desc() if descending else expression.asc()]


def failed_first() -> Case:
    return Case(When(connector__state=ConnectorState.FAILED, then=Value(0)), default=Value(1))


def ordered(queryset: QuerySet[Channel], ordering: Sequence[str], *, status: bool) -> QuerySet:
    """``queryset`` in ``ordering`` (no health key), by name within; without an ordering,
    by name, FAILED channels first when ``status`` (the operations view's order)."""
    if not ordering:
        return queryset.order_by(failed_first(), "name") if status else queryset.order_by("name")
    order: list = []
    for key in ordering:
        order += _sql_order(key)
    if not any(key.lstrip("-") == "name" for key in ordering):
        order.append(F("name").asc())
    return queryset.order_by(*order)


def ordered_ids(query: FleetQuery, *, status: bool) -> QuerySet:
    """The ids of the channels ``query`` keeps, in its order (no health key): a lean query
    (no revision subqueries, no JSON), so the database sorts 10,000 narrow rows and the page
    is then read in full for its own ids only (:func:`page_of`)."""
    return ordered(matching(query), query.ordering, status=status).values_list("pk", flat=True)


def ids_by_health(query: FleetQuery, *, status: bool) -> list[int]:
    """The ids of the channels ``query`` keeps, health filter and ordering applied: each
    channel that passed the database filters is assessed from plain rows (two queries: the
    channels with their connector's counters, the tasks' lag summed per channel)."""
    fields = (
        "id",
        "name",
        "created",
        "updated",
        "target_state",
        "connector__id",
        "connector__state",
        "connector__stage_metrics",
        "connector__dead_letters",
        "connector__restart_attempts",
        "connector__state_changed_at",
        "connector__last_status_at",
        "connector__worker__worker_id",
    )
    channels_rows = list(matching(query).values(*fields))
    lags = dict(
        Task.objects.filter(lag__isnull=False)
        .values_list("connector__channel_id")
        .annotate(total=Sum("lag"))
        .values_list("connector__channel_id", "total")
    )
    lags_before = history.lags_before() if channels_rows else {}
    rows = []
    for row in channels_rows:
        deployed = row["connector__id"] is not None
        lag = lags.get(row["id"]) if deployed else None
        level = health.from_record(
            state=row["connector__state"] if deployed else None,
            target_state=row["target_state"],
            stage_metrics=row["connector__stage_metrics"] if deployed else None,
            dead_letters=row["connector__dead_letters"] if deployed else 0,
            restarts=row["connector__restart_attempts"] if deployed else 0,
            state_changed_at=row["connector__state_changed_at"],
            last_status_at=row["connector__last_status_at"],
            lag=float(lag) if lag is not None else None,
            lag_before=lags_before.get(row["name"]),
        ).level
        if query.healths and level not in query.healths:
            continue
        row["health"] = level
        row["state"] = row["connector__state"] if deployed else ConnectorState.STOPPED
        rows.append(row)
    # Stable sorts from the last key to the first, by name within.
    rows.sort(key=lambda row: row["name"])
    for key in reversed(list(query.ordering)):
        rows.sort(key=_sort_key(key.lstrip("-")), reverse=key.startswith("-"))
    if not query.ordering and status:  # FAILED first, then by name (as ``ordered``)
        rows.sort(key=lambda row: 0 if row["state"] == ConnectorState.FAILED else 1)
    return [row["id"] for row in rows]


def _sort_key(key: str) -> Callable[[dict[str, Any]], Any]:
    if key == "health":
        return lambda row: HEALTH_RANK.index(row["health"])
    if key == "state":
        return lambda row: (
            STATE_RANK.index(row["state"]) if row["state"] in STATE_RANK else len(STATE_RANK)
        )
    if key == "worker":
        return lambda row: row["connector__worker__worker_id"] or ""
    return lambda row: row[key]


def page_of(ids: Sequence[int], *, status: bool) -> list[Channel]:
    """The channels ``ids`` (one page), in that order, loaded as :func:`listed` loads them."""
    queryset = channels().filter(pk__in=list(ids))
    if status:
        queryset = queryset.prefetch_related("connector__tasks")
    by_id = {channel.pk: channel for channel in queryset}
    return [by_id[pk] for pk in ids if pk in by_id]
