"""Confluent Schema Registry's REST API over the console's registry, under
``/schema-registry/`` (docs/schema-registry.md), so confluent-kafka's ``SchemaRegistryClient``
and its serializers work against it unchanged.

Each team has its own registry at ``/schema-registry/teams/<team>/`` (a team the caller may not
see is a 404, as one that does not exist); the legacy ``/schema-registry/`` is the caller's one
team when they are in exactly one, else the ``default`` team (:meth:`RegistryView.team`). Subject
names are the team's; schema ids are global, but an id is only found through a subject version
of the team's.

Shapes, status codes and errors (``{"error_code": 40401, "message": "…"}``) are Confluent's;
the content type is ``application/vnd.schemaregistry.v1+json``. Reads go through
:mod:`console.selectors.schemas`, changes through :mod:`console.services.schemas`. The
clients authenticate as they do with Confluent: HTTP basic (``basic.auth.user.info``, a
console user's name and password, or a service account's name and token) or a bearer token (a
service account's ``sls_…`` or a console API token); the console's roles apply, in the team:
viewers read, editors register and delete, team admins set their subjects' compatibility
levels; the global level is set by superusers (or whoever is granted
``console.change_registry_config``).
"""

from __future__ import annotations

import json
import re
from typing import Any, cast

from django.contrib.auth.models import User
from django.http import Http404
from drf_spectacular.utils import extend_schema
from rest_framework.authentication import SessionAuthentication, TokenAuthentication
from rest_framework.exceptions import PermissionDenied
from rest_framework.renderers import JSONRenderer
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from console import permissions
from console.api.exceptions import exception_handler as console_exception_handler
from console.api.parsers import StrictJSONParser
from console.api.schema_registry.runtime_auth import RuntimeReader, RuntimeTokenAuthentication
from console.api.teams.authentication import (
    ServiceAccountAuthentication,
    ServiceAccountBasicAuthentication,
)
from console.audit import AUDIT_TEAM
from console.errors import RegistryError
from console.models import TEAM_NAME_PATTERN, SubjectVersion, Team, default_team_id
from console.schemas.base import AVRO, JSON, SCHEMA_TYPES
from console.schemas.formats import check_compatibility
from console.selectors import schemas as selectors
from console.services import schemas as services

MEDIA_TYPE = "application/vnd.schemaregistry.v1+json"


class RegistryRenderer(JSONRenderer):
    media_type = MEDIA_TYPE


class RegistryParser(StrictJSONParser):
    media_type = MEDIA_TYPE


class RegistryParserUnversioned(StrictJSONParser):
    media_type = "application/vnd.schemaregistry+json"


class BearerAuthentication(TokenAuthentication):
    """A console API token sent as ``Authorization: Bearer <key>``, as confluent-kafka's
    client sends ``bearer.auth.token`` (its logical-cluster headers are ignored)."""

    keyword = "Bearer"


def registry_exception_handler(exc: Exception, context: dict) -> Response | None:
    """Every error as Confluent's ``{"error_code", "message"}``."""
    if isinstance(exc, RegistryError):
        return Response({"error_code": exc.error_code, "message": exc.message}, status=exc.status)
    if isinstance(exc, Http404):
        return Response({"error_code": 404, "message": "HTTP 404 Not Found"}, status=404)
    response = console_exception_handler(exc, context)
    if response is None:
        return None
    data = response.data
    message = str(data.get("detail", data)) if isinstance(data, dict) else str(data)
    code = {401: 40101, 403: 40301}.get(response.status_code, response.status_code)
    if response.status_code == 400:  # a body that is not JSON: Confluent says 422 for it
        response.status_code, code = 422, 42201 if "schema" in message.lower() else 422
    response.data = {"error_code": code, "message": message}
    return response


SEE = permissions.SEE_SCHEMAS


