"""HTTP ingestion: producers post events to a channel with an ``http`` source
(``channels/{name}/events``), authenticated by the channel's ingestion token
(:mod:`console.api.ingest.authentication`), which editors issue, rotate and revoke
(``channels/{name}/ingest-token``). The work is :mod:`console.services.ingest`'s."""

from __future__ import annotations

import math

from django.conf import settings
from django.shortcuts import get_object_or_404
from drf_spectacular.utils import OpenApiResponse, extend_schema
from rest_framework import status, viewsets
from rest_framework.decorators import action
from rest_framework.exceptions import ParseError, Throttled
from rest_framework.request import Request
from rest_framework.response import Response

from console import permissions, services
from console.api.exceptions import RequestTooLarge
from console.api.ingest.authentication import (
    INGEST_AUTHENTICATION,
    CanPostEvents,
    PresentedToken,
    UnreadBodyParser,
)
from console.api.ingest.schema import (
    INGEST_DESCRIPTION,
    INGEST_EXAMPLES,
    INGEST_REQUEST,
    INGEST_RESPONSES,
    INGEST_TOKEN_DESCRIPTION,
)
from console.api.ingest.serializers import IngestTokenStateSerializer, IssuedIngestTokenSerializer
from console.api.metadata import NoSerializerMetadata
from console.api.parsers import JSONSyntaxError, StrictJSONError, loads_strict
from console.api.responses import NOT_FOUND
from console.api.scoping import channel_or_404
from console.models import Channel
from console.selectors.channels import ingest_token_state
from console.selectors.cloudevents import is_json_media_type
from console.services.ingest import ACCEPTED, REJECTED, IngestReport, http_source_config, tokens
from console.services.ingest.rate import IngestRateLimited


def read_body(request: Request, limit: int) -> bytes:
    """The raw request body; :class:`RequestTooLarge` (413) past ``limit`` bytes.

    Reads straight from the stream (no DRF parsing, no Django upload limit) and never
    reads more than ``limit + 1`` bytes.
    """
    declared = request.META.get("CONTENT_LENGTH") or "0"
    if declared.isdigit() and int(declared) > limit:
        raise RequestTooLarge(f"the body is {declared} bytes; the limit is {limit}")
    body = request._request.read(limit + 1)
    if len(body) > limit:
        raise RequestTooLarge(f"the body is over the limit of {limit} bytes")
    return body


def check_ingest_json(request: Request, body: bytes) -> None:
    """Hold posted events to the JSON limits of every API body (:mod:`console.api.parsers`):
    :class:`ParseError` (400, naming the path) for nesting deeper than
    ``SLUICE_JSON_MAX_DEPTH`` or a repeated key, before anything decodes the events.

    Only bodies ingestion reads as JSON (a JSON media type, or none with ``ce-*`` headers);
    a body that is not JSON at all is left to ingestion, which says so in its own words.
    Strings may hold NUL: events go to Kafka, not to the database.
    """
    content_type = request.content_type or ""
    binary_mode = any(name.lower().startswith("ce-") for name in request.headers)
    if not body or not (is_json_media_type(content_type) or (binary_mode and not content_type)):
        return
    try:
        loads_strict(body, storable=False)
    except JSONSyntaxError:
        return
    except StrictJSONError as exc:
        raise ParseError(str(exc)) from None


def ingest_status(report: IngestReport) -> int:
    """202 all accepted, 207 some rejected, 400 none valid, 503 Kafka did not confirm some."""
    if not report.complete:
        return status.HTTP_503_SERVICE_UNAVAILABLE
    if report.count(REJECTED) == 0:
        return status.HTTP_202_ACCEPTED
    if report.count(ACCEPTED) == 0:
        return status.HTTP_400_BAD_REQUEST
    return status.HTTP_207_MULTI_STATUS


