"""The fleet side of ``/channels/``: the list's query parameters (search, filters, sorting;
each bad value a 400 naming its parameter) and ``POST /channels/bulk`` (one request, many
channels, one result per channel)."""

from __future__ import annotations

from dataclasses import dataclass, replace
from functools import partial
from typing import Any, cast

from django.contrib.auth.models import User
from django.http import QueryDict
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import (
    OpenApiExample,
    OpenApiParameter,
    OpenApiResponse,
    extend_schema,
)
from rest_framework import serializers, status, viewsets
from rest_framework.decorators import action
from rest_framework.exceptions import PermissionDenied, ValidationError
from rest_framework.request import Request
from rest_framework.response import Response

from console import labels, permissions
from console.api.channels.listing import ORDERINGS, FleetQuery, matching
from console.api.exceptions import flatten_errors
from console.api.parsers import StrictJSONParser
from console.audit import client_address
from console.choices import ShownState, TargetState
from console.selectors import health
from console.services import fleet

MAX_SEARCH = 200
MAX_VALUES = 100


@dataclass(frozen=True)
class _Filter:
    """One of the list's repeatable filters, which the bulk endpoint's ``filter`` takes too."""

    name: str
    description: str
    choices: tuple[tuple[str, str], ...] = ()
    """The values it accepts, with their labels (none: any text up to ``max_length``)."""
    max_length: int = 255

    @property
    def values(self) -> list[str]:
        return [value for value, _ in self.choices]


FILTERS = (
    _Filter(
        "state",
        "Shown state (repeatable: any of them); STOPPED includes never started, "
        "NOT_REPORTING is a connector whose reports stopped (its last reported state no "
        "longer matches).",
        tuple(ShownState.choices),
    ),
    _Filter("target_state", "What the user asked for (repeatable).", tuple(TargetState.choices)),
    _Filter(
        "health",
        "Health level as the control loop last stored it, critical for a connector not "
        "reporting (repeatable).",
        tuple((level, level) for level in health.LEVELS),
    ),
    _Filter("worker", "Id of the runtime worker the channel is placed on (repeatable)."),
    _Filter(
        "team",
        "Name of the team the channel belongs to (repeatable); a team the caller cannot see "
        "matches nothing.",
        max_length=63,
    ),
    _Filter(
        "label",
        "`key=value` (the label has this value) or `key` (the label is set); "
        "repeatable: every one must match.",
        max_length=400,
    ),
)
SEARCH_DESCRIPTION = "Channels whose name or description contains this text (any case)."

LIST_PARAMETERS = [
    OpenApiParameter("search", OpenApiTypes.STR, description=SEARCH_DESCRIPTION),
    *(
        OpenApiParameter(
            f.name,
            OpenApiTypes.STR,
            many=True,
            enum=f.values or None,
            description=f.description,
        )
        for f in FILTERS
    ),
    OpenApiParameter(
        "ordering",
        OpenApiTypes.STR,
        description=(
            "Comma-separated sort keys, each optionally prefixed by `-` (descending): "
            f"{', '.join(ORDERINGS)}. `state` sorts by need of attention (FAILED first), "
            "`health` critical first. Default: by name (with `expand=status`, FAILED first)."
        ),
    ),
]

_CHOICES = {f.name: set(f.values) for f in FILTERS if f.choices}


def fleet_query(params: Any) -> FleetQuery:
    """The list's query string as a :class:`FleetQuery`; a 400 naming each bad parameter."""
    errors: dict[str, list[str]] = {}
    search = params.get("search", "").strip()
    if len(search) > MAX_SEARCH:
        errors["search"] = [f"At most {MAX_SEARCH} characters."]
    chosen: dict[str, list[str]] = {}
    for name, allowed in _CHOICES.items():
        values = [value for value in params.getlist(name) if value != ""]
        bad = sorted({value for value in values if value not in allowed})
        if bad:
            errors[name] = [
                f"Unknown value(s) {', '.join(map(repr, bad))}; use {', '.join(sorted(allowed))}."
            ]
        chosen[name] = list(dict.fromkeys(values))
    workers = [value for value in params.getlist("worker") if value != ""]
    if any(len(value) > 255 for value in workers):
        errors["worker"] = ["A worker id has at most 255 characters."]
    teams = [value for value in params.getlist("team") if value != ""]
    if any(len(value) > 63 for value in teams):
        errors["team"] = ["A team name has at most 63 characters."]
    selectors: list[tuple[str, str | None]] = []
    label_errors = []
    for text in params.getlist("label"):
        try:
            selectors.append(labels.parse_selector(text))
        except ValueError as exc:
            label_errors.append(str(exc))
    if label_errors:
        errors["label"] = label_errors
    ordering: list[str] = []
    raw_ordering = params.get("ordering", "")
    for key in (part.strip() for part in raw_ordering.split(",") if part.strip()):
        if key.lstrip("-") not in ORDERINGS or key.startswith("--"):
            errors["ordering"] = [
                f"Unknown sort key {key!r}; use {', '.join(ORDERINGS)}, each optionally "
                "prefixed by '-'."
            ]
            break
        ordering.append(key)
    for name in (f.name for f in FILTERS):
        if len(params.getlist(name)) > MAX_VALUES and name not in errors:
            errors[name] = [f"At most {MAX_VALUES} values."]
    if errors:
        raise ValidationError(errors)
    return FleetQuery(
        search=search,
        states=chosen["state"],
        target_states=chosen["target_state"],
        healths=chosen["health"],
        workers=workers,
        labels=selectors,
        ordering=ordering,
        team_names=teams,
    )