@extend_schema(exclude=True)
class RegistryView(APIView):
    authentication_classes = [
        # first: its WWW-Authenticate header makes failures 401s; a user's password or a
        # service account's token (svc.<team>.<name>:sls_…)
        ServiceAccountBasicAuthentication,
        RuntimeTokenAuthentication,  # Spark drivers reading schemas (runtime_auth.py)
        ServiceAccountAuthentication,  # Bearer sls_…
        BearerAuthentication,
        TokenAuthentication,
        SessionAuthentication,
    ]
    renderer_classes = [RegistryRenderer, JSONRenderer]
    parser_classes = [RegistryParser, RegistryParserUnversioned, StrictJSONParser]
    required_permissions: dict[str, permissions.Need] = {"get": SEE}

    def get_exception_handler(self):
        return registry_exception_handler

    def check_permissions(self, request: Request) -> None:
        """Authenticated (401), the team whose registry this is (404 when the caller may not
        see it, whatever the operation: as a team that does not exist), allowed the operation
        somewhere (:class:`RolePermission`), then in that team (403 naming the role and it)."""
        if request.user.is_authenticated:
            self.registry_team = self.team()
            # the audit trail's row is this team's (console/audit.py)
            setattr(request._request, AUDIT_TEAM, self.registry_team.pk)
        super().check_permissions(request)
        need = permissions.required(request, self)
        if need is not None and need.permission:
            self.require(need)

    def require(self, need: permissions.Need) -> None:
        """403 unless the caller holds ``need`` in this registry's team."""
        if not permissions.may(self.request.user, need.permission, self.registry_team):
            raise PermissionDenied(
                permissions.denial(need.permission, need.doing, self.registry_team.name)
            )

    def team(self) -> Team:
        """The team of this registry: ``teams/<team>/``'s, else (the legacy URL) the caller's
        one team when they are in exactly one, else the ``default`` team. A team the caller
        may not see is a 404, exactly as one that does not exist."""
        user = self.request.user
        runtime = isinstance(user, RuntimeReader)  # the drivers read every team's subjects
        teams = Team.objects.all()
        if not runtime:
            teams = permissions.visible(teams, user, "pk")
        name = self.kwargs.get("team")
        if name is not None:
            # A name no team may have is none's (and NUL never reaches PostgreSQL).
            valid = re.fullmatch(TEAM_NAME_PATTERN, name) is not None
            found = teams.filter(name=name).first() if valid else None
        else:
            ids = None if runtime else permissions.visible_team_ids(user)
            only = next(iter(ids)) if ids is not None and len(ids) == 1 else None
            found = teams.filter(pk=only if only is not None else default_team_id()).first()
        if found is None:
            raise Http404
        return found

    def flag(self, name: str) -> bool:
        return self.request.query_params.get(name, "false").lower() == "true"

    def actor(self) -> str:
        return cast(User, self.request.user).get_username()


def raw_schema(schema_type: str, text: str) -> Any:
    """``…/schema`` answers: the schema itself (JSON for Avro and JSON Schema)."""
    if schema_type in (AVRO, JSON):
        return json.loads(text)
    return text


def version_body(found: SubjectVersion) -> dict[str, Any]:
    body: dict[str, Any] = {
        "subject": found.subject.name,
        "version": found.version,
        "id": found.schema_id,
        "schema": found.schema.schema,
    }
    if found.schema.schema_type != AVRO:  # Confluent leaves out the default type
        body["schemaType"] = found.schema.schema_type
    if found.schema.references:
        body["references"] = found.schema.references
    return body


class RootView(RegistryView):
    def get(self, request: Request, team: str | None = None) -> Response:
        return Response({})


class SubjectsView(RegistryView):
    def get(self, request: Request, team: str | None = None) -> Response:
        prefix = request.query_params.get("subjectPrefix", "")
        return Response(
            selectors.subject_names(self.registry_team, deleted=self.flag("deleted"), prefix=prefix)
        )


