"""The REST API: thin views over :mod:`console.services`.

Channels are addressed by name. Requests that change what runs (start, stop, pause,
resume, restart) return ``202 Accepted`` at once; the change shows up in ``status`` after
the next reconcile pass. A change the channel cannot make from where it is (pause a
STOPPED channel) is ``409 Conflict`` with the reason. Plugins are addressed by
``(kind, type)``: a source and a sink may share a type. The plugin and event-pattern
checks change nothing.
"""

from __future__ import annotations

import math

from django.conf import settings
from django.db.models import Case, Value, When
from django.shortcuts import get_object_or_404
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import (
    OpenApiExample,
    OpenApiParameter,
    OpenApiResponse,
    PolymorphicProxySerializer,
    extend_schema,
    extend_schema_view,
)
from rest_framework import generics, mixins, serializers, status, views, viewsets
from rest_framework.exceptions import NotFound, ParseError, Throttled, ValidationError
from rest_framework.request import Request
from rest_framework.response import Response

from console import permissions, services
from console.api.exceptions import RequestTooLarge
from console.api.ingest_auth import (
    INGEST_AUTHENTICATION,
    CanPostEvents,
    UnreadBodyParser,
)
from console.api.ingest_schema import (
    INGEST_DESCRIPTION,
    INGEST_EXAMPLES,
    INGEST_REQUEST,
    INGEST_RESPONSES,
    INGEST_TOKEN_DESCRIPTION,
)
from console.api.parsers import JSONSyntaxError, StrictJSONError, loads_strict
from console.api.serializers import (
    AuditEventSerializer,
    AuditQuerySerializer,
    ChannelListItemSerializer,
    ChannelOffsetsSerializer,
    ChannelPreviewSerializer,
    ChannelSerializer,
    ChannelStatusSerializer,
    ChannelWithStatusSerializer,
    ClusterSerializer,
    ErrorDetailSerializer,
    EventPatternResultSerializer,
    EventPatternTestSerializer,
    IngestTokenStateSerializer,
    IssuedIngestTokenSerializer,
    LifecycleEventSerializer,
    OffsetsAlterSerializer,
    OffsetsCopySerializer,
    OffsetsMessageSerializer,
    PluginConfigInvalidSerializer,
    PluginConfigSerializer,
    PluginConfigValidSerializer,
    PluginKindErrorSerializer,
    PluginKindQuerySerializer,
    PluginSerializer,
    RestartAnswerSerializer,
    RestartQuerySerializer,
    RevisionSerializer,
    TargetStateSerializer,
    WorkerSerializer,
    ingest_token_state,
)
from console.choices import ConnectorState, PluginKind
from console.models import AuditEvent, Channel, LifecycleEvent, Revision, Worker
from console.services import ingest_tokens, specs
from console.services.audit import audit_events
from console.services.channels import UNCHANGED
from console.services.cloudevents import is_json_media_type
from console.services.ingest_rate import IngestRateLimited

QUERY_ERRORS = OpenApiResponse(
    response={
        "type": "object",
        "additionalProperties": {"type": "array", "items": {"type": "string"}},
    },
    description="A query parameter is invalid; each key is a parameter, with its messages.",
)
SPEC_ERRORS = OpenApiResponse(
    response=OpenApiTypes.OBJECT,
    description=(
        "Invalid request; nothing was saved. Each key is the full path of a bad field, "
        "spec fields included."
    ),
    examples=[
        OpenApiExample(
            "Invalid spec",
            value={
                "spec.source.config.topics": ["Field required"],
                "spec.transforms[0].config.pattern": ["Unknown operator 'prefx'"],
            },
        )
    ],
)
NOT_FOUND = OpenApiResponse(ErrorDetailSerializer, description="No channel has this name.")
RUNTIME_DOWN = OpenApiResponse(
    ErrorDetailSerializer, description="The runtime is unavailable; nothing changed."
)
CONFLICT = OpenApiResponse(
    response=OpenApiTypes.OBJECT,
    description="The channel cannot do this from where it is; nothing changed.",
    examples=[
        OpenApiExample(
            "Pause a stopped channel",
            value={
                "detail": "channel 'orders' is STOPPED: there is no driver to pause; start it first"
            },
        )
    ],
)