class IngestViewSet(viewsets.GenericViewSet):
    """HTTP ingestion and the channel's ingestion token (``channels/{name}/…``).

    Posting events has its own authentication and permission, not the console's: a token
    request needs no session (so no CSRF); a console operator may post with a session (CSRF
    checked) or a DRF token. The token is issued or rotated (POST), revoked (DELETE) and
    looked at (GET, never the token itself) with the console's roles.
    """

    metadata_class = NoSerializerMetadata
    lookup_field = "name"
    lookup_value_converter = "str"
    required_permissions = {
        "ingest_token": permissions.seeing(),
        "issue_ingest_token": permissions.MANAGE_INGEST_TOKENS,
        "revoke_ingest_token": permissions.MANAGE_INGEST_TOKENS,
    }

    @extend_schema(
        operation_id="channels_events",
        summary="Send events to a channel (http source)",
        description=INGEST_DESCRIPTION,
        request=INGEST_REQUEST,
        responses=INGEST_RESPONSES,
        examples=INGEST_EXAMPLES,
    )
    @action(
        detail=True,
        methods=["post"],
        authentication_classes=INGEST_AUTHENTICATION,
        permission_classes=[CanPostEvents],
        parser_classes=[UnreadBodyParser],  # the body is read raw, with its own size limit
    )
    def events(self, request: Request, name: str) -> Response:
        if isinstance(request.auth, PresentedToken):  # the token is this channel's: any team
            channel = get_object_or_404(Channel, name=name)
        else:
            channel = channel_or_404(self, request, name)
        http_source_config(channel)  # 409 before reading the body
        body = read_body(request, settings.SLUICE_INGEST_MAX_REQUEST_BYTES)
        check_ingest_json(request, body)
        try:
            report = services.ingest_events(
                channel,
                content_type=request.content_type or "",
                headers=request.headers,
                body=body,
            )
        except IngestRateLimited as exc:
            # Retry-After in whole seconds, at least 1 (DRF sends no header for 0).
            raise Throttled(wait=max(1, math.ceil(exc.retry_after)), detail=str(exc)) from None
        return Response(report.as_dict(), status=ingest_status(report))

    @extend_schema(
        operation_id="channels_ingest_token_retrieve",
        summary="Does the channel have an ingestion token?",
        description="Whether a token was issued and its prefix; never the token itself.",
        responses={200: IngestTokenStateSerializer, 404: NOT_FOUND},
    )
    @action(detail=True, methods=["get"], url_path="ingest-token")
    def ingest_token(self, request: Request, name: str) -> Response:
        channel = channel_or_404(self, request, name)
        return Response(IngestTokenStateSerializer(ingest_token_state(channel)).data)

    @extend_schema(
        operation_id="channels_ingest_token_create",
        summary="Issue or rotate the channel's ingestion token",
        description=INGEST_TOKEN_DESCRIPTION,
        request=None,
        responses={
            201: OpenApiResponse(IssuedIngestTokenSerializer, "Issued (the channel had none)."),
            200: OpenApiResponse(
                IssuedIngestTokenSerializer, "Rotated: the old token stopped working."
            ),
            404: NOT_FOUND,
        },
    )
    @ingest_token.mapping.post
    def issue_ingest_token(self, request: Request, name: str) -> Response:
        channel = channel_or_404(self, request, name)
        issued = tokens.issue_ingest_token(channel)
        code = status.HTTP_201_CREATED if issued.created else status.HTTP_200_OK
        return Response(IssuedIngestTokenSerializer(issued).data, status=code)

    @extend_schema(
        operation_id="channels_ingest_token_destroy",
        summary="Revoke the channel's ingestion token",
        description="Producers using it are refused (403) from now on. Idempotent.",
        responses={204: None, 404: NOT_FOUND},
    )
    @ingest_token.mapping.delete
    def revoke_ingest_token(self, request: Request, name: str) -> Response:
        tokens.revoke_ingest_token(channel_or_404(self, request, name))
        return Response(status=status.HTTP_204_NO_CONTENT)
