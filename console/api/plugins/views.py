"""The plugin catalogue (read-only), a config check per plugin, and event-pattern tests: one
pattern on an event (``event-patterns/test``), or a bus's rules on an event
(``event-patterns/test-rules``: which rules it goes to).

Plugins are addressed by ``(kind, type)``: a source and a sink may share a type
(``plugins/{kind}/{type}/``); ``plugins/{type}/validate`` takes the kind from the query when
the type alone is ambiguous. Nothing here changes state: any role may use it.
"""

from __future__ import annotations

from typing import Any

from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import (
    OpenApiExample,
    OpenApiResponse,
    extend_schema,
    extend_schema_view,
)
from rest_framework import status, viewsets
from rest_framework.decorators import action
from rest_framework.exceptions import NotFound, ParseError, ValidationError
from rest_framework.request import Request
from rest_framework.response import Response

from console import permissions
from console.api.metadata import NoSerializerMetadata
from console.api.pagination import LimitOffsetPagination
from console.api.plugins.filters import PluginKindQuerySerializer, plugin_kind
from console.api.plugins.schema import (
    CONFIG_INVALID,
    CONFIG_VERDICT,
    INVALID_STATUS_QUERY,
    KIND_NEEDED,
    KIND_PATH,
    KIND_QUERY,
    NO_PLUGIN,
    RULES_INVALID,
    RULES_TEST_ANSWER,
    RULES_TEST_EXAMPLE,
    TEAM_QUERY,
    TYPE_PATH,
)
from console.api.plugins.serializers import (
    EventPatternResultSerializer,
    EventPatternTestSerializer,
    PluginConfigSerializer,
    PluginKindErrorSerializer,
    PluginSerializer,
    RulesTestResultSerializer,
    RulesTestSerializer,
)
from console.errors import InvalidSpec
from console.models import Team
from console.selectors import specs

CATALOGUE = permissions.seeing(what="the plugin catalogue")
"""Checking a config changes nothing: any role may, as it may read the catalogue."""


@extend_schema_view(
    list=extend_schema(
        summary="List plugins",
        description="Every source, transform and sink a channel may use, with its config schema.",
        parameters=[PluginKindQuerySerializer],
        responses={200: PluginSerializer(many=True), 400: PluginKindErrorSerializer},
    ),
)
class PluginViewSet(viewsets.GenericViewSet):
    # plugins/ (the catalogue) and plugins/{type}/validate (kind in the query).

    serializer_class = PluginSerializer
    pagination_class = LimitOffsetPagination
    lookup_field = "type"
    lookup_value_converter = "str"
    required_permissions = {"list": CATALOGUE, "validate_config_by_type": CATALOGUE}

    # The catalogue is a list, not a model: pagination and the serializer take any sequence.
    def get_queryset(self) -> list[specs.Plugin]:  # type: ignore[override]
        return specs.plugins(plugin_kind(self.request))

    def list(self, request: Request) -> Response:
        page = self.paginate_queryset(self.get_queryset())
        return self.get_paginated_response(self.get_serializer(page, many=True).data)

    @extend_schema(
        operation_id="plugins_validate_by_type",
        summary="Check a stage config (plugin named by type)",
        description=(
            "As plugins/{kind}/{type}/validate. kind may be left out when the type names "
            "one plugin only (filter); kafka is both a source and a sink."
        ),
        parameters=[TYPE_PATH, KIND_QUERY, INVALID_STATUS_QUERY, TEAM_QUERY],
        request=PluginConfigSerializer,
        responses={200: CONFIG_VERDICT, 400: KIND_NEEDED, 404: NO_PLUGIN},
    )
    @action(detail=True, methods=["post"], url_path="validate", url_name="validate-by-type")
    def validate_config_by_type(self, request: Request, type: str) -> Response:
        kind = plugin_kind(request)
        try:
            plugin = specs.find_plugin(type, kind)
        except specs.AmbiguousPluginType as exc:
            raise ValidationError({"kind": [str(exc)]}) from exc
        except LookupError as exc:
            raise NotFound(str(exc)) from exc
        return _check_config(request, plugin)


@extend_schema_view(
    retrieve=extend_schema(
        summary="Get a plugin",
        parameters=[KIND_PATH, TYPE_PATH],
        responses={200: PluginSerializer, 404: NO_PLUGIN},
    ),
)
class PluginOfKindViewSet(viewsets.GenericViewSet):
    """The plugin catalogue, read-only, and a config check per plugin."""

    # plugins/{kind}/{type}/ and its config check, plugins/{kind}/{type}/validate; the
    # docstring is the description of retrieve in the schema.

    serializer_class = PluginSerializer
    lookup_field = "type"
    lookup_value_converter = "str"
    required_permissions = {"retrieve": CATALOGUE, "validate_config": CATALOGUE}

    def retrieve(self, request: Request, kind: str, type: str) -> Response:
        return Response(self.get_serializer(_plugin(kind, type)).data)

    @extend_schema(
        operation_id="plugins_validate",
        summary="Check a stage config",
        description=(
            "Validates a config against the plugin's schema, as spec validation does, and "
            "changes nothing."
        ),
        parameters=[KIND_PATH, TYPE_PATH, INVALID_STATUS_QUERY, TEAM_QUERY],
        request=PluginConfigSerializer,
        responses={200: CONFIG_VERDICT, 400: CONFIG_INVALID, 404: NO_PLUGIN},
    )
    @action(detail=True, methods=["post"], url_path="validate", url_name="validate")
    def validate_config(self, request: Request, kind: str, type: str) -> Response:
        return _check_config(request, _plugin(kind, type))