@extend_schema_view(
    list=extend_schema(
        summary="List channels",
        description=(
            "With `expand=status`, each channel also carries its runtime status (connector, "
            "tasks, dead letters) and failed channels come first: one call for a whole "
            "operations view, a fixed number of queries whatever the number of channels."
        ),
        parameters=[
            OpenApiParameter(
                "expand",
                OpenApiTypes.STR,
                enum=["status"],
                description="`status`: include each channel's status, failures first.",
            )
        ],
        responses={200: ChannelListItemSerializer(many=True), 400: QUERY_ERRORS},
    ),
    retrieve=extend_schema(
        summary="Get a channel", responses={200: ChannelSerializer, 404: NOT_FOUND}
    ),
    create=extend_schema(
        summary="Create a channel",
        description=(
            "Saves revision 1 of the spec. target_state says what to do with it: STOPPED "
            "(the default) only saves it; RUNNING deploys and starts it, PAUSED deploys it "
            "with a warm driver and its query not started (resume starts it)."
        ),
        responses={201: ChannelSerializer, 400: SPEC_ERRORS, 503: RUNTIME_DOWN},
    ),
    update=extend_schema(
        summary="Replace a channel's description and spec",
        description="A new revision is saved only when the spec changed. Names cannot change.",
        responses={200: ChannelSerializer, 400: SPEC_ERRORS, 404: NOT_FOUND},
    ),
    partial_update=extend_schema(
        summary="Change a channel's description and/or spec",
        responses={200: ChannelSerializer, 400: SPEC_ERRORS, 404: NOT_FOUND},
    ),
    destroy=extend_schema(
        summary="Delete a channel",
        description="Stops and forgets its connector; the checkpoint stays on the runtime.",
        responses={204: None, 404: NOT_FOUND, 503: RUNTIME_DOWN},
    ),
)
class ChannelViewSet(mixins.ListModelMixin, mixins.RetrieveModelMixin, viewsets.GenericViewSet):
    queryset = Channel.objects.with_summary()
    serializer_class = ChannelSerializer
    lookup_field = "name"
    required_permissions = {
        "list": permissions.seeing(),
        "retrieve": permissions.seeing(),
        "status": permissions.seeing(),
        "preview": permissions.seeing(what="channel output"),
        "create": permissions.CREATE,
        "update": permissions.CHANGE,
        "partial_update": permissions.CHANGE,
        "destroy": permissions.DELETE,
        **permissions.OPERATE,
    }

    def list(self, request: Request) -> Response:
        expand = request.query_params.get("expand", "")
        if expand not in ("", "status"):
            raise ValidationError({"expand": ["The only expansion is 'status'."]})
        queryset = self.get_queryset()
        serializer_class = ChannelSerializer
        if expand == "status":
            failed_first = Case(
                When(connector__state=ConnectorState.FAILED, then=Value(0)), default=Value(1)
            )
            queryset = queryset.prefetch_related("connector__tasks").order_by(failed_first, "name")
            serializer_class = ChannelWithStatusSerializer
        page = self.paginate_queryset(queryset)
        data = serializer_class(page, many=True, context=self.get_serializer_context()).data
        return self.get_paginated_response(data)

    def create(self, request: Request) -> Response:
        serializer = self.get_serializer(data=request.data)
        serializer.is_valid(raise_exception=True)
        channel = services.create_channel(**serializer.validated_data, user=request.user)
        return self._respond(channel, status.HTTP_201_CREATED)

    def update(self, request: Request, name: str, partial: bool = False) -> Response:
        channel = self.get_object()
        serializer = self.get_serializer(channel, data=request.data, partial=partial)
        serializer.is_valid(raise_exception=True)
        data = serializer.validated_data
        services.update_channel(
            channel,
            spec=data.get("spec"),
            description=data.get("description"),
            restart_policy=data.get("restart_policy"),
            ingest_rate_limit=data.get("ingest_rate_limit", UNCHANGED),
            user=request.user,
        )
        return self._respond(channel, status.HTTP_200_OK)

    def partial_update(self, request: Request, name: str) -> Response:
        return self.update(request, name, partial=True)

    def destroy(self, request: Request, name: str) -> Response:
        services.delete_channel(self.get_object(), user=request.user)
        return Response(status=status.HTTP_204_NO_CONTENT)

    @extend_schema(
        operation_id="channels_start",
        summary="Start a channel",
        description=(
            "Deploys the latest revision with target RUNNING. Returns at once; the connector's "
            "state shows up in status."
        ),
        request=None,
        responses={202: TargetStateSerializer, 404: NOT_FOUND, 503: RUNTIME_DOWN},
    )
    def start(self, request: Request, name: str) -> Response:
        channel = self.get_object()
        services.start_channel(channel, user=request.user)
        return self._accepted(channel.name, "RUNNING")

    @extend_schema(
        operation_id="channels_stop",
        summary="Stop a channel",
        description="Sets the target to STOPPED: the driver is released, the checkpoint kept.",
        request=None,
        responses={202: TargetStateSerializer, 404: NOT_FOUND, 503: RUNTIME_DOWN},
    )
    def stop(self, request: Request, name: str) -> Response:
        channel = self.get_object()
        services.stop_channel(channel, user=request.user)
        return self._accepted(channel.name, "STOPPED")

    @extend_schema(
        operation_id="channels_pause",
        summary="Pause a channel",
        description=(
            "Sets the target to PAUSED: the driver stays warm (JVM, SparkSession) with its query "
            "stopped, so resume takes about a second. Pausing a paused channel changes nothing."
        ),
        request=None,
        responses={202: TargetStateSerializer, 404: NOT_FOUND, 409: CONFLICT, 503: RUNTIME_DOWN},
    )
    def pause(self, request: Request, name: str) -> Response:
        channel = self.get_object()
        services.pause_channel(channel, user=request.user)
        return self._accepted(channel.name, "PAUSED")

    @extend_schema(
        operation_id="channels_resume",
        summary="Resume a paused channel",
        description=(
            "Sets the target back to RUNNING: the query starts again from its checkpoint, with "
            "the revision already deployed (start deploys the latest). A STOPPED channel is "
            "started, not resumed (409)."
        ),
        request=None,
        responses={202: TargetStateSerializer, 404: NOT_FOUND, 409: CONFLICT, 503: RUNTIME_DOWN},
    )
    def resume(self, request: Request, name: str) -> Response:
        channel = self.get_object()
        services.resume_channel(channel, user=request.user)
        return self._accepted(channel.name, "RUNNING")

    @extend_schema(
        operation_id="channels_restart",
        summary="Restart a channel's connector and tasks",
        description=(
            "Kafka Connect's KIP-745 restart. include_tasks adds the tasks to what is asked "
            "for; only_failed keeps only what is FAILED. A channel's connector and tasks run "
            "in one driver, so when anything is to restart the driver is replaced (a new "
            "generation) and every task restarts with it; with only_failed and nothing "
            "FAILED nothing restarts. Unlike Kafka Connect (204 without a body when only the "
            "connector restarts) the answer is always 202 with the connector and its tasks: "
            "state RESTARTING for what restarts, the current state otherwise. The request is "
            "recorded as a lifecycle event with its reason. A STOPPED or never-started "
            "channel has nothing to restart (409)."
        ),
        parameters=[RestartQuerySerializer],
        request=None,
        responses={
            202: RestartAnswerSerializer,
            400: OpenApiTypes.OBJECT,
            404: NOT_FOUND,
            409: CONFLICT,
            503: RUNTIME_DOWN,
        },
        examples=[
            OpenApiExample(
                "Only the failed parts (task 1 failed)",
                response_only=True,
                status_codes=["202"],
                value={
                    "name": "orders",
                    "connector": {"state": "RESTARTING", "worker_id": "host-1"},
                    "tasks": [
                        {"id": 0, "state": "RESTARTING", "worker_id": "host-1"},
                        {"id": 1, "state": "RESTARTING", "worker_id": "host-1"},
                    ],
                },
            )
        ],
    )
    def restart(self, request: Request, name: str) -> Response:
        channel = self.get_object()
        query = RestartQuerySerializer(data=request.query_params)
        query.is_valid(raise_exception=True)
        plan = services.restart_channel(channel, **query.validated_data, user=request.user)
        return Response(RestartAnswerSerializer(plan).data, status=status.HTTP_202_ACCEPTED)

    @extend_schema(
        operation_id="channels_status",
        summary="Get a channel's runtime status",
        description=(
            "The connector and its tasks as the control loop last recorded them; drift is "
            "true while the deployed revision is not the latest saved one. `stages` holds "
            "each stage's event counts (in / out / failed) since the driver started; "
            "`driver_id` the Spark driver running the channel's query and `reason` why the "
            "channel is in its state when the state alone does not say."
        ),
        responses={200: ChannelStatusSerializer, 404: NOT_FOUND},
    )
    def status(self, request: Request, name: str) -> Response:
        channel = get_object_or_404(Channel.objects.with_summary(), name=name)
        return Response(ChannelStatusSerializer(channel).data)

    @extend_schema(
        operation_id="channels_preview",
        summary="Live tail of a channel's output",
        description=(
            "The newest events the channel's `preview` sink kept (its JSON form), newest first."
            " Empty when the channel has no preview sink or never ran."
        ),
        parameters=[
            OpenApiParameter(
                "limit", OpenApiTypes.INT, description="How many events (1-500, default 50)."
            )
        ],
        responses={
            200: ChannelPreviewSerializer,
            400: OpenApiTypes.OBJECT,
            404: NOT_FOUND,
            503: RUNTIME_DOWN,
        },
    )
    def preview(self, request: Request, name: str) -> Response:
        channel = get_object_or_404(Channel, name=name)
        raw = request.query_params.get("limit", "50")
        if not raw.isdigit() or not 1 <= int(raw) <= 500:
            raise ValidationError({"limit": ["Must be a whole number from 1 to 500."]})
        events = services.channel_preview(channel, int(raw))
        return Response(ChannelPreviewSerializer({"name": channel.name, "events": events}).data)

    def _respond(self, channel: Channel, code: int) -> Response:
        fresh = self.get_queryset().get(pk=channel.pk)
        return Response(self.get_serializer(fresh).data, status=code)

    @staticmethod
    def _accepted(name: str, target_state: str) -> Response:
        body = TargetStateSerializer({"name": name, "target_state": target_state}).data
        return Response(body, status=status.HTTP_202_ACCEPTED)


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


