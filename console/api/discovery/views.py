"""Schema discovery of a channel (``channels/{name}/discovery``): what the samples of its
live events showed (GET) and turning it on or off (PUT ``{"enabled": true}``). The work is
:mod:`console.services.discovery`'s."""

from __future__ import annotations

from typing import cast

from django.contrib.auth.models import User
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiExample, extend_schema
from rest_framework import serializers, viewsets
from rest_framework.decorators import action
from rest_framework.request import Request
from rest_framework.response import Response

from console import permissions
from console.api.metadata import NoSerializerMetadata
from console.api.responses import NOT_FOUND, RUNTIME_DOWN
from console.api.scoping import channel_or_404
from console.services import discovery
from console.services.lifecycle import actor_for


class DiscoveredFieldSerializer(serializers.Serializer):
    path = serializers.CharField(help_text="The field's dotted path in the event's JSON form.")
    types = serializers.ListField(
        child=serializers.CharField(), help_text="Its JSON types seen so far (widened)."
    )
    first_seen = serializers.DateTimeField(
        allow_null=True, help_text="When a sampled event first had it."
    )


class ChannelDiscoverySerializer(serializers.Serializer):
    enabled = serializers.BooleanField()
    subject = serializers.CharField(
        help_text="The registry subject its versions are registered under."
    )
    version = serializers.IntegerField(help_text="The subject's latest version (0: none yet).")
    samples = serializers.IntegerField(help_text="Events sampled so far.")
    last_sample_at = serializers.DateTimeField(allow_null=True)
    changed_at = serializers.DateTimeField(
        allow_null=True, help_text="When the shape last changed."
    )
    schema = serializers.JSONField(
        allow_null=True, help_text="The merged JSON Schema of the events; null before any."
    )
    fields = DiscoveredFieldSerializer(many=True)  # type: ignore[assignment]  # the API field


class DiscoverySwitchSerializer(serializers.Serializer):
    enabled = serializers.BooleanField(help_text="Sample the channel's events (true) or not.")


class DiscoveryViewSet(viewsets.GenericViewSet):
    """``channels/{name}/discovery`` (GET, PUT)."""

    metadata_class = NoSerializerMetadata
    lookup_field = "name"
    lookup_value_converter = "str"
    required_permissions = {
        "discovery": permissions.seeing(what="channel schemas"),
        "set_discovery": permissions.CHANGE,
    }

    @extend_schema(
        operation_id="channels_discovery_retrieve",
        summary="Get a channel's discovered schema",
        description=(
            "Whether schema discovery is on, the JSON Schema merged from the sampled live "
            "events (fields united, types widened), each field with when it was first seen, "
            "and the registry subject (`<channel>-discovered`) whose versions record each "
            "change of shape."
        ),
        responses={200: ChannelDiscoverySerializer, 404: NOT_FOUND},
    )
    @action(detail=True, methods=["get"])
    def discovery(self, request: Request, name: str) -> Response:
        channel = channel_or_404(self, request, name)
        found = discovery.discovery_of(channel)
        return Response(ChannelDiscoverySerializer(discovery.view(found)).data)

    @extend_schema(
        operation_id="channels_discovery_update",
        summary="Turn a channel's schema discovery on or off",
        description=(
            "Opt-in: a channel with discovery on samples a few events of each micro-batch. "
            "A running or paused channel's query restarts with the change (from its "
            "checkpoint). Recorded as a lifecycle event."
        ),
        request=DiscoverySwitchSerializer,
        responses={
            200: ChannelDiscoverySerializer,
            400: OpenApiTypes.OBJECT,
            404: NOT_FOUND,
            503: RUNTIME_DOWN,
        },
        examples=[OpenApiExample("On", request_only=True, value={"enabled": True})],
    )
    @discovery.mapping.put
    def set_discovery(self, request: Request, name: str) -> Response:
        channel = channel_or_404(self, request, name)
        body = DiscoverySwitchSerializer(data=request.data)
        body.is_valid(raise_exception=True)
        found = discovery.set_discovery(
            channel, body.validated_data["enabled"], actor=actor_for(cast(User, request.user))
        )
        return Response(ChannelDiscoverySerializer(discovery.view(found)).data)
