"""``schemas/``: the schema registry as the console shows it: subjects, their versions, the
difference between two versions, and registering a schema from the console's form (checked
first: ``schemas/check``). Clients register through the Confluent Schema Registry API
(``/schema-registry/``, docs/schema-registry.md); both go through the same service, under the
same rules, and are audited (``schema.register``).

Subjects belong to teams (a name is unique in its team): lists show the subjects of the teams
the caller may see (``?team=`` keeps one), a subject is found by name among them (``?team=``
when the name is in several), another team's subject is a 404, and registering names the team
(``team``, as channels: :func:`console.api.scoping.creation_team`)."""

from __future__ import annotations

import difflib
import json
import re
from dataclasses import dataclass

from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import (
    OpenApiExample,
    OpenApiParameter,
    OpenApiResponse,
    extend_schema,
    extend_schema_view,
)
from rest_framework import status, viewsets
from rest_framework.decorators import action
from rest_framework.exceptions import NotFound, ValidationError
from rest_framework.request import Request
from rest_framework.response import Response

from console import permissions
from console.api.exceptions import flatten_errors
from console.api.pagination import LimitOffsetPagination
from console.api.schemas.serializers import (
    DiffSerializer,
    IncompatibleSerializer,
    RegisteredSerializer,
    RegistrationCheckSerializer,
    RegistrationSerializer,
    SubjectSerializer,
    SubjectShapeSerializer,
    VersionSerializer,
)
from console.api.scoping import creation_team
from console.audit import AUDIT_TEAM
from console.errors import RegistryError
from console.models import TEAM_NAME_PATTERN, Subject, SubjectVersion, Team
from console.schemas import check_compatibility
from console.selectors import schemas as selectors
from console.services import schemas as services

SEE = permissions.SEE_SCHEMAS
NAME = OpenApiParameter("name", OpenApiTypes.STR, OpenApiParameter.PATH, description="Subject.")
TEAM = OpenApiParameter(
    "team",
    OpenApiTypes.STR,
    description="The subject's team: needed when subjects of that name are in several of "
    "your teams.",
)
TEAM_FILTER = OpenApiParameter("team", OpenApiTypes.STR, description="Only this team's subjects.")
DELETED = OpenApiParameter(
    "deleted", OpenApiTypes.BOOL, description="Include soft-deleted versions."
)

TEAM_NAME = re.compile(TEAM_NAME_PATTERN)
"""A name a team may have: a ``?team=`` that does not match names none."""


def _not_found(exc: RegistryError) -> NotFound:
    return NotFound(exc.message)


#: Confluent's error codes for a refused registration → the form field they are about.
_REGISTRY_FIELDS = {42208: "subject", 42201: "schema"}


def _candidate(request: Request, need: permissions.Need) -> tuple[Team, str, services.Candidate]:
    """The registration form's body as the service takes it, with the team it is for (where
    the caller holds ``need``); a 400 keyed by field path (``subject``, ``schema``,
    ``references[0].version``, ``team``) when it is not one."""
    body = RegistrationSerializer(data=request.data)
    if not body.is_valid():
        raise ValidationError(flatten_errors(body.errors))
    data = body.validated_data
    team = creation_team(request, data["team"], need)
    references = [dict(ref) for ref in data["references"]]
    candidate = services.Candidate(data["schema_type"], data["schema"], references)
    return team, data["subject"], candidate


def _team_ids(request: Request) -> set[int] | None:
    """The teams whose subjects the caller sees (``None``: every team), kept to ``?team=``
    (a team they may not see: none)."""
    visible = permissions.visible_team_ids(request.user)
    name = request.query_params.get("team")
    if name is None:
        return visible
    if not TEAM_NAME.fullmatch(name):  # no team is named so (NUL and all: never to the DB)
        return set()
    found = Team.objects.filter(name=name).values_list("pk", flat=True).first()
    if found is None or (visible is not None and found not in visible):
        return set()
    return {found}


def _subject_team(request: Request, name: str) -> Team:
    """The team of the caller's subject ``name`` (among the teams they see, ``?team=``): 404
    when none of them has it, 400 on ``team`` when several do and none is named."""
    if "\x00" in name:  # no subject is named so (PostgreSQL refuses NUL in text)
        raise NotFound(f"Subject '{name}' not found.")
    subjects = permissions.visible(Subject.objects.filter(name=name), request.user)
    team_name = request.query_params.get("team")
    if team_name is not None:
        if not TEAM_NAME.fullmatch(team_name):  # no team is named so (never to the DB)
            raise NotFound(f"Subject '{name}' not found.")
        subjects = subjects.filter(team__name=team_name)
    found = list(subjects.select_related("team")[:2])
    if not found:
        raise NotFound(f"Subject '{name}' not found.")
    if len(found) > 1:
        teams = ", ".join(sorted(s.team.name for s in subjects.select_related("team")))
        raise ValidationError({"team": [f"Subjects named {name!r} are in {teams}: name one."]})
    return found[0].team