def ingest_status(report: services.ingest.IngestReport) -> int:
    """202 all accepted, 207 some rejected, 400 none valid, 503 Kafka did not confirm some."""
    if not report.complete:
        return status.HTTP_503_SERVICE_UNAVAILABLE
    if report.count(services.ingest.REJECTED) == 0:
        return status.HTTP_202_ACCEPTED
    if report.count(services.ingest.ACCEPTED) == 0:
        return status.HTTP_400_BAD_REQUEST
    return status.HTTP_207_MULTI_STATUS


class ChannelEventsView(views.APIView):
    """HTTP ingestion: producers post with the channel's token (console/api/ingest_auth.py).

    Its own authentication and permission, not the console's: a token request needs no
    session (so no CSRF); a console operator may post with a session (CSRF checked) or a
    DRF token.
    """

    authentication_classes = INGEST_AUTHENTICATION
    permission_classes = [CanPostEvents]
    parser_classes = [UnreadBodyParser]  # the body is read raw, with its own size limit

    @extend_schema(
        operation_id="channels_events",
        summary="Send events to a channel (http source)",
        description=INGEST_DESCRIPTION,
        request=INGEST_REQUEST,
        responses=INGEST_RESPONSES,
        examples=INGEST_EXAMPLES,
    )
    def post(self, request: Request, name: str) -> Response:
        channel = get_object_or_404(Channel, name=name)
        services.ingest.http_source_config(channel)  # 409 before reading the body
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


