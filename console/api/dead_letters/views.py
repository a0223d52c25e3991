"""``channels/{name}/dead-letters/``: a channel's dead letters, read back from its
dead-letter target (:mod:`console.selectors.dead_letters`), and their redrive
(:mod:`console.services.dead_letters`)."""

from __future__ import annotations

from typing import cast

from django.contrib.auth.models import User
from django.http import Http404
from drf_spectacular.openapi import AutoSchema
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import (
    OpenApiExample,
    OpenApiParameter,
    OpenApiResponse,
    extend_schema,
)
from rest_framework import serializers, status, viewsets
from rest_framework.decorators import action
from rest_framework.request import Request
from rest_framework.response import Response

from console import permissions
from console.api.dead_letters.serializers import (
    DeadLetterFilterSerializer,
    DeadLetterPageSerializer,
    DeadLetterSerializer,
    DeadLetterSummarySerializer,
    RedriveRequestSerializer,
    RedriveResultSerializer,
    filters_of,
)
from console.api.exceptions import ServiceUnavailable
from console.api.metadata import NoSerializerMetadata
from console.api.pagination import LimitOffsetPagination
from console.api.responses import QUERY_ERRORS, RUNTIME_DOWN, ErrorDetailSerializer
from console.api.scoping import channel_or_404
from console.models import Channel
from console.selectors.dead_letters import SCAN_LIMIT, get_dead_letter, list_dead_letters
from console.services.dead_letters import (
    InvalidRedrive,
    RedriveUnavailable,
    redrive_dead_letters,
    redrives_of,
)

OPERATE_DEAD_LETTERS = permissions.Need(permissions.OPERATE_CHANNEL, "redrive dead letters")
SEE_DEAD_LETTERS = permissions.seeing(what="dead letters")
CHANNEL_NOT_FOUND = OpenApiResponse(ErrorDetailSerializer, description="No channel has this name.")
KAFKA_DOWN = OpenApiResponse(
    ErrorDetailSerializer, description="The dead-letter target's Kafka did not answer."
)


class DeadLetterPageSchema(AutoSchema):
    """The list answers :class:`DeadLetterPageSerializer` as it is: a page of the API's one
    pagination with what the scan looked at beside it (not an array drf-spectacular would
    wrap in a page of its own); its ``limit`` and ``offset`` are declared on the operation."""

    def _is_list_view(self, serializer=None) -> bool:
        return False


PAGE_PARAMETERS = [
    OpenApiParameter(
        "limit", OpenApiTypes.INT, description=LimitOffsetPagination.limit_query_description
    ),
    OpenApiParameter("offset", OpenApiTypes.INT, description="The first result's index."),
]