def _plugin(kind: str, type_: str) -> specs.Plugin:
    try:
        return specs.find_plugin(type_, kind)
    except LookupError as exc:
        raise NotFound(str(exc)) from exc


def _check_config(request: Request, plugin: specs.Plugin) -> Response:
    try:
        invalid_status = _invalid_status(request)
    except ValidationError as exc:  # answered in the documented shape too
        return _invalid_config(exc.detail)
    try:
        data = request.data
    except ParseError as exc:  # a body that is not JSON answers in the same shape
        return _invalid_config({"body": [str(exc.detail)]}, invalid_status)
    body = PluginConfigSerializer(data=data)
    if not body.is_valid():
        return _invalid_config(body.errors, invalid_status)
    try:
        team = _team(request)
    except ValidationError as exc:
        return _invalid_config(exc.detail, invalid_status)
    try:
        config = specs.check_stage_config(plugin, body.validated_data["config"], team)
    except InvalidSpec as exc:
        return _invalid_config(exc.errors, invalid_status)
    return Response({"valid": True, "config": config})


def _team(request: Request) -> Team | None:
    """``?team=``: one of the caller's teams, whose reach the config is checked within (400
    naming it when the caller sees no such team)."""
    name = request.query_params.get("team")
    if name is None:
        return None
    team = permissions.visible_teams(request.user).filter(name=name).first()
    if team is None:
        raise ValidationError({"team": [f"No team is named {name[:100]!r}."]})
    return team


def _invalid_status(request: Request) -> int:
    """``?invalid_status=``: 400 (the default) or 200 (see INVALID_STATUS_QUERY); another
    value is a 400 that names it, whatever the config."""
    value = request.query_params.get("invalid_status", "400")
    if value not in ("400", "200"):
        raise ValidationError({"invalid_status": [f"must be 400 or 200, not {value!r}"]})
    return int(value)


def _invalid_config(errors: Any, invalid_status: int = status.HTTP_400_BAD_REQUEST) -> Response:
    return Response({"valid": False, "errors": errors}, status=invalid_status)


# -- event patterns ------------------------------------------------------------------------


class EventPatternViewSet(viewsets.GenericViewSet):
    """``event-patterns/test`` and ``event-patterns/test-rules``. Testing patterns changes
    nothing: any role may."""

    metadata_class = NoSerializerMetadata
    required_permissions = {
        "test": permissions.seeing(what="event pattern tests"),
        "test_rules": permissions.seeing(what="event pattern tests"),
    }

    @extend_schema(
        operation_id="event_patterns_test",
        summary="Test an event pattern on an event",
        description=(
            "Answers whether the event matches the pattern, as EventBridge's TestEventPattern "
            "does, with the semantics of the channel filter. Changes nothing."
        ),
        request=EventPatternTestSerializer,
        responses={
            200: EventPatternResultSerializer,
            400: OpenApiResponse(
                response=OpenApiTypes.OBJECT,
                description="The pattern is invalid (every problem, located), or event is not "
                "a JSON object.",
                examples=[
                    OpenApiExample(
                        "Invalid pattern",
                        value={
                            "pattern": [
                                "source: must be an object or an array of match values, got a "
                                'string; write ["aws.ec2"] to match that value'
                            ]
                        },
                    )
                ],
            ),
        },
        examples=[
            OpenApiExample(
                "Order over 100",
                request_only=True,
                value={
                    "pattern": {"data": {"total": [{"numeric": [">", 100]}]}},
                    "event": {
                        "specversion": "1.0",
                        "id": "orders/0/42",
                        "source": "kafka://orders",
                        "type": "com.example.order.created",
                        "data": {"total": 120},
                    },
                },
            )
        ],
    )
    @action(detail=False, methods=["post"])
    def test(self, request: Request) -> Response:
        body = EventPatternTestSerializer(data=request.data)
        body.is_valid(raise_exception=True)
        data = body.validated_data
        result = specs.event_pattern_matches(data["pattern"], data["event"])
        return Response(EventPatternResultSerializer({"result": result}).data)

    @extend_schema(
        operation_id="event_patterns_test_rules",
        summary="Test a bus's rules on an event",
        description=(
            "Answers which of a bus's rules an event reaches the sinks of: for each rule, in "
            "the order sent, whether it is enabled, the event matches its pattern (a rule "
            "without a pattern matches every event) and the rule's own transforms keep it, "
            "with the semantics of the running bus. Filters are evaluated here; a rule whose "
            "event would pass through any other transform (it runs only in Spark) is "
            "answered `matched: null`, `verdict: undecided`, naming that transform, rather "
            "than guessed. The rules may be sent as they stand in the spec (their "
            "description and sinks are not read). Changes nothing."
        ),
        request=RulesTestSerializer,
        responses={200: RulesTestResultSerializer, 400: RULES_INVALID},
        examples=[RULES_TEST_EXAMPLE, RULES_TEST_ANSWER],
    )
    @action(detail=False, methods=["post"], url_path="test-rules", url_name="test-rules")
    def test_rules(self, request: Request) -> Response:
        body = RulesTestSerializer(data=request.data)
        body.is_valid(raise_exception=True)
        rules = body.validated_data["rules"]
        routes = specs.rules_routing(rules, body.validated_data["event"])
        return Response(RulesTestResultSerializer({"results": routes}).data)
