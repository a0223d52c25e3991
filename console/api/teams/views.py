"""``teams/``: the teams the caller sees with each quota and its use (a site admin sets the
quotas: ``PATCH teams/{team}/``), ``teams/{team}/reach/``: what a team's channels may touch
(set by site admins only, :mod:`pipelines.spec.reach`), and ``teams/{team}/service-accounts/``:
a team's tokens for automation (:mod:`console.services.service_accounts`).

Service accounts are a team admin's (``console.manage_team`` in the team) and a site
admin's; another team is a 404 like one that does not exist. Issuing shows the token once.
"""

from __future__ import annotations

from typing import cast

from django.contrib.auth.models import User
from django.core.exceptions import ValidationError as DjangoValidationError
from django.shortcuts import get_object_or_404
from drf_spectacular.utils import OpenApiResponse, extend_schema, extend_schema_view
from rest_framework import mixins, status, viewsets
from rest_framework.exceptions import PermissionDenied, ValidationError
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from console import permissions
from console.api.pagination import LimitOffsetPagination
from console.api.teams.serializers import (
    IssuedServiceAccountSerializer,
    IssueServiceAccountSerializer,
    ReachSerializer,
    ServiceAccountSerializer,
    TeamQuotasUpdateSerializer,
    TeamSerializer,
)
from console.models import ServiceAccount, Team
from console.services import quotas, service_accounts, team_policy
from pipelines.spec.reach import KEYS, InvalidReach, parse_reach

TEAM_NOT_FOUND = OpenApiResponse(description="No team of the caller's has this name.")
MANAGE = permissions.Need(permissions.MANAGE_TEAM, "manage the team's service accounts")
SET_REACH = permissions.Need("console.change_team", "set a team's reach")
"""No role grants it: site admins only (a team admin must not widen their own reach)."""


@extend_schema_view(
    list=extend_schema(
        summary="The teams the caller sees, with their roles there and their quotas",
        description="A site admin sees every team. Each quota comes with the team's use.",
        responses={200: TeamSerializer(many=True)},
    ),
    retrieve=extend_schema(
        summary="A team, with the caller's roles there and its quotas against its use",
        responses={200: TeamSerializer, 404: TEAM_NOT_FOUND},
    ),
    partial_update=extend_schema(
        summary="Set a team's quotas (site admins)",
        description=(
            "The quotas sent are set (null: no limit), the others stay. A quota lowered "
            "below the team's use stops nothing already held; it refuses what would take "
            "more (429 naming the quota)."
        ),
        request=TeamQuotasUpdateSerializer,
        responses={
            200: TeamSerializer,
            400: OpenApiResponse(description="A quota is invalid; each key is its field."),
            403: OpenApiResponse(description="Only site admins set quotas."),
            404: TEAM_NOT_FOUND,
        },
    ),
)
class TeamViewSet(
    mixins.ListModelMixin,
    mixins.RetrieveModelMixin,
    viewsets.GenericViewSet,
):
    serializer_class = TeamSerializer
    pagination_class = LimitOffsetPagination
    lookup_field = "name"
    lookup_url_kwarg = "team"
    lookup_value_converter = "str"
    required_permissions = {
        "list": permissions.AUTHENTICATED,
        "retrieve": permissions.AUTHENTICATED,
        "partial_update": permissions.AUTHENTICATED,  # and a site admin (partial_update)
    }

    def get_queryset(self):
        return permissions.visible_teams(self.request.user).order_by("name")

    def list(self, request: Request) -> Response:
        page = self.paginate_queryset(self.get_queryset())
        assert page is not None, "the teams are always paginated"
        rows = [self._row(team) for team in page]
        return self.get_paginated_response(TeamSerializer(rows, many=True).data)

    def retrieve(self, request: Request, team: str) -> Response:
        return Response(TeamSerializer(self._row(self.get_object())).data)

    def partial_update(self, request: Request, team: str) -> Response:
        # Before the team is looked up: a refusal says nothing about which teams exist.
        if not request.user.is_superuser:
            raise PermissionDenied("Only a site admin sets a team's quotas.")
        found = self.get_object()
        body = TeamQuotasUpdateSerializer(data=request.data)
        body.is_valid(raise_exception=True)
        quotas.set_quotas(found, body.validated_data)
        return Response(TeamSerializer(self._row(found)).data)

    def _row(self, team: Team) -> dict:
        return {
            "name": team.name,
            "description": team.description,
            "roles": permissions.roles_of(self.request.user, team),
            "quotas": quotas.use_of(team),
            "reach": dict(team.reach or {}),
        }