class SubjectView(RegistryView):
    """``POST``: is this schema registered under the subject? ``DELETE``: the subject."""

    required_permissions = {"post": SEE, "delete": permissions.DELETE_SCHEMAS}

    def post(self, request: Request, subject: str, team: str | None = None) -> Response:
        candidate = services.Candidate.from_body(request.data)
        parsed = services.parse(self.registry_team, candidate)
        wanted = services.fingerprint(parsed.schema_type, parsed.canonical, candidate.references)
        found_versions = selectors.versions(
            self.registry_team, subject, deleted=self.flag("deleted")
        )
        for found in reversed(found_versions):
            if found.schema.fingerprint == wanted:
                return Response(version_body(found))
        raise RegistryError(404, 40403, "Schema not found")

    def delete(self, request: Request, subject: str, team: str | None = None) -> Response:
        return Response(
            services.delete_subject(self.registry_team, subject, permanent=self.flag("permanent"))
        )


class VersionsView(RegistryView):
    required_permissions = {"get": SEE, "post": permissions.REGISTER_SCHEMAS}

    def get(self, request: Request, subject: str, team: str | None = None) -> Response:
        found = selectors.versions(self.registry_team, subject, deleted=self.flag("deleted"))
        return Response([v.version for v in found])

    def post(self, request: Request, subject: str, team: str | None = None) -> Response:
        candidate = services.Candidate.from_body(request.data)
        registered = services.register(self.registry_team, subject, candidate, actor=self.actor())
        return Response({"id": registered.schema_id})


class VersionView(RegistryView):
    required_permissions = {"get": SEE, "delete": permissions.DELETE_SCHEMAS}

    def get(
        self, request: Request, subject: str, version: str, team: str | None = None
    ) -> Response:
        found = selectors.version(
            self.registry_team, subject, version, deleted=self.flag("deleted")
        )
        return Response(version_body(found))

    def delete(
        self, request: Request, subject: str, version: str, team: str | None = None
    ) -> Response:
        permanent = self.flag("permanent")
        return Response(
            services.delete_version(self.registry_team, subject, version, permanent=permanent)
        )


class VersionSchemaView(RegistryView):
    def get(
        self, request: Request, subject: str, version: str, team: str | None = None
    ) -> Response:
        found = selectors.version(
            self.registry_team, subject, version, deleted=self.flag("deleted")
        )
        return Response(raw_schema(found.schema.schema_type, found.schema.schema))


class ReferencedByView(RegistryView):
    def get(
        self, request: Request, subject: str, version: str, team: str | None = None
    ) -> Response:
        found = selectors.version(self.registry_team, subject, version)
        users = SubjectVersion.objects.filter(
            deleted=False, subject__team=self.registry_team
        ).select_related("schema")
        ids = sorted(
            {
                v.schema_id
                for v in users
                if any(
                    r.get("subject") == subject and r.get("version") == found.version
                    for r in v.schema.references
                )
            }
        )
        return Response(ids)


class SchemaByIdView(RegistryView):
    def get(self, request: Request, schema_id: int, team: str | None = None) -> Response:
        stored = selectors.schema_by_id(self.registry_team, schema_id)
        body: dict[str, Any] = {"schema": stored.schema}
        if stored.schema_type != AVRO:
            body["schemaType"] = stored.schema_type
        if stored.references:
            body["references"] = stored.references
        return Response(body)


class SchemaByIdRawView(RegistryView):
    def get(self, request: Request, schema_id: int, team: str | None = None) -> Response:
        stored = selectors.schema_by_id(self.registry_team, schema_id)
        return Response(raw_schema(stored.schema_type, stored.schema))


class SchemaByIdVersionsView(RegistryView):
    def get(self, request: Request, schema_id: int, team: str | None = None) -> Response:
        found = selectors.versions_of_schema(
            self.registry_team, schema_id, deleted=self.flag("deleted")
        )
        return Response([{"subject": v.subject.name, "version": v.version} for v in found])


class SchemaByIdSubjectsView(RegistryView):
    def get(self, request: Request, schema_id: int, team: str | None = None) -> Response:
        found = selectors.versions_of_schema(
            self.registry_team, schema_id, deleted=self.flag("deleted")
        )
        return Response(sorted({v.subject.name for v in found}))


