"""A channel's source offsets, Kafka Connect's KIP-875 way (``/connectors/{name}/offsets``):
read them, alter or reset them while the channel is STOPPED, or copy them from another
channel or a consumer group (MirrorMaker 2's idea). Bodies are validated by the serializers
the schema shows; :mod:`console.services.offsets` checks them against the channel and
makes the change."""

from __future__ import annotations

from typing import cast

from django.contrib.auth.models import User
from drf_spectacular.utils import OpenApiExample, extend_schema
from rest_framework import viewsets
from rest_framework.decorators import action
from rest_framework.request import Request
from rest_framework.response import Response

from console import permissions, services
from console.api.metadata import NoSerializerMetadata
from console.api.offsets.mirrormaker2 import (
    MIRROR_EXAMPLE,
    PREVIEW_PARAMETERS,
    TAKEOVER_EXAMPLE,
    HandBackSerializer,
    MirrorMaker2Serializer,
    MirrorPreviewSerializer,
    OffsetsCopyOriginSerializer,
    hand_back_data,
    preview_data,
)
from console.api.offsets.schema import (
    OFFSETS_CHANGED,
    OFFSETS_CONFLICT,
    OFFSETS_EXAMPLE,
    OFFSETS_INVALID,
)
from console.api.offsets.serializers import (
    ChannelOffsetsSerializer,
    OffsetsAlterSerializer,
    validated,
)
from console.api.responses import NOT_FOUND, RUNTIME_DOWN
from console.api.scoping import channel_or_404, team_channels
from console.services.mirrormaker2 import (
    hand_back_to_mirrormaker2,
    mirrormaker2_preview,
    take_over_from_mirrormaker2,
)

# What each of the three offset changes (alter, reset, copy) may answer.
OFFSETS_CHANGE_RESPONSES = {
    200: OFFSETS_CHANGED,
    400: OFFSETS_INVALID,
    404: NOT_FOUND,
    409: OFFSETS_CONFLICT,
    503: RUNTIME_DOWN,
}