@extend_schema_view(
    list=extend_schema(
        summary="A team's service accounts",
        responses={200: ServiceAccountSerializer(many=True), 404: TEAM_NOT_FOUND},
    ),
    create=extend_schema(
        summary="Issue a service account token",
        description=(
            "A token with one role in the team, for automation: send it as `Authorization: "
            "Bearer sls_…`. It is in this answer only; keep it in a secret store."
        ),
        request=IssueServiceAccountSerializer,
        responses={
            201: IssuedServiceAccountSerializer,
            400: OpenApiResponse(),
            404: TEAM_NOT_FOUND,
        },
    ),
    destroy=extend_schema(
        summary="Revoke a service account",
        description="Its token stops working at once.",
        responses={204: None, 404: TEAM_NOT_FOUND},
    ),
)
class ServiceAccountViewSet(
    mixins.ListModelMixin,
    mixins.CreateModelMixin,
    mixins.DestroyModelMixin,
    viewsets.GenericViewSet,
):
    serializer_class = ServiceAccountSerializer
    pagination_class = LimitOffsetPagination
    lookup_field = "name"
    lookup_value_converter = "str"
    required_permissions = {"list": MANAGE, "create": MANAGE, "destroy": MANAGE}

    def team(self) -> Team:
        """The URL's team among the caller's (404 otherwise), once they may manage it (403)."""
        teams = permissions.visible_teams(self.request.user)
        team = get_object_or_404(teams, name=self.kwargs["team"])
        self.check_object_permissions(self.request, team)
        return team

    def get_queryset(self):
        return ServiceAccount.objects.filter(team=self.team()).select_related(
            "team", "user", "created_by"
        )

    def create(self, request: Request, team: str) -> Response:
        body = IssueServiceAccountSerializer(data=request.data)
        body.is_valid(raise_exception=True)
        try:
            issued = service_accounts.issue(
                self.team(), **body.validated_data, by=cast(User, request.user)
            )
        except DjangoValidationError as exc:
            raise ValidationError(exc.message_dict) from exc
        data = IssuedServiceAccountSerializer(issued.account).data
        return Response({**data, "token": issued.token}, status=status.HTTP_201_CREATED)

    def destroy(self, request: Request, team: str, name: str) -> Response:
        service_accounts.revoke(self.get_object(), by=cast(User, request.user))
        return Response(status=status.HTTP_204_NO_CONTENT)


REACH_INVALID = OpenApiResponse(
    description="An entry is not valid: errors keyed by the reach's field path (http_sink, …)."
)


@extend_schema_view(
    get=extend_schema(
        summary="A team's reach",
        description=(
            "What the team's channels may touch: Kafka topic prefixes, files roots and the "
            "HTTP, JDBC, enrich and schema-registry allow-lists. Only the keys set are shown; "
            "a key left out is the site's default (its environment)."
        ),
        responses={200: ReachSerializer, 404: TEAM_NOT_FOUND},
    ),
    put=extend_schema(
        summary="Replace a team's reach (site admins)",
        description=(
            "The whole reach: a key left out or null is the site's default; an empty list "
            "reaches nothing of its kind. Audited (team.reach.change). Channels saved or "
            "started from now on are checked against it; running ones keep theirs until "
            "they start again."
        ),
        request=ReachSerializer,
        responses={200: ReachSerializer, 400: REACH_INVALID, 404: TEAM_NOT_FOUND},
    ),
    patch=extend_schema(
        summary="Change some keys of a team's reach (site admins)",
        description="As PUT, for the keys sent only; a key sent as null goes back to the default.",
        request=ReachSerializer,
        responses={200: ReachSerializer, 400: REACH_INVALID, 404: TEAM_NOT_FOUND},
    ),
)
class TeamReachView(APIView):
    """``teams/{team}/reach/``: members read it; only site admins change it."""

    required_permissions = {
        "get": permissions.AUTHENTICATED,
        "put": SET_REACH,
        "patch": SET_REACH,
    }

    def team(self, request: Request, name: str) -> Team:
        """The team among the caller's (404 otherwise), once they may do what is asked (403)."""
        teams = permissions.visible_teams(request.user)
        team = get_object_or_404(teams, name=name)
        self.check_object_permissions(request, team)
        return team

    def get(self, request: Request, team: str) -> Response:
        return Response(dict(self.team(request, team).reach or {}))

    def put(self, request: Request, team: str) -> Response:
        return self._set(request, self.team(request, team), _body(request))

    def patch(self, request: Request, team: str) -> Response:
        found = self.team(request, team)
        changes = _body(request)
        merged = {**(found.reach or {}), **changes}
        return self._set(request, found, {k: v for k, v in merged.items() if v is not None})

    def _set(self, request: Request, team: Team, reach: dict) -> Response:
        try:
            saved = team_policy.set_reach(team, reach, by=cast(User, request.user))
        except InvalidReach as exc:
            raise ValidationError(_keyed(exc.errors)) from exc
        return Response(dict(saved.reach))


def _body(request: Request) -> dict:
    """The request's reach object, its keys checked (unknown keys and non-objects: 400)."""
    data = request.data
    if not isinstance(data, dict):
        raise ValidationError({"body": ["must be a JSON object of the reach's keys"]})
    message = f"is not a key of a reach; the keys are: {', '.join(KEYS)}"
    unknown = [key for key in data if key not in KEYS][:20]  # a few are enough to say it
    errors = {str(key)[:100]: [message] for key in unknown}
    given = {key: value for key, value in data.items() if key in KEYS and value is not None}
    try:
        parse_reach(given)
    except InvalidReach as exc:
        errors.update(_keyed(exc.errors))
    if errors:
        raise ValidationError(errors)
    return dict(data)


def _keyed(errors: dict[str, list[str]]) -> dict[str, list[str]]:
    return {path or "body": messages for path, messages in errors.items()}