class SchemaTypesView(RegistryView):
    def get(self, request: Request, team: str | None = None) -> Response:
        return Response(list(SCHEMA_TYPES))


class CompatibilityView(RegistryView):
    """Would this schema be accepted? Against one version (``…/versions/{v}``) under the
    subject's level, or against the versions the level names (``…/versions``)."""

    required_permissions = {"post": SEE}

    def post(
        self, request: Request, subject: str, version: str | None = None, team: str | None = None
    ) -> Response:
        registry = self.registry_team
        candidate = services.Candidate.from_body(request.data)
        parsed = services.parse(registry, candidate)
        if version is None:
            try:
                against = selectors.versions(registry, subject)
            except RegistryError:
                against = []
            problems = services.incompatibilities(
                selectors.subject(registry, subject) if against else None, parsed, against
            )
        else:
            found = selectors.version(registry, subject, version)
            level = selectors.subject_compatibility(found.subject).removesuffix("_TRANSITIVE")
            problems = check_compatibility(level, parsed, [services.parsed_version(found)])
        body: dict[str, Any] = {"is_compatible": not problems}
        if self.flag("verbose"):
            body["messages"] = problems
        return Response(body)


CONFIG = permissions.SET_SCHEMA_CONFIG_NEED
#: A subject's own level is its team's: the team admin's (or a holder of the config grant).
SUBJECT_CONFIG = permissions.Need(
    permissions.MANAGE_TEAM, "set the compatibility level of subjects"
)


class ConfigView(RegistryView):
    """The global level, the same in every team's registry: set by site admins."""

    required_permissions = {"get": SEE, "put": CONFIG, "delete": CONFIG}

    def get(self, request: Request, team: str | None = None) -> Response:
        return Response({"compatibilityLevel": selectors.global_compatibility()})

    def put(self, request: Request, team: str | None = None) -> Response:
        return Response({"compatibility": services.set_global_compatibility(request.data)})

    def delete(self, request: Request, team: str | None = None) -> Response:
        return Response({"compatibilityLevel": services.delete_global_compatibility()})


class SubjectConfigView(RegistryView):
    """A subject's own level: read by viewers, set by the team's admins."""

    # (SEE for all: a team admin holds no config grant; :meth:`require_config` checks theirs)
    required_permissions = {"get": SEE, "put": SEE, "delete": SEE}

    def require_config(self) -> None:
        user = self.request.user
        if not permissions.may(user, CONFIG.permission, self.registry_team):
            self.require(SUBJECT_CONFIG)

    def get(self, request: Request, subject: str, team: str | None = None) -> Response:
        level = selectors.own_compatibility(self.registry_team, subject)
        if level:
            return Response({"compatibilityLevel": level})
        if self.flag("defaultToGlobal"):
            return Response({"compatibilityLevel": selectors.global_compatibility()})
        raise RegistryError(
            404, 40408, f"Subject '{subject}' does not have subject-level compatibility configured"
        )

    def put(self, request: Request, subject: str, team: str | None = None) -> Response:
        self.require_config()
        level = services.set_subject_compatibility(self.registry_team, subject, request.data)
        return Response({"compatibility": level})

    def delete(self, request: Request, subject: str, team: str | None = None) -> Response:
        self.require_config()
        level = services.delete_subject_compatibility(self.registry_team, subject)
        return Response({"compatibilityLevel": level})


class ModeView(RegistryView):
    """Always ``READWRITE``: no IMPORT or READONLY modes here."""

    required_permissions = {"get": SEE, "put": CONFIG}

    def get(
        self, request: Request, subject: str | None = None, team: str | None = None
    ) -> Response:
        return Response({"mode": "READWRITE"})

    def put(
        self, request: Request, subject: str | None = None, team: str | None = None
    ) -> Response:
        mode = request.data.get("mode") if isinstance(request.data, dict) else None
        if mode != "READWRITE":
            raise RegistryError(422, 42204, "Only the READWRITE mode is supported")
        return Response({"mode": "READWRITE"})