class ChannelIngestTokenView(views.APIView):
    """The channel's ingestion token: issue or rotate (POST), revoke (DELETE), look (GET)."""

    required_permissions = {
        "get": permissions.seeing(),
        "post": permissions.MANAGE_INGEST_TOKENS,
        "delete": permissions.MANAGE_INGEST_TOKENS,
    }

    @extend_schema(
        operation_id="channels_ingest_token_retrieve",
        summary="Does the channel have an ingestion token?",
        description="Whether a token was issued and its prefix; never the token itself.",
        responses={200: IngestTokenStateSerializer, 404: NOT_FOUND},
    )
    def get(self, request: Request, name: str) -> Response:
        channel = get_object_or_404(Channel, name=name)
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
    def post(self, request: Request, name: str) -> Response:
        channel = get_object_or_404(Channel, name=name)
        issued = ingest_tokens.issue_ingest_token(channel)
        code = status.HTTP_201_CREATED if issued.created else status.HTTP_200_OK
        return Response(IssuedIngestTokenSerializer(issued).data, status=code)

    @extend_schema(
        operation_id="channels_ingest_token_destroy",
        summary="Revoke the channel's ingestion token",
        description="Producers using it are refused (403) from now on. Idempotent.",
        responses={204: None, 404: NOT_FOUND},
    )
    def delete(self, request: Request, name: str) -> Response:
        ingest_tokens.revoke_ingest_token(get_object_or_404(Channel, name=name))
        return Response(status=status.HTTP_204_NO_CONTENT)


@extend_schema(
    summary="List a channel's lifecycle events",
    description="Recorded transitions and decisions about the channel, newest first.",
    responses={200: LifecycleEventSerializer(many=True), 404: NOT_FOUND},
)
class ChannelLifecycleView(generics.ListAPIView):
    serializer_class = LifecycleEventSerializer
    required_permissions = {"get": permissions.seeing("lifecycleevent", "lifecycle events")}

    def get_queryset(self):
        channel = get_object_or_404(Channel, name=self.kwargs["name"])
        return LifecycleEvent.objects.filter(channel=channel).order_by("-created_at", "-id")


