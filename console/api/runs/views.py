"""``channels/{name}/replays/``: a channel's bounded runs (replays and redrives).

GET lists them (newest first) or shows one; ``targets/`` names what a run would write into
(what the console's confirmation shows); POST starts a replay (``confirm: true`` when it
writes into live targets); DELETE cancels a run that has not finished. Starting and
cancelling are audited (``channel.replay.start``, ``channel.replay.cancel``,
:mod:`console.audit`)."""

from __future__ import annotations

from typing import cast

from django.contrib.auth.models import User
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiResponse, extend_schema
from rest_framework import mixins, status, viewsets
from rest_framework.decorators import action
from rest_framework.request import Request
from rest_framework.response import Response

from console import permissions
from console.api.offsets.serializers import validated
from console.api.pagination import LimitOffsetPagination
from console.api.responses import NOT_FOUND, QUERY_ERRORS
from console.api.runs.serializers import (
    ChannelRunSerializer,
    ReplayRequestSerializer,
    RunTargetsSerializer,
)
from console.api.scoping import channel_or_404
from console.models import ChannelRun
from console.services import run_executor, runs

RUN_INVALID = OpenApiResponse(
    response=OpenApiTypes.OBJECT,
    description=(
        "The request is not a valid run; each key is the path of a bad field "
        "(`window.end`, `start_offsets[0].topic`, `source`)."
    ),
)
RUN_FINISHED = OpenApiResponse(
    response=OpenApiTypes.OBJECT, description="The run has finished; nothing changed."
)
RUN_NOT_FOUND = OpenApiResponse(
    response=OpenApiTypes.OBJECT, description="No channel has this name, or it has no such run."
)


class ReplayViewSet(mixins.ListModelMixin, mixins.RetrieveModelMixin, viewsets.GenericViewSet):
    # channels/{name}/replays/: replays and redrives of the channel, newest first.

    serializer_class = ChannelRunSerializer
    pagination_class = LimitOffsetPagination
    lookup_field = "id"
    lookup_value_converter = "uuid"
    required_permissions = {
        "list": permissions.seeing(what="channel replays"),
        "retrieve": permissions.seeing(what="channel replays"),
        "targets": permissions.seeing(what="channel replays"),
        "create": permissions.RUN_REPLAYS,
        "destroy": permissions.RUN_REPLAYS,
    }

    def get_queryset(self):
        runs = ChannelRun.objects.filter(channel__name=self.kwargs["name"])
        return permissions.visible(runs, self.request.user, "channel__team").select_related(
            "channel"
        )

    @extend_schema(
        summary="List a channel's replays and redrives",
        responses={200: ChannelRunSerializer(many=True), 400: QUERY_ERRORS, 404: NOT_FOUND},
    )
    def list(self, request: Request, *args, **kwargs) -> Response:
        channel_or_404(self, self.request, self.kwargs["name"])
        page = self.paginate_queryset(self.filter_queryset(self.get_queryset()))
        assert page is not None, "the runs are always paginated"
        run_executor.follow_now(page)  # the runtime's state now, not the last pass's
        return self.get_paginated_response(self.get_serializer(page, many=True).data)

    @extend_schema(
        summary="Replay a window of the channel's source",
        description=(
            "A bounded run of the channel's CURRENT spec over `[window.start, window.end)` "
            "(or explicit offsets per partition) of its Kafka source or HTTP ingest topic, "
            "into its sinks, beside the live connector. Every event carries `sluicereplay` = "
            "the run id and `sluicerun` = `replay`: CloudEvents extension attributes, or "
            "headers where a sink writes the data alone (GET replays/targets says how each "
            "target marks them). Into live targets only with `confirm: true` (else 400 on "
            "`confirm`, naming them): their consumers get the events a second time."
        ),
        request=ReplayRequestSerializer,
        responses={201: ChannelRunSerializer, 400: RUN_INVALID, 404: NOT_FOUND},
    )
    def create(self, request: Request, name: str) -> Response:
        channel = channel_or_404(self, request, name)
        body = validated(ReplayRequestSerializer, request.data)
        window = body.get("window") or {}
        run = runs.start_replay(
            channel,
            window_start=window.get("start"),
            window_end=window.get("end"),
            start_offsets=body.get("start_offsets"),
            end_offsets=body.get("end_offsets"),
            user=cast(User, request.user),
            confirm=body.get("confirm", False),
        )
        return Response(ChannelRunSerializer(run).data, status=status.HTTP_201_CREATED)

    @extend_schema(
        summary="What a replay or redrive would write into",
        description=(
            "The targets a run of the channel's current spec writes into: its sink, or each "
            "bus rule's sinks (type, topic / URL / table / path), whether others read them "
            "(live: a run into one needs `confirm: true`), and how each marks a run's events."
        ),
        responses={200: RunTargetsSerializer, 404: NOT_FOUND},
    )
    @action(detail=False, methods=["get"])
    def targets(self, request: Request, name: str) -> Response:
        targets = runs.channel_targets(channel_or_404(self, request, name))
        body = {
            "targets": [target.to_json() for target in targets],
            "live": sum(1 for target in targets if target.live),
        }
        return Response(RunTargetsSerializer(body).data)

    @extend_schema(summary="Get a run", responses={200: ChannelRunSerializer, 404: RUN_NOT_FOUND})
    def retrieve(self, request: Request, *args, **kwargs) -> Response:
        run = self.get_object()
        run_executor.follow_now([run])  # the runtime's state now, not the last pass's
        return Response(self.get_serializer(run).data)

    @extend_schema(
        summary="Cancel a run",
        description="Cancel a run that has not finished (409 once it has).",
        responses={200: ChannelRunSerializer, 404: RUN_NOT_FOUND, 409: RUN_FINISHED},
    )
    def destroy(self, request: Request, name: str, id: str) -> Response:
        run = runs.cancel_run(self.get_object(), user=cast(User, request.user))
        return Response(ChannelRunSerializer(run).data)