def fleet_query_for(request: Request, params: Any = None) -> FleetQuery:
    """:func:`fleet_query` of ``params`` (default: the request's query string), kept to the
    teams the caller may see."""
    query = fleet_query(request.query_params if params is None else params)
    return replace(query, teams=permissions.visible_team_ids(request.user))


def _filter_field(f: _Filter) -> serializers.ListField:
    child: serializers.Field = (
        serializers.ChoiceField(choices=list(f.choices))
        if f.choices
        else serializers.CharField(max_length=f.max_length)
    )
    return serializers.ListField(
        child=child, required=False, max_length=MAX_VALUES, help_text=f.description
    )


class _JSONBoolean(serializers.BooleanField):
    """``true`` or ``false`` as JSON has them, nothing DRF would take for one ("yes", 1)."""

    def to_internal_value(self, data: Any) -> bool:
        if not isinstance(data, bool):
            self.fail("invalid", input=data)
        return data


# The list's filters as body fields (``label`` too: a declared field, not Field.label).
BulkFilterSerializer = type(
    "BulkFilterSerializer",
    (serializers.Serializer,),
    {
        "__doc__": "The channels a bulk action applies to, chosen like the list's filters.",
        "__module__": __name__,
        "search": serializers.CharField(
            required=False,
            allow_blank=True,
            max_length=MAX_SEARCH,
            help_text=SEARCH_DESCRIPTION,
        ),
        **{f.name: _filter_field(f) for f in FILTERS},
        "all": _JSONBoolean(
            required=False,
            help_text="Must be true when nothing else narrows the filter: the action then "
            "applies to every channel (one request could otherwise stop or delete a fleet "
            "by an empty filter).",
        ),
    },
)


def _narrows(chosen: dict[str, Any]) -> bool:
    """Whether a bulk filter keeps fewer than every channel (some search text or value)."""
    return bool((chosen.get("search") or "").strip()) or any(chosen.get(f.name) for f in FILTERS)


class BulkRequestSerializer(serializers.Serializer):
    action = serializers.ChoiceField(choices=[(name, name) for name in fleet.ACTIONS])
    names = serializers.ListField(
        child=serializers.CharField(max_length=63),
        required=False,
        allow_empty=False,
        max_length=fleet.MAX_BULK,
        help_text=f"The channels, by name (at most {fleet.MAX_BULK}).",
    )
    filter = BulkFilterSerializer(
        required=False,
        help_text="Instead of names: every channel the list's filters keep (the same keys).",
    )

    def validate(self, attrs: dict[str, Any]) -> dict[str, Any]:
        if ("names" in attrs) == ("filter" in attrs):
            raise serializers.ValidationError(
                {"names": ["Give either names or filter (exactly one)."]}
            )
        chosen = attrs.get("filter")
        if chosen is not None and not _narrows(chosen) and chosen.get("all") is not True:
            raise serializers.ValidationError(
                {
                    "filter.all": [
                        'This filter keeps every channel: send "all": true to act on all of '
                        "them, or narrow it (search, state, label…)."
                    ]
                }
            )
        return attrs


class BulkResultSerializer(serializers.Serializer):
    name = serializers.CharField()
    ok = serializers.BooleanField()
    status = serializers.IntegerField(
        help_text="What the channel's own endpoint would have answered (202, 204, 404, 409, "
        "429 past a team quota, 503)."
    )
    error = serializers.CharField(help_text="Why it failed; empty when ok.")
    target_state = serializers.CharField(allow_null=True)
    changed = serializers.BooleanField(
        help_text="Whether the action changed the channel: false when it failed or when the "
        "channel already was where the action takes it (nothing done)."
    )