@extend_schema(
    summary="List the audit trail",
    description=(
        "Every state-changing request to the API and the admin (refused ones included) and "
        "every sign-in, sign-in failure and sign-out, newest first: who, what, the object, "
        "the redacted request body, the HTTP status, when and from where. Needs "
        "`console.view_auditevent` (the viewer role). HTTP ingestion is not recorded."
    ),
    parameters=[AuditQuerySerializer],
    responses={200: AuditEventSerializer(many=True), 400: QUERY_ERRORS},
)
class AuditEventListView(generics.ListAPIView):
    serializer_class = AuditEventSerializer
    queryset = AuditEvent.objects.none()  # the model, for the permission checks
    permission_classes = [permissions.RolePermission]
    required_permissions = {"get": permissions.seeing("auditevent", "the audit trail")}

    def get_queryset(self):
        query = AuditQuerySerializer(data=self.request.query_params)
        query.is_valid(raise_exception=True)
        return audit_events(**query.validated_data)


def _channel_revisions(name: str):
    channel = get_object_or_404(Channel.objects.only("id"), name=name)
    return Revision.objects.filter(channel=channel).select_related("created_by")


@extend_schema(
    summary="List a channel's revisions",
    description=(
        "Every saved version of the channel's spec, newest first: its number, when it was "
        "saved and by whom, and the spec with its secrets redacted. Compare `number` with "
        "the status's `revision` (the one running) and `latest_revision`."
    ),
    responses={200: RevisionSerializer(many=True), 404: NOT_FOUND},
)
class ChannelRevisionListView(generics.ListAPIView):
    serializer_class = RevisionSerializer
    required_permissions = {"get": permissions.seeing("revision", "revisions")}

    def get_queryset(self):
        return _channel_revisions(self.kwargs["name"]).order_by("-number")


@extend_schema(
    summary="Get one revision of a channel",
    responses={
        200: RevisionSerializer,
        404: OpenApiResponse(description="No channel has this name, or it has no such revision."),
    },
)
class ChannelRevisionDetailView(generics.RetrieveAPIView):
    serializer_class = RevisionSerializer
    required_permissions = {"get": permissions.seeing("revision", "revisions")}
    lookup_field = "number"

    def get_queryset(self):
        return _channel_revisions(self.kwargs["name"])


OFFSETS_CONFLICT = OpenApiResponse(
    response=OpenApiTypes.OBJECT,
    description=(
        "The channel is not STOPPED (target STOPPED and connector STOPPED or UNASSIGNED), or "
        "the change cannot be made from where it is; nothing changed."
    ),
    examples=[
        OpenApiExample(
            "Running channel",
            value={
                "detail": "channel 'orders' is RUNNING: stop it before you alter its offsets "
                "(offsets can change only while it is STOPPED)"
            },
        )
    ],
)
OFFSETS_INVALID = OpenApiResponse(
    response=OpenApiTypes.OBJECT,
    description=(
        "The request is not a valid change (each key is the path of a bad field), or the "
        "channel's source has no offsets to move (detail)."
    ),
    examples=[
        OpenApiExample(
            "Bad offset",
            value={"offsets[0].offset.offset": ["Required: the next offset to read (0 or more)."]},
        )
    ],
)
OFFSETS_CHANGED = OpenApiResponse(
    response=OffsetsMessageSerializer,
    description="Recorded; the connector's next start resumes exactly from the new offsets.",
)
OFFSETS_EXAMPLE = OpenApiExample(
    "Two partitions",
    response_only=True,
    status_codes=["200"],
    value={
        "offsets": [
            {"partition": {"topic": "orders", "partition": 0}, "offset": {"offset": 42}},
            {"partition": {"topic": "orders", "partition": 1}, "offset": {"offset": 17}},
        ],
        "note": "",
    },
)


