"""Channels: create, read, change and delete them, operate them (start, stop, pause, resume,
restart: ``202 Accepted`` at once, the change shows up in ``status`` after the next reconcile
pass; a change the channel cannot make from where it is is ``409 Conflict`` with the reason),
their status and live output, and their history (revisions, lifecycle events).

Channels are addressed by name. Reads go through :mod:`console.selectors`, changes through
:mod:`console.services`.
"""

from __future__ import annotations

from dataclasses import replace
from typing import cast

from django.contrib.auth.models import User
from django.shortcuts import get_object_or_404
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import (
    OpenApiExample,
    OpenApiParameter,
    OpenApiResponse,
    extend_schema,
    extend_schema_view,
)
from rest_framework import mixins, status, viewsets
from rest_framework.decorators import action
from rest_framework.exceptions import ValidationError
from rest_framework.request import Request
from rest_framework.response import Response

from console import permissions, services
from console.api.channels import listing
from console.api.channels.fleet import LIST_PARAMETERS, fleet_query_for
from console.api.channels.schema import (
    CHANNEL_EXAMPLES,
    REVISION_DIFF_EXAMPLE,
    SECRETS_UNREADABLE,
    SPEC_ERRORS,
)
from console.api.channels.serializers.channel import ChannelSerializer
from console.api.channels.serializers.operations import (
    ChannelPreviewSerializer,
    DeployPlanSerializer,
    PreviewQuerySerializer,
    RestartAnswerSerializer,
    RestartQuerySerializer,
    TargetStateSerializer,
)
from console.api.channels.serializers.revisions import (
    LifecycleEventSerializer,
    RevisionDiffQuerySerializer,
    RevisionDiffSerializer,
    RevisionSerializer,
)
from console.api.channels.serializers.status import (
    ChannelListItemSerializer,
    ChannelStatusSerializer,
    ChannelWithStatusSerializer,
)
from console.api.channels.tail import ChannelTailSerializer, TailQuerySerializer, tail_body
from console.api.pagination import LimitOffsetPagination
from console.api.responses import (
    CONFLICT,
    NOT_FOUND,
    QUERY_ERRORS,
    QUOTA_REACHED,
    RUNTIME_DOWN,
    ErrorDetailSerializer,
)
from console.api.scoping import channel_or_404, creation_team, team_channels
from console.models import Channel
from console.selectors import channels as selectors
from console.selectors import reporting
from console.selectors import tail as tails
from console.selectors.deploys import deploy_plan
from console.selectors.specs import SECRET_CHANGED_MARKER
from console.services.channels import UNCHANGED