class OffsetsViewSet(viewsets.GenericViewSet):
    """``channels/{name}/offsets`` (GET, PATCH, DELETE) and ``channels/{name}/offsets/copy``."""

    metadata_class = NoSerializerMetadata
    lookup_field = "name"
    lookup_value_converter = "str"
    required_permissions = {
        "offsets": permissions.seeing(what="channel offsets"),
        "alter_offsets": permissions.ALTER_OFFSETS,
        "reset_offsets": permissions.ALTER_OFFSETS,
        "copy_offsets": permissions.ALTER_OFFSETS,
        "mirrormaker2_offsets": permissions.seeing(what="channel offsets"),
        "hand_back_offsets": permissions.ALTER_OFFSETS,
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
    @action(detail=True, methods=["get"])
    def offsets(self, request: Request, name: str) -> Response:
        found = services.channel_offsets(channel_or_404(self, request, name))
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
        responses=OFFSETS_CHANGE_RESPONSES,
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
    @offsets.mapping.patch
    def alter_offsets(self, request: Request, name: str) -> Response:
        channel = channel_or_404(self, request, name)
        change = validated(OffsetsAlterSerializer, request.data)
        # RolePermission refuses anonymous requests: request.user is a User (here and below).
        message = services.alter_channel_offsets(channel, **change, user=cast(User, request.user))
        return Response({"message": message})

    @extend_schema(
        operation_id="channels_offsets_reset",
        summary="Reset a stopped channel's offsets",
        description=(
            "Forget the channel's position: its next start begins from the source's "
            "starting_offsets. Only while the channel is STOPPED. Recorded as a lifecycle event."
        ),
        request=None,
        responses=OFFSETS_CHANGE_RESPONSES,
    )
    @offsets.mapping.delete
    def reset_offsets(self, request: Request, name: str) -> Response:
        channel = channel_or_404(self, request, name)
        return Response(
            {"message": services.reset_channel_offsets(channel, user=cast(User, request.user))}
        )

    @extend_schema(
        operation_id="channels_offsets_copy",
        summary="Copy offsets to a stopped channel (migration)",
        description=(
            "MirrorMaker 2's idea: take over from another channel's offsets, from a "
            "consumer group's committed offsets (what a Kafka Connect sink or a MirrorMaker 2 "
            "checkpoint leaves), or from MirrorMaker 2's own source offsets (its Kafka Connect "
            "offsets topic: the channel resumes right after the last records MM2 copied), for "
            "the topics this channel reads, so a pipeline moved to Sluice neither skips nor "
            "replays events. Stop the origin first. Only while this channel is STOPPED; "
            "partitions the origin has no offset for keep their position."
        ),
        request=OffsetsCopyOriginSerializer,
        responses=OFFSETS_CHANGE_RESPONSES,
        examples=[
            OpenApiExample(
                "From a Kafka Connect sink's group",
                request_only=True,
                value={"from_consumer_group": "connect-my-sink"},
            ),
            OpenApiExample(
                "From another channel", request_only=True, value={"from_channel": "old"}
            ),
            TAKEOVER_EXAMPLE,
        ],
    )
    @action(detail=True, methods=["post"], url_path="offsets/copy", url_name="offsets-copy")
    def copy_offsets(self, request: Request, name: str) -> Response:
        channel = channel_or_404(self, request, name)
        origin = validated(OffsetsCopyOriginSerializer, request.data)
        user = cast(User, request.user)
        if "from_mirrormaker2" in origin:
            message = take_over_from_mirrormaker2(channel, **origin["from_mirrormaker2"], user=user)
        else:
            message = services.copy_channel_offsets(
                channel, **origin, origins=team_channels(request), user=user
            )
        return Response({"message": message})

    @extend_schema(
        operation_id="channels_offsets_mirrormaker2_retrieve",
        summary="MirrorMaker 2's offsets for a channel (migration preview)",
        description=(
            "MirrorMaker 2's source offsets in its Kafka Connect offsets topic (default "
            "mm2-offsets.<source_alias>.internal on the channel's sink brokers) for the topics "
            "the channel reads: in MM2's form (the last record copied), as a take-over would "
            "set them (the next offset to read), and the channel's own offsets. Reads only."
        ),
        parameters=PREVIEW_PARAMETERS,
        responses={
            200: MirrorPreviewSerializer,
            400: OFFSETS_INVALID,
            404: NOT_FOUND,
            409: OFFSETS_CONFLICT,
            503: RUNTIME_DOWN,
        },
    )
    @action(
        detail=True,
        methods=["get"],
        url_path="offsets/mirrormaker2",
        url_name="offsets-mirrormaker2",
    )
    def mirrormaker2_offsets(self, request: Request, name: str) -> Response:
        channel = channel_or_404(self, request, name)
        where = validated(MirrorMaker2Serializer, request.query_params.dict())
        return Response(preview_data(mirrormaker2_preview(channel, **where)))

    @extend_schema(
        operation_id="channels_offsets_mirrormaker2_hand_back",
        summary="Hand a stopped channel's offsets back to MirrorMaker 2",
        description=(
            "Write the channel's position into MirrorMaker 2's Kafka Connect offsets topic in "
            'MM2\'s form (key ["MirrorSourceConnector", {cluster, topic, partition}], value '
            "{offset: the last record copied}), creating the topic when missing, so a "
            "MirrorMaker 2 started next resumes exactly where the channel stopped. Stop "
            "MirrorMaker 2 first (a running one overwrites its offsets). Only while the "
            "channel is STOPPED. Recorded as a lifecycle event."
        ),
        request=MirrorMaker2Serializer,
        responses={**OFFSETS_CHANGE_RESPONSES, 200: HandBackSerializer},
        examples=[MIRROR_EXAMPLE],
    )
    @mirrormaker2_offsets.mapping.post
    def hand_back_offsets(self, request: Request, name: str) -> Response:
        channel = channel_or_404(self, request, name)
        where = validated(MirrorMaker2Serializer, request.data)
        found = hand_back_to_mirrormaker2(channel, **where, user=cast(User, request.user))
        return Response(hand_back_data(found))