class ChannelOffsetsView(views.APIView):
    """A channel's source offsets, Kafka Connect's KIP-875 way (``/connectors/{name}/offsets``)."""

    required_permissions = {
        "get": permissions.seeing(what="channel offsets"),
        "patch": permissions.ALTER_OFFSETS,
        "delete": permissions.ALTER_OFFSETS,
    }

    @extend_schema(
        operation_id="channels_offsets_retrieve",
        summary="Get a channel's offsets",
        description=(
            "Per source partition, the NEXT offset the channel reads, from its checkpoint's "
            "latest committed batch, with a change waiting for the next start laid over it "
            "(after a reset: an empty list). A channel whose source is not Kafka-backed "
            "(files, generator) answers an empty list with a note."
        ),
        responses={200: ChannelOffsetsSerializer, 404: NOT_FOUND, 503: RUNTIME_DOWN},
        examples=[OFFSETS_EXAMPLE],
    )
    def get(self, request: Request, name: str) -> Response:
        found = services.channel_offsets(get_object_or_404(Channel, name=name))
        return Response(ChannelOffsetsSerializer(found).data)

    @extend_schema(
        operation_id="channels_offsets_alter",
        summary="Alter a stopped channel's offsets",
        description=(
            "Explicit offsets (the partitions named move, the others keep their position) or "
            "a timestamp (every partition to its first record at or after it). Only while the "
            "channel is STOPPED; its next start resumes exactly there. Recorded as a lifecycle "
            "event."
        ),
        request=OffsetsAlterSerializer,
        responses={
            200: OFFSETS_CHANGED,
            400: OFFSETS_INVALID,
            404: NOT_FOUND,
            409: OFFSETS_CONFLICT,
            503: RUNTIME_DOWN,
        },
        examples=[
            OpenApiExample(
                "Explicit offsets",
                request_only=True,
                value={
                    "offsets": [
                        {"partition": {"topic": "orders", "partition": 0}, "offset": {"offset": 10}}
                    ]
                },
            ),
            OpenApiExample(
                "A time", request_only=True, value={"timestamp": "2026-11-01T00:00:00Z"}
            ),
        ],
    )
    def patch(self, request: Request, name: str) -> Response:
        channel = get_object_or_404(Channel, name=name)
        message = services.alter_channel_offsets(channel, request.data, user=request.user)
        return Response({"message": message})

    @extend_schema(
        operation_id="channels_offsets_reset",
        summary="Reset a stopped channel's offsets",
        description=(
            "Forget the channel's position: its next start begins from the source's "
            "starting_offsets. Only while the channel is STOPPED. Recorded as a lifecycle event."
        ),
        request=None,
        responses={
            200: OFFSETS_CHANGED,
            400: OFFSETS_INVALID,
            404: NOT_FOUND,
            409: OFFSETS_CONFLICT,
            503: RUNTIME_DOWN,
        },
    )
    def delete(self, request: Request, name: str) -> Response:
        channel = get_object_or_404(Channel, name=name)
        return Response({"message": services.reset_channel_offsets(channel, user=request.user)})


class ChannelOffsetsCopyView(views.APIView):
    required_permissions = {"post": permissions.ALTER_OFFSETS}

    @extend_schema(
        operation_id="channels_offsets_copy",
        summary="Copy offsets to a stopped channel (migration)",
        description=(
            "MirrorMaker 2's idea: take over from another channel's offsets, or from a "
            "consumer group's committed offsets (what a Kafka Connect sink or a MirrorMaker 2 "
            "checkpoint leaves), for the topics this channel reads, so a pipeline moved to "
            "Sluice neither skips nor replays events. Stop the origin first. Only while this "
            "channel is STOPPED; partitions the origin has no offset for keep their position."
        ),
        request=OffsetsCopySerializer,
        responses={
            200: OFFSETS_CHANGED,
            400: OFFSETS_INVALID,
            404: NOT_FOUND,
            409: OFFSETS_CONFLICT,
            503: RUNTIME_DOWN,
        },
        examples=[
            OpenApiExample(
                "From a Kafka Connect sink's group",
                request_only=True,
                value={"from_consumer_group": "connect-my-sink"},
            ),
            OpenApiExample(
                "From another channel", request_only=True, value={"from_channel": "old"}
            ),
        ],
    )
    def post(self, request: Request, name: str) -> Response:
        channel = get_object_or_404(Channel, name=name)
        message = services.copy_channel_offsets(channel, request.data, user=request.user)
        return Response({"message": message})


@extend_schema_view(
    list=extend_schema(summary="List runtime workers"),
    retrieve=extend_schema(
        summary="Get a runtime worker",
        responses={
            200: WorkerSerializer,
            404: OpenApiResponse(ErrorDetailSerializer, description="No worker has this id."),
        },
    ),
)
class WorkerViewSet(viewsets.ReadOnlyModelViewSet):
    queryset = Worker.objects.prefetch_related("connectors")
    required_permissions = {
        "list": permissions.seeing("worker", "runtime workers"),
        "retrieve": permissions.seeing("worker", "runtime workers"),
    }
    serializer_class = WorkerSerializer
    lookup_field = "worker_id"


# -- plugins -------------------------------------------------------------------------------