@extend_schema_view(
    list=extend_schema(
        summary="List channels",
        description=(
            "With `expand=status`, each channel also carries its runtime status (connector, "
            "tasks, dead letters) and failed channels come first: one call for a whole "
            "operations view, a fixed number of queries whatever the number of channels. "
            "Paged (`limit`, `offset`; `count` and `next` say what is left), searched, "
            "filtered and sorted on the server: an unknown filter value or sort key is a 400 "
            "naming its parameter."
        ),
        parameters=[
            OpenApiParameter(
                "expand",
                OpenApiTypes.STR,
                enum=["status"],
                description="`status`: include each channel's status, failures first.",
            ),
            *LIST_PARAMETERS,
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
        responses={
            201: ChannelSerializer,
            400: SPEC_ERRORS,
            429: QUOTA_REACHED,
            503: RUNTIME_DOWN,
        },
        examples=CHANNEL_EXAMPLES,
    ),
    update=extend_schema(
        summary="Replace a channel's description and spec",
        description="A new revision is saved only when the spec changed. Names cannot change.",
        responses={200: ChannelSerializer, 400: SPEC_ERRORS, 404: NOT_FOUND},
        examples=CHANNEL_EXAMPLES,
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
    queryset = selectors.channels()

    def get_queryset(self):
        return team_channels(self.request, selectors.channels())

    serializer_class = ChannelSerializer
    pagination_class = LimitOffsetPagination
    lookup_field = "name"
    lookup_value_converter = "str"
    required_permissions = {
        "list": permissions.seeing(),
        "retrieve": permissions.seeing(),
        "status": permissions.seeing(),
        "preview": permissions.seeing(what="channel output"),
        "tail": permissions.seeing(what="channel output"),
        "create": permissions.CREATE,
        "update": permissions.CHANGE,
        "partial_update": permissions.CHANGE,
        "destroy": permissions.DELETE,
        **permissions.OPERATE,
        "deploy": permissions.seeing(),
        "deploy_now": permissions.Need(permissions.OPERATE_CHANNEL, "deploy channels"),
    }

    def list(self, request: Request) -> Response:
        expand = request.query_params.get("expand", "")
        if expand not in ("", "status"):
            raise ValidationError({"expand": ["The only expansion is 'status'."]})
        # One instant for the filters, the sorting and the rows' reporting (states, health).
        query = replace(fleet_query_for(request), at=reporting.now())
        with_status = expand == "status"
        serializer_class = ChannelWithStatusSerializer if with_status else ChannelSerializer
        # The page's ids first (sorted and counted on narrow rows), then those channels in full.
        ids = self.paginate_queryset(listing.ordered_ids(query, status=with_status))
        page = listing.page_of(ids or [], status=with_status)
        context = {**self.get_serializer_context(), "reporting_at": query.at}
        data = serializer_class(page, many=True, context=context).data
        return self.get_paginated_response(data)

    def create(self, request: Request) -> Response:
        serializer = self.get_serializer(data=request.data)
        serializer.is_valid(raise_exception=True)
        data = dict(serializer.validated_data)
        team = creation_team(request, data.pop("team", None), permissions.CREATE)
        # RolePermission refuses anonymous requests: request.user is a User (here and below).
        channel = services.create_channel(**data, team=team, user=cast(User, request.user))
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
            labels=data.get("labels"),
            user=cast(User, request.user),
        )
        return self._respond(channel, status.HTTP_200_OK)

    def partial_update(self, request: Request, name: str) -> Response:
        return self.update(request, name, partial=True)

    def destroy(self, request: Request, name: str) -> Response:
        services.delete_channel(self.get_object(), user=cast(User, request.user))
        return Response(status=status.HTTP_204_NO_CONTENT)

    @extend_schema(
        operation_id="channels_start",
        summary="Start a channel",
        description=(
            "Deploys the latest revision with target RUNNING. Returns at once; the connector's "
            "state shows up in status. A stopped channel takes one of its team's running "
            "channels (and a real-time one its cores): past the quota, 429 naming it."
        ),
        request=None,
        responses={
            202: TargetStateSerializer,
            404: NOT_FOUND,
            409: CONFLICT,
            429: QUOTA_REACHED,
            503: RUNTIME_DOWN,
        },
    )
    @action(detail=True, methods=["post"])
    def start(self, request: Request, name: str) -> Response:
        channel = self.get_object()
        services.start_channel(channel, user=cast(User, request.user))
        return self._accepted(channel.name, "RUNNING")

    @extend_schema(
        operation_id="channels_deploy_plan",
        summary="What deploying the saved revision would do",
        description=(
            "The revision the channel runs, the latest saved one, the fields that differ and "
            "what a deploy would do: `none` (it already runs), `start` (stopped or never "
            "started), `live` (a running bus takes new rules without a restart) or `restart` "
            "(the query starts again with it from its checkpoint; a FAILED channel too). "
            "Nothing changes."
        ),
        responses={200: DeployPlanSerializer, 404: NOT_FOUND},
    )
    @action(detail=True, methods=["get"])
    def deploy(self, request: Request, name: str) -> Response:
        plan = deploy_plan(self.get_object())
        return Response(DeployPlanSerializer(plan).data)

    @extend_schema(
        operation_id="channels_deploy",
        summary="Deploy the saved revision",
        description=(
            "Puts the latest saved revision to work from any state, as the plan (GET) says: "
            "a stopped channel starts with it, a paused one stays paused with it, a running "
            "bus whose rules alone changed takes them live, anything else (FAILED included) "
            "restarts with it from its checkpoint. Returns at once with the plan followed."
        ),
        request=None,
        responses={
            202: DeployPlanSerializer,
            404: NOT_FOUND,
            409: CONFLICT,
            429: QUOTA_REACHED,
            503: RUNTIME_DOWN,
        },
    )
    @deploy.mapping.post
    def deploy_now(self, request: Request, name: str) -> Response:
        plan = services.deploy_channel(self.get_object(), user=cast(User, request.user))
        return Response(DeployPlanSerializer(plan).data, status=status.HTTP_202_ACCEPTED)

    @extend_schema(
        operation_id="channels_stop",
        summary="Stop a channel",
        description="Sets the target to STOPPED: the driver is released, the checkpoint kept.",
        request=None,
        responses={202: TargetStateSerializer, 404: NOT_FOUND, 503: RUNTIME_DOWN},
    )
    @action(detail=True, methods=["post"])
    def stop(self, request: Request, name: str) -> Response:
        channel = self.get_object()
        services.stop_channel(channel, user=cast(User, request.user))
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
    @action(detail=True, methods=["post"])
    def pause(self, request: Request, name: str) -> Response:
        channel = self.get_object()
        services.pause_channel(channel, user=cast(User, request.user))
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
    @action(detail=True, methods=["post"])
    def resume(self, request: Request, name: str) -> Response:
        channel = self.get_object()
        services.resume_channel(channel, user=cast(User, request.user))
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
    @action(detail=True, methods=["post"])
    def restart(self, request: Request, name: str) -> Response:
        channel = self.get_object()
        query = RestartQuerySerializer(data=request.query_params)
        query.is_valid(raise_exception=True)
        plan = services.restart_channel(
            channel, **query.validated_data, user=cast(User, request.user)
        )
        return Response(RestartAnswerSerializer(plan).data, status=status.HTTP_202_ACCEPTED)

    @extend_schema(
        operation_id="channels_status",
        summary="Get a channel's runtime status",
        description=(
            "The connector and its tasks as the control loop last recorded them; drift is "
            "true while the deployed revision is not the latest saved one. `stages` holds "
            "each stage's event counts (in / out / failed) since it was first started, and "
            "for a bus `rules` each rule's (matched / delivered / failed, per target); "
            "`driver_id` the Spark driver running the channel's query and `reason` why the "
            "channel is in its state when the state alone does not say."
        ),
        responses={200: ChannelStatusSerializer, 404: NOT_FOUND},
    )
    @action(detail=True, methods=["get"])
    def status(self, request: Request, name: str) -> Response:
        channel = channel_or_404(self, request, name, selectors.channels())
        return Response(ChannelStatusSerializer(channel).data)

    @extend_schema(
        operation_id="channels_preview",
        summary="Live tail of a channel's output",
        description=(
            "The newest events the channel's `preview` sink kept (its JSON form), newest first."
            " Empty when the channel has no preview sink or never ran."
        ),
        parameters=[PreviewQuerySerializer],
        responses={
            200: ChannelPreviewSerializer,
            400: OpenApiTypes.OBJECT,
            404: NOT_FOUND,
            503: RUNTIME_DOWN,
        },
    )
    @action(detail=True, methods=["get"])
    def preview(self, request: Request, name: str) -> Response:
        channel = channel_or_404(self, request, name)
        query = PreviewQuerySerializer(data=request.query_params)
        query.is_valid(raise_exception=True)
        events = tails.channel_preview(channel, query.validated_data["limit"])
        return Response(ChannelPreviewSerializer({"name": channel.name, "events": events}).data)

    @extend_schema(
        operation_id="channels_tail",
        summary="Live tail: the newest events where a channel's events are",
        description=(
            "The newest records at one of the channel's points, newest first: `source` (a "
            "Kafka source's topics, an HTTP source's ingest topic), `sink` (a Kafka sink's "
            "topic, a Preview sink's kept events), `rule:<name>` (a bus rule's Kafka target) "
            "and `dead-letters` (a Kafka dead-letter topic), from the revision the channel "
            "runs. `points` lists the channel's points. Kafka is read by assigning partitions "
            "at their end minus `limit` (no consumer group joins or commits: nobody's offsets "
            "move), within about 3 s: a broker that does not answer in time gives `state` "
            "`unreachable`. Values are parsed as JSON when they are JSON and cut at 16 KiB "
            "(`truncated`). A point the channel does not have is a 400 naming its points."
        ),
        parameters=[TailQuerySerializer],
        responses={200: ChannelTailSerializer, 400: QUERY_ERRORS, 404: NOT_FOUND},
    )
    @action(detail=True, methods=["get"])
    def tail(self, request: Request, name: str) -> Response:
        channel = channel_or_404(self, request, name)
        query = TailQuerySerializer(data=request.query_params)
        query.is_valid(raise_exception=True)
        points = tails.tail_points(tails.running_spec(channel))
        try:
            point = tails.find_point(points, query.validated_data.get("at"))
        except tails.UnknownTailPoint as exc:
            raise ValidationError({"at": [str(exc)]}) from exc
        found = (
            tails.read_tail(point, channel=channel, limit=query.validated_data["limit"])
            if point is not None
            else None
        )
        return Response(ChannelTailSerializer(tail_body(channel.name, points, found)).data)

    def _respond(self, channel: Channel, code: int) -> Response:
        fresh = self.get_queryset().get(pk=channel.pk)
        return Response(self.get_serializer(fresh).data, status=code)

    @staticmethod
    def _accepted(name: str, target_state: str) -> Response:
        body = TargetStateSerializer({"name": name, "target_state": target_state}).data
        return Response(body, status=status.HTTP_202_ACCEPTED)


@extend_schema_view(
    list=extend_schema(
        summary="List a channel's lifecycle events",
        description="Recorded transitions and decisions about the channel, newest first.",
        responses={200: LifecycleEventSerializer(many=True), 404: NOT_FOUND},
    )
)
class LifecycleEventViewSet(mixins.ListModelMixin, viewsets.GenericViewSet):
    """``channels/{name}/lifecycle/``: what happened to the channel and why."""

    serializer_class = LifecycleEventSerializer
    pagination_class = LimitOffsetPagination
    required_permissions = {"list": permissions.seeing("lifecycleevent", "lifecycle events")}

    def get_queryset(self):
        return selectors.lifecycle_events(
            channel_or_404(
                self, self.request, self.kwargs["name"], Channel.objects.only("id", "team")
            )
        )


@extend_schema_view(
    list=extend_schema(
        summary="List a channel's revisions",
        description=(
            "Every saved version of the channel's spec, newest first: its number, when it was "
            "saved and by whom, and the spec with its secrets redacted. Compare `number` with "
            "the status's `revision` (the one running) and `latest_revision`."
        ),
        responses={200: RevisionSerializer(many=True), 404: NOT_FOUND},
    ),
    retrieve=extend_schema(
        summary="Get one revision of a channel",
        responses={
            200: RevisionSerializer,
            404: OpenApiResponse(
                description="No channel has this name, or it has no such revision."
            ),
        },
    ),
)
class RevisionViewSet(viewsets.ReadOnlyModelViewSet):
    # channels/{name}/revisions/: the channel's saved specs, by number. (A comment, not a
    # docstring: drf-spectacular would take it for the description of retrieve.)

    serializer_class = RevisionSerializer
    pagination_class = LimitOffsetPagination
    lookup_field = "number"
    lookup_value_converter = "int"
    required_permissions = {
        "list": permissions.seeing("revision", "revisions"),
        "retrieve": permissions.seeing("revision", "revisions"),
        "diff": permissions.seeing("revision", "revisions"),
    }

    def get_queryset(self):
        channel = channel_or_404(
            self, self.request, self.kwargs["name"], Channel.objects.only("id", "team")
        )
        revisions = selectors.channel_revisions(channel)
        return revisions.order_by("-number") if self.action == "list" else revisions

    @extend_schema(
        operation_id="channels_revisions_diff",
        summary="Compare a revision with another",
        description=(
            "Every change from revision `against` (default: the one before; for revision 1, "
            "an empty spec) to this one, field by field, with readable paths: a bus's rules "
            "are named, not numbered (`rules[big-orders].pattern`), so a rule inserted or "
            "moved reads as that, not as every later rule changed. Secrets never show: a "
            f"secret this revision changed reads as {SECRET_CHANGED_MARKER!r}."
        ),
        parameters=[RevisionDiffQuerySerializer],
        responses={
            200: RevisionDiffSerializer,
            400: QUERY_ERRORS,
            404: OpenApiResponse(
                ErrorDetailSerializer,
                description="No channel has this name, or it has no such revision (either).",
            ),
            503: SECRETS_UNREADABLE,
        },
        examples=[REVISION_DIFF_EXAMPLE],
    )
    @action(detail=True, methods=["get"])
    def diff(self, request: Request, name: str, number: int) -> Response:
        revision = self.get_object()
        query = RevisionDiffQuerySerializer(data=request.query_params)
        query.is_valid(raise_exception=True)
        against_number = query.validated_data.get("against", revision.number - 1)
        against = None
        if against_number >= 1:
            against = get_object_or_404(self.get_queryset(), number=against_number)
        changes = selectors.revision_changes(revision, against)
        body = {"number": revision.number, "against": against_number or None, "changes": changes}
        return Response(RevisionDiffSerializer(body).data)