class BulkAnswerSerializer(serializers.Serializer):
    action = serializers.CharField()
    count = serializers.IntegerField(help_text="Channels acted on.")
    ok = serializers.IntegerField(help_text="How many succeeded.")
    unchanged = serializers.IntegerField(
        help_text="Of those, how many already were where the action takes them (nothing done)."
    )
    failed = serializers.IntegerField(help_text="How many did not (see each result's error).")
    results = BulkResultSerializer(many=True)


_NEEDS = {
    "start": permissions.OPERATE["start"],
    "stop": permissions.OPERATE["stop"],
    "pause": permissions.OPERATE["pause"],
    "resume": permissions.OPERATE["resume"],
    "restart": permissions.OPERATE["restart"],
    "delete": permissions.DELETE,
}


class ChannelBulkViewSet(viewsets.GenericViewSet):
    """``POST /channels/bulk``."""

    serializer_class = BulkRequestSerializer  # what OPTIONS describes
    # JSON only: thousands of names as form fields would hit DATA_UPLOAD_MAX_NUMBER_FIELDS.
    parser_classes = [StrictJSONParser]
    required_permissions = {"bulk": permissions.AUTHENTICATED}

    @extend_schema(
        operation_id="channels_bulk",
        summary="Start, stop, pause, resume, restart or delete many channels",
        description=(
            "One request, many channels (by `names`, or every channel a `filter` keeps), one "
            "result per channel: `ok`, the status the channel's own endpoint would have "
            "answered, and the reason when it failed. Each channel goes through the same "
            "rules, lifecycle events and audit as its own endpoint (one audit row per "
            "channel), and needs the same role (operator; editor for delete). A channel "
            "that fails does not stop the others. The answer is 200 once every channel was "
            f"handled (at most {fleet.MAX_BULK} per request)."
        ),
        request=BulkRequestSerializer,
        responses={
            200: BulkAnswerSerializer,
            400: OpenApiResponse(
                response=OpenApiTypes.OBJECT,
                description="The body is invalid: messages by field path (`filter.label[0]`), "
                "or `detail` when it is not JSON.",
            ),
            403: OpenApiTypes.OBJECT,
        },
        examples=[
            OpenApiExample(
                "Stop two channels, one of them unknown",
                request_only=True,
                value={"action": "stop", "names": ["orders", "nope"]},
            ),
            OpenApiExample(
                "Pause every running channel labelled team=payments",
                request_only=True,
                value={
                    "action": "pause",
                    "filter": {"label": ["team=payments"], "state": ["RUNNING"]},
                },
            ),
        ],
    )
    @action(detail=False, methods=["post"])
    def bulk(self, request: Request) -> Response:
        body = BulkRequestSerializer(data=request.data)
        if not body.is_valid():  # errors by field path: filter.label[0], names[3]
            raise ValidationError(flatten_errors(body.errors))
        data = body.validated_data
        need = _NEEDS[data["action"]]
        if not request.user.has_perm(need.permission):
            raise PermissionDenied(permissions.denial(need.permission, need.doing))
        names = data.get("names")
        if names is None:
            names = _filtered_names(request, data["filter"])
        results = fleet.bulk_lifecycle(
            data["action"],
            names,
            teams=permissions.visible_team_ids(request.user),
            refused=partial(_refusal, request.user, need),
            user=cast(User, request.user),
            remote_addr=client_address(request),
            user_agent=request.META.get("HTTP_USER_AGENT", ""),
        )
        ok = sum(1 for result in results if result.ok)
        answer = {
            "action": data["action"],
            "count": len(results),
            "ok": ok,
            "unchanged": sum(1 for result in results if result.ok and not result.changed),
            "failed": len(results) - ok,
            "results": [result.__dict__ for result in results],
        }
        return Response(BulkAnswerSerializer(answer).data, status=status.HTTP_200_OK)


def _refusal(user: Any, need: permissions.Need, channel: Any) -> str | None:
    """Why ``user`` may not act on ``channel`` (a role in its team missing), or ``None``."""
    if permissions.may(user, need.permission, channel):
        return None
    return permissions.denial(need.permission, need.doing, permissions.team_name(channel))


def _filtered_names(request: Request, chosen: dict[str, Any]) -> list[str]:
    params = QueryDict(mutable=True)
    if chosen.get("search"):
        params["search"] = chosen["search"]
    for f in FILTERS:
        params.setlist(f.name, list(chosen.get(f.name, [])))
    try:
        query = fleet_query_for(request, params)
    except ValidationError as exc:
        detail = exc.detail if isinstance(exc.detail, dict) else {"": exc.detail}
        raise ValidationError({f"filter.{key}": value for key, value in detail.items()}) from exc
    selected = list(matching(query).order_by("name").values_list("name", flat=True))
    if len(selected) > fleet.MAX_BULK:
        raise ValidationError(
            {"filter": [f"{len(selected)} channels match; at most {fleet.MAX_BULK} per request."]}
        )
    return selected