class DeadLetterViewSet(viewsets.GenericViewSet):
    # channels/{name}/dead-letters/: list, one in full, redrive. (A comment, not a docstring:
    # drf-spectacular would take it for the description of every operation.)

    schema = DeadLetterPageSchema()
    metadata_class = NoSerializerMetadata
    pagination_class = LimitOffsetPagination
    serializer_class = DeadLetterSummarySerializer
    lookup_field = "letter_id"
    lookup_value_converter = "str"
    required_permissions = {
        "list": SEE_DEAD_LETTERS,
        "retrieve": SEE_DEAD_LETTERS,
        "redrive": OPERATE_DEAD_LETTERS,
    }

    def channel(self) -> Channel:
        return channel_or_404(self, self.request, self.kwargs["name"])

    @extend_schema(
        operation_id="channels_dead_letters_list",
        summary="List a channel's dead letters",
        description=(
            "The dead letters in the channel's dead-letter target (Kafka topic, files "
            "directory or JDBC table), newest first, filtered. Bounded: the newest "
            f"{SCAN_LIMIT} (per Kafka partition) are read, `scan` says how many and whether "
            "older ones were left out. Reading moves no consumer group. A target that cannot "
            "be read back (http, TLS Kafka) answers an empty page with `target.note`."
        ),
        parameters=[DeadLetterFilterSerializer, *PAGE_PARAMETERS],
        responses={
            200: DeadLetterPageSerializer,
            400: QUERY_ERRORS,
            404: CHANNEL_NOT_FOUND,
            503: KAFKA_DOWN,
        },
    )
    def list(self, request: Request, name: str) -> Response:
        channel = self.channel()
        query = DeadLetterFilterSerializer(data=request.query_params)
        query.is_valid(raise_exception=True)
        scan = list_dead_letters(channel, query.filters())
        page = self.paginate_queryset(scan.letters)
        assert page is not None and self.paginator is not None  # pagination_class is set
        redriven = redrives_of(channel, [letter.id for letter in page])
        response = self.paginator.get_paginated_response(
            DeadLetterSummarySerializer(page, many=True, context={"redriven": redriven}).data
        )
        target = scan.target
        response.data["target"] = {
            "type": target.type,
            "location": target.location,
            "readable": target.readable,
            "note": target.note,
        }
        response.data["scan"] = {
            "scanned": scan.scanned,
            "limit": SCAN_LIMIT,
            "limit_reached": scan.limit_reached,
        }
        response.data["facets"] = scan.facets
        return response

    @extend_schema(
        operation_id="channels_dead_letters_retrieve",
        summary="Get one dead letter in full",
        description=(
            "The error (class, message, stage, a bus's rule and target), where the record "
            "came from, the original record as read, and the event the failing stage received."
        ),
        parameters=[
            OpenApiParameter("letter_id", OpenApiTypes.STR, OpenApiParameter.PATH),
        ],
        responses={
            200: DeadLetterSerializer,
            404: OpenApiResponse(
                ErrorDetailSerializer,
                description="No channel has this name, or no dead letter this id (either).",
            ),
            503: KAFKA_DOWN,
        },
    )
    def retrieve(self, request: Request, name: str, letter_id: str) -> Response:
        channel = self.channel()
        letter = get_dead_letter(channel, letter_id)
        if letter is None:
            raise Http404(f"no dead letter {letter_id!r} in this channel's dead-letter target")
        redriven = redrives_of(channel, [letter.id])
        return Response(DeadLetterSerializer(letter, context={"redriven": redriven}).data)

    @extend_schema(
        operation_id="channels_dead_letters_redrive",
        summary="Redrive dead letters",
        description=(
            "Send dead letters back through the channel once their cause is fixed: the "
            "selected ones (`ids`) or all that match the filters (`all: true`, the newest "
            f"{SCAN_LIMIT} at most). Their ORIGINAL records are written to the channel's "
            "redrive topic (`sluice-redrive.<channel>`, headers sluice-origin-topic, "
            "-partition, -offset, -timestamp and sluice-dead-letter-id), and a bounded "
            "redrive run of the channel's current spec processes exactly those records into "
            "its sinks, each event marked `sluicereplay` = the run id and `sluicerun` = "
            "`redrive`. Into live targets only with `confirm: true` (else 400 on `confirm`, "
            "naming them, and nothing is written). Each letter is then marked `redriven` with "
            "the run and its outcome; one that fails again is a new dead letter. Audited; "
            "counted in /metrics (sluice_dead_letters_redriven_total)."
        ),
        request=RedriveRequestSerializer,
        responses={
            202: RedriveResultSerializer,
            400: OpenApiResponse(
                response=OpenApiTypes.OBJECT,
                description=(
                    "The selection is invalid or names nothing that can be redriven (each key "
                    "a field, with its messages), or the body is not JSON (detail)."
                ),
                examples=[
                    OpenApiExample(
                        "Nothing to redrive",
                        value={"ids": ["nothing to redrive: no such dead letter"]},
                    )
                ],
            ),
            404: CHANNEL_NOT_FOUND,
            503: RUNTIME_DOWN,
        },
    )
    @action(detail=False, methods=["post"])
    def redrive(self, request: Request, name: str) -> Response:
        channel = self.channel()
        body = RedriveRequestSerializer(data=request.data)
        body.is_valid(raise_exception=True)
        data = body.validated_data
        try:
            result = redrive_dead_letters(
                channel,
                ids=data.get("ids"),
                filters=None if "ids" in data else filters_of(data),
                # RolePermission refuses anonymous requests: request.user is a User.
                user=cast(User, request.user),
                confirm=data.get("confirm", False),
            )
        except RedriveUnavailable as exc:
            raise ServiceUnavailable(str(exc), code="redrive_unavailable") from exc
        except InvalidRedrive as exc:
            raise serializers.ValidationError(exc.errors) from exc
        return Response(RedriveResultSerializer(result).data, status=status.HTTP_202_ACCEPTED)
