"""``schemas/``: the schema registry as the console shows it: subjects, their versions, and
the difference between two versions. Read-only; schemas are registered through the
Confluent Schema Registry API (``/schema-registry/``, docs/schema-registry.md)."""

from __future__ import annotations

import difflib
import json
from dataclasses import dataclass

from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, extend_schema, extend_schema_view
from rest_framework import viewsets
from rest_framework.decorators import action
from rest_framework.exceptions import NotFound, ValidationError
from rest_framework.request import Request
from rest_framework.response import Response

from console import permissions
from console.api.pagination import LimitOffsetPagination
from console.api.schemas.serializers import (
    DiffSerializer,
    SubjectSerializer,
    SubjectShapeSerializer,
    VersionSerializer,
)
from console.models import SubjectVersion
from console.schemas import check_compatibility
from console.selectors import schemas as selectors
from console.services import schemas as services
from console.services.errors import RegistryError

SEE = permissions.SEE_SCHEMAS
NAME = OpenApiParameter("name", OpenApiTypes.STR, OpenApiParameter.PATH, description="Subject.")
DELETED = OpenApiParameter(
    "deleted", OpenApiTypes.BOOL, description="Include soft-deleted versions."
)


def _not_found(exc: RegistryError) -> NotFound:
    return NotFound(exc.message)


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
            "Every subject with at least one version that is not deleted, by name, with its "
            "latest version and the compatibility level that applies. Needs "
            "`console.view_subject` (the viewer role)."
        ),
        responses={200: SubjectSerializer(many=True)},
    ),
    retrieve=extend_schema(
        summary="One subject",
        parameters=[NAME],
        responses={200: SubjectSerializer, 404: None},
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
    }

    def list(self, request: Request) -> Response:
        rows = selectors.subject_summaries()
        paginator = self.pagination_class()
        page = paginator.paginate_queryset(rows, request, view=self)
        return paginator.get_paginated_response(SubjectSerializer(page, many=True).data)

    def retrieve(self, request: Request, name: str) -> Response:
        found = selectors.subject_summaries(name=name)
        if not found:
            raise NotFound(f"Subject '{name}' not found.")
        return Response(SubjectSerializer(found[0]).data)

    @extend_schema(
        summary="A subject's versions",
        description="Oldest first, each with its global id, type, canonical text and references.",
        parameters=[NAME, DELETED],
        responses={200: VersionSerializer(many=True), 404: None},
    )
    @action(detail=True, methods=["get"])
    def versions(self, request: Request, name: str) -> Response:
        deleted = request.query_params.get("deleted", "false").lower() == "true"
        try:
            found = selectors.versions(name, deleted=deleted)
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
            OpenApiParameter("from", OpenApiTypes.STR, description="Older version (number)."),
            OpenApiParameter("to", OpenApiTypes.STR, description="Newer version, or `latest`."),
        ],
        responses={200: DiffSerializer, 400: None, 404: None},
    )
    @action(detail=True, methods=["get"])
    def diff(self, request: Request, name: str) -> Response:
        try:
            live = selectors.versions(name)
        except RegistryError as exc:
            raise _not_found(exc) from exc
        previous = str(live[-2].version) if len(live) > 1 else str(live[-1].version)
        latest = str(live[-1].version)
        params = request.query_params
        try:
            old = selectors.version(name, params.get("from", previous), deleted=True)
            new = selectors.version(name, params.get("to", latest), deleted=True)
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
        try:
            found, shape = selectors.subject_shape(
                name, params.get("version", "latest"), message=params.get("message", "")
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