def _located(exc: RegistryError, candidate: services.Candidate) -> ValidationError:
    """A refused name or schema as a 400 at its field, in the registry's words; a reference
    that cannot be resolved is about ``references``."""
    field = _REGISTRY_FIELDS.get(exc.error_code, "schema")
    if field == "schema" and candidate.references and "reference" in exc.message:
        field = "references"
    return ValidationError({field: [exc.message]})


REGISTER_EXAMPLE = OpenApiExample(
    "An Avro record",
    request_only=True,
    value={
        "subject": "orders-value",
        "schema_type": "AVRO",
        "schema": '{"type": "record", "name": "Order", "fields": '
        '[{"name": "id", "type": "string"}, {"name": "total", "type": "double"}]}',
    },
)


@dataclass
class Diff:
    subject: str
    old: SubjectVersion
    new: SubjectVersion
    diff: str
    backward: list[str]
    forward: list[str]


def _pretty(version: SubjectVersion) -> list[str]:
    text = version.schema.schema
    if version.schema.schema_type in ("AVRO", "JSON"):
        text = json.dumps(json.loads(text), indent=2, ensure_ascii=False)
    return text.splitlines(keepends=True)


@extend_schema_view(
    list=extend_schema(
        summary="List the registry's subjects",
        description=(
            "Every subject of your teams with at least one version that is not deleted, by "
            "team and name, with its latest version and the compatibility level that applies. "
            "Needs `console.view_subject` (the viewer role)."
        ),
        parameters=[TEAM_FILTER],
        responses={200: SubjectSerializer(many=True)},
    ),
    retrieve=extend_schema(
        summary="One subject",
        parameters=[NAME, TEAM],
        responses={200: SubjectSerializer, 404: None},
    ),
    create=extend_schema(
        operation_id="schemas_register",
        summary="Register a schema",
        description=(
            "Registers the schema under the subject: a new subject gets version 1, an existing "
            "one its next version after the check its compatibility level makes against its "
            "versions (Confluent's rules, as `POST /schema-registry/subjects/{subject}/versions`). "
            "A schema the subject already has is not registered again: that version is answered "
            "with `created: false` and 200. Needs `console.add_subjectversion` (the editor "
            "role) in the team; audited as `schema.register`. Check first with `schemas/check`."
        ),
        request=RegistrationSerializer,
        examples=[REGISTER_EXAMPLE],
        responses={
            201: RegisteredSerializer,
            200: RegisteredSerializer,
            400: OpenApiResponse(
                description="Each problem at its field: `subject` (a name the registry refuses), "
                "`schema_type`, `schema` (it does not parse, with where), `references[i].…`."
            ),
            409: OpenApiResponse(
                response=IncompatibleSerializer,
                description="The compatibility level refuses it: the registry's message, the "
                "level and each incompatibility.",
            ),
        },
    ),
)
class SchemaSubjectViewSet(viewsets.ViewSet):
    lookup_field = "name"
    lookup_value_converter = "str"
    pagination_class = LimitOffsetPagination
    required_permissions = {
        "list": SEE,
        "retrieve": SEE,
        "versions": SEE,
        "diff": SEE,
        "shape": SEE,
        "create": permissions.REGISTER_SCHEMAS,
        "check": SEE,
    }

    def list(self, request: Request) -> Response:
        rows = selectors.subject_summaries(_team_ids(request))
        paginator = self.pagination_class()
        page = paginator.paginate_queryset(rows, request, view=self)
        return paginator.get_paginated_response(SubjectSerializer(page, many=True).data)

    def retrieve(self, request: Request, name: str) -> Response:
        team = _subject_team(request, name)
        found = selectors.subject_summaries({team.pk}, name=name)
        if not found:
            raise NotFound(f"Subject '{name}' not found.")
        return Response(SubjectSerializer(found[0]).data)

    def create(self, request: Request) -> Response:
        team, name, candidate = _candidate(request, permissions.REGISTER_SCHEMAS)
        setattr(request._request, AUDIT_TEAM, team.pk)  # the audit row is the team's
        actor = request.user.get_username()
        try:
            registered, created = services.register_version(team, name, candidate, actor=actor)
        except RegistryError as exc:
            if exc.status == 409:
                check = services.registration_check(team, name, candidate)
                body = {
                    "detail": exc.message,
                    "compatibility": check.compatibility,
                    "problems": check.problems,
                }
                return Response(IncompatibleSerializer(body).data, status=status.HTTP_409_CONFLICT)
            raise _located(exc, candidate) from exc
        answer = RegisteredSerializer(
            {"team": team.name, "created": created, "version": registered}
        ).data
        return Response(answer, status=status.HTTP_201_CREATED if created else status.HTTP_200_OK)

    @extend_schema(
        operation_id="schemas_check",
        summary="What registering a schema would do",
        description=(
            "The same checks as registering (`POST schemas/`), without registering: whether the "
            "subject exists, the compatibility level that applies, whether the schema passes it "
            "(and why not), and the version it would become, or the version that already holds "
            "it, in the team (`team`, as for registering). Changes nothing: any role may."
        ),
        request=RegistrationSerializer,
        examples=[REGISTER_EXAMPLE],
        responses={
            200: RegistrationCheckSerializer,
            400: OpenApiResponse(description="As for registering: each problem at its field."),
        },
    )
    @action(detail=False, methods=["post"])
    def check(self, request: Request) -> Response:
        team, name, candidate = _candidate(request, SEE)
        try:
            found = services.registration_check(team, name, candidate)
        except RegistryError as exc:
            raise _located(exc, candidate) from exc
        return Response(RegistrationCheckSerializer(found).data)

    @extend_schema(
        summary="A subject's versions",
        description="Oldest first, each with its global id, type, canonical text and references.",
        parameters=[NAME, TEAM, DELETED],
        responses={200: VersionSerializer(many=True), 404: None},
    )
    @action(detail=True, methods=["get"])
    def versions(self, request: Request, name: str) -> Response:
        deleted = request.query_params.get("deleted", "false").lower() == "true"
        try:
            found = selectors.versions(_subject_team(request, name), name, deleted=deleted)
        except RegistryError as exc:
            raise _not_found(exc) from exc
        return Response(VersionSerializer(found, many=True).data)

    @extend_schema(
        summary="The difference between two versions of a subject",
        description=(
            "A unified diff of the two schemas and, in both directions, why one could not "
            "read data written with the other (Confluent's compatibility rules). `from` and "
            "`to` are version numbers or `latest`; by default the previous and the latest."
        ),
        parameters=[
            NAME,
            TEAM,
            OpenApiParameter("from", OpenApiTypes.STR, description="Older version (number)."),
            OpenApiParameter("to", OpenApiTypes.STR, description="Newer version, or `latest`."),
        ],
        responses={200: DiffSerializer, 400: None, 404: None},
    )
    @action(detail=True, methods=["get"])
    def diff(self, request: Request, name: str) -> Response:
        team = _subject_team(request, name)
        try:
            live = selectors.versions(team, name)
        except RegistryError as exc:
            raise _not_found(exc) from exc
        previous = str(live[-2].version) if len(live) > 1 else str(live[-1].version)
        latest = str(live[-1].version)
        params = request.query_params
        try:
            old = selectors.version(team, name, params.get("from", previous), deleted=True)
            new = selectors.version(team, name, params.get("to", latest), deleted=True)
        except RegistryError as exc:
            if exc.status == 422:
                raise ValidationError({"from": [exc.message]}) from exc
            raise _not_found(exc) from exc
        old_parsed, new_parsed = services.parsed_version(old), services.parsed_version(new)
        text = "".join(
            difflib.unified_diff(
                _pretty(old), _pretty(new), f"{name} v{old.version}", f"{name} v{new.version}"
            )
        )
        body = Diff(
            subject=name,
            old=old,
            new=new,
            diff=text,
            backward=check_compatibility("BACKWARD", new_parsed, [old_parsed]),
            forward=check_compatibility("FORWARD", new_parsed, [old_parsed]),
        )
        return Response(DiffSerializer(body).data)

    @extend_schema(
        summary="The shape of a subject's events",
        description=(
            "The JSON Schema of the payload a version describes, whatever its type: what the "
            "builder suggests and checks field paths against when the subject is picked as a "
            "channel's shape (docs/console.md). An Avro or Protobuf schema becomes the JSON "
            "Schema of the value its wire format decodes to; a Protobuf file's first message "
            "by default, or `message`."
        ),
        parameters=[
            NAME,
            TEAM,
            OpenApiParameter(
                "version", OpenApiTypes.STR, description="Version number or `latest` (default)."
            ),
            OpenApiParameter(
                "message", OpenApiTypes.STR, description="Protobuf: a message's full name."
            ),
        ],
        responses={200: SubjectShapeSerializer, 400: None, 404: None},
    )
    @action(detail=True, methods=["get"])
    def shape(self, request: Request, name: str) -> Response:
        params = request.query_params
        team = _subject_team(request, name)
        try:
            found, shape = selectors.subject_shape(
                team, name, params.get("version", "latest"), message=params.get("message", "")
            )
        except RegistryError as exc:
            if exc.status == 422:
                key = "message" if exc.error_code == 42201 else "version"
                raise ValidationError({key: [exc.message]}) from exc
            raise _not_found(exc) from exc
        body = {
            "subject": name,
            "version": found.version,
            "id": found.schema_id,
            "schema_type": found.schema.schema_type,
            "schema": shape.schema,
            "messages": shape.messages,
            "message": shape.message,
        }
        return Response(SubjectShapeSerializer(body).data)