KIND_PATH = OpenApiParameter(
    "kind", str, OpenApiParameter.PATH, enum=PluginKind.values, description="The plugin's kind."
)
TYPE_PATH = OpenApiParameter(
    "type", str, OpenApiParameter.PATH, description="The plugin's type, e.g. kafka or filter."
)
KIND_QUERY = OpenApiParameter(
    "kind",
    str,
    OpenApiParameter.QUERY,
    enum=PluginKind.values,
    description="The plugin's kind; needed when the type names plugins of several kinds.",
)
NO_PLUGIN = OpenApiResponse(ErrorDetailSerializer, description="No plugin has this kind and type.")
CONFIG_VALID = OpenApiResponse(
    response=PluginConfigValidSerializer,
    description="The config is valid; here it is normalised, with its secrets redacted.",
    examples=[
        OpenApiExample(
            "Valid Kafka source config",
            value={
                "valid": True,
                "config": {
                    "bootstrap_servers": "localhost:9092",
                    "topics": ["orders"],
                    "starting_offsets": "latest",
                    "format": "json",
                },
            },
        )
    ],
)
CONFIG_INVALID = OpenApiResponse(
    response=PluginConfigInvalidSerializer,
    description=(
        "The config (or the request) is not valid: messages keyed by the path of each bad "
        "field, in the style of spec validation."
    ),
    examples=[
        OpenApiExample(
            "Invalid Kafka source config",
            value={
                "valid": False,
                "errors": {
                    "config.topics": ["field required"],
                    "config.starting_offsets": ["must be 'earliest' or 'latest'"],
                },
            },
        )
    ],
)
KIND_NEEDED = OpenApiResponse(
    response=PolymorphicProxySerializer(
        component_name="PluginConfigByTypeError",
        serializers=[PluginConfigInvalidSerializer, PluginKindErrorSerializer],
        resource_type_field_name=None,
    ),
    description=(
        "The config is not valid (as for plugins/{kind}/{type}/validate), or kind is needed "
        "(the type names plugins of several kinds) or is not a kind."
    ),
    examples=[
        *CONFIG_INVALID.examples,
        OpenApiExample(
            "Ambiguous type",
            value={
                "kind": [
                    "'kafka' is the type of more than one plugin (source, sink); "
                    "say which with ?kind=source or ?kind=sink"
                ]
            },
        ),
    ],
)


@extend_schema_view(
    list=extend_schema(
        summary="List plugins",
        description="Every source, transform and sink a channel may use, with its config schema.",
        parameters=[PluginKindQuerySerializer],
        responses={200: PluginSerializer(many=True), 400: PluginKindErrorSerializer},
    ),
    retrieve=extend_schema(
        summary="Get a plugin",
        parameters=[KIND_PATH, TYPE_PATH],
        responses={200: PluginSerializer, 404: NO_PLUGIN},
    ),
)
class PluginViewSet(viewsets.GenericViewSet):
    """The plugin catalogue, read-only, and a config check per plugin."""

    serializer_class = PluginSerializer
    # Checking a config changes nothing: any role may, as it may read the catalogue.
    required_permissions = {
        action: permissions.seeing(what="the plugin catalogue")
        for action in ("list", "retrieve", "validate_config", "validate_config_by_type")
    }

    def get_queryset(self) -> list[specs.Plugin]:
        query = PluginKindQuerySerializer(data=self.request.query_params)
        query.is_valid(raise_exception=True)
        return specs.plugins(query.validated_data.get("kind"))

    def list(self, request: Request) -> Response:
        page = self.paginate_queryset(self.get_queryset())
        return self.get_paginated_response(self.get_serializer(page, many=True).data)

    def retrieve(self, request: Request, kind: str, type: str) -> Response:
        return Response(self.get_serializer(_plugin(kind, type)).data)

    @extend_schema(
        operation_id="plugins_validate",
        summary="Check a stage config",
        description=(
            "Validates a config against the plugin's schema, as spec validation does, and "
            "changes nothing."
        ),
        parameters=[KIND_PATH, TYPE_PATH],
        request=PluginConfigSerializer,
        responses={200: CONFIG_VALID, 400: CONFIG_INVALID, 404: NO_PLUGIN},
    )
    def validate_config(self, request: Request, kind: str, type: str) -> Response:
        return _check_config(request, _plugin(kind, type))

    @extend_schema(
        operation_id="plugins_validate_by_type",
        summary="Check a stage config (plugin named by type)",
        description=(
            "As plugins/{kind}/{type}/validate. kind may be left out when the type names "
            "one plugin only (filter); kafka is both a source and a sink."
        ),
        parameters=[TYPE_PATH, KIND_QUERY],
        request=PluginConfigSerializer,
        responses={200: CONFIG_VALID, 400: KIND_NEEDED, 404: NO_PLUGIN},
    )
    def validate_config_by_type(self, request: Request, type: str) -> Response:
        query = PluginKindQuerySerializer(data=request.query_params)
        query.is_valid(raise_exception=True)
        kind = query.validated_data.get("kind")
        try:
            plugin = specs.find_plugin(type, kind)
        except specs.AmbiguousPluginType as exc:
            raise ValidationError({"kind": [str(exc)]}) from exc
        except LookupError as exc:
            raise NotFound(str(exc)) from exc
        return _check_config(request, plugin)


def _plugin(kind: str, type_: str) -> specs.Plugin:
    try:
        return specs.find_plugin(type_, kind)
    except LookupError as exc:
        raise NotFound(str(exc)) from exc


def _check_config(request: Request, plugin: specs.Plugin) -> Response:
    try:
        data = request.data
    except ParseError as exc:  # a body that is not JSON answers in the same shape
        return _invalid_config({"body": [str(exc.detail)]})
    body = PluginConfigSerializer(data=data)
    if not body.is_valid():
        return _invalid_config(body.errors)
    try:
        config = specs.check_stage_config(plugin, body.validated_data["config"])
    except services.InvalidSpec as exc:
        return _invalid_config(exc.errors)
    return Response({"valid": True, "config": config})


def _invalid_config(errors: dict) -> Response:
    return Response({"valid": False, "errors": errors}, status=status.HTTP_400_BAD_REQUEST)


# -- event patterns ------------------------------------------------------------------------


class EventPatternTestView(views.APIView):
    # Testing a pattern changes nothing: any role may.
    required_permissions = {"post": permissions.seeing(what="event pattern tests")}

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
    def post(self, request: Request) -> Response:
        body = EventPatternTestSerializer(data=request.data)
        body.is_valid(raise_exception=True)
        data = body.validated_data
        result = specs.event_pattern_matches(data["pattern"], data["event"])
        return Response(EventPatternResultSerializer({"result": result}).data)


# -- the cluster view ------------------------------------------------------------------------


class ClusterView(views.APIView):
    required_permissions = {"get": permissions.seeing("worker", "the cluster")}

    @extend_schema(
        operation_id="cluster_retrieve",
        summary="Runtime workers and their drivers, the Spark cluster, each channel's executors",
        description=(
            "Read live from the runtime: every runtime worker with its heartbeat age, the "
            "connectors it hosts and its Spark drivers (shared or dedicated, with their "
            "capacity, memory, heartbeat age and the channels whose queries each runs); the "
            "Spark cluster the executors run on (with a standalone master "
            "(SPARK_MASTER=spark://…), the master's workers with their cores, memory and last "
            "heartbeat, and its running applications); and each channel's driver, Spark "
            "application and executors as its driver last reported them. A master that does "
            "not answer is reported in `spark.error`, not as an error status."
        ),
        responses={200: ClusterSerializer, 503: RUNTIME_DOWN},
    )
    def get(self, request: Request) -> Response:
        cluster = services.cluster_view()
        return Response(ClusterSerializer(cluster, context={"now": cluster.now}).data)


# -- the current user ------------------------------------------------------------------------


class CapabilitiesSerializer(serializers.Serializer):
    view = serializers.BooleanField(help_text="May see channels, workers and their history.")
    operate = serializers.BooleanField(
        help_text="May start, stop, pause, resume and restart channels and change offsets."
    )
    edit = serializers.BooleanField(help_text="May create, change and delete channels.")


class MeSerializer(serializers.Serializer):
    username = serializers.CharField()
    roles = serializers.ListField(
        child=serializers.ChoiceField(choices=permissions.ROLES),
        help_text="The role groups the user is in (viewer, operator, editor).",
    )
    is_superuser = serializers.BooleanField(help_text="May do everything, whatever the roles.")
    can = CapabilitiesSerializer(
        help_text="What the user may do, from roles and permissions (superusers: all)."
    )


class MeView(views.APIView):
    """Who is calling and what they may do: the console greys out the buttons it cannot use."""

    required_permissions = {"get": permissions.AUTHENTICATED}

    @extend_schema(
        operation_id="me_retrieve",
        summary="The current user, their roles and what they may do",
        description=(
            "Any authenticated user, with or without a role. `can` is what the API will "
            "allow: view (read), operate (start, stop, pause, resume, restart, offsets) and "
            "edit (create, change, delete channels)."
        ),
        responses={200: MeSerializer},
        examples=[
            OpenApiExample(
                "An operator",
                value={
                    "username": "alice",
                    "roles": ["operator"],
                    "is_superuser": False,
                    "can": {"view": True, "operate": True, "edit": False},
                },
            )
        ],
    )
    def get(self, request: Request) -> Response:
        user = request.user
        body = {
            "username": user.get_username(),
            "roles": permissions.roles_of(user),
            "is_superuser": user.is_superuser,
            "can": permissions.capabilities(user),
        }
        return Response(MeSerializer(body).data)
