"""The REST API: thin views over :mod:`console.services`.

Channels are addressed by name. Requests that change what runs (start, stop)
return ``202 Accepted`` at once; the change shows up in ``status`` after the next
reconcile pass.
"""

from __future__ import annotations

from django.shortcuts import get_object_or_404
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import (
    OpenApiExample,
    OpenApiResponse,
    extend_schema,
    extend_schema_view,
)
from rest_framework import generics, mixins, status, viewsets
from rest_framework.request import Request
from rest_framework.response import Response

from console import services
from console.api.serializers import (
    ChannelSerializer,
    ChannelStatusSerializer,
    LifecycleEventSerializer,
    TargetStateSerializer,
    WorkerSerializer,
)
from console.models import Channel, LifecycleEvent, Worker

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
NOT_FOUND = OpenApiResponse(description="No channel has this name.")
RUNTIME_DOWN = OpenApiResponse(description="The runtime is unavailable; nothing changed.")


@extend_schema_view(
    list=extend_schema(summary="List channels"),
    retrieve=extend_schema(
        summary="Get a channel", responses={200: ChannelSerializer, 404: NOT_FOUND}
    ),
    create=extend_schema(
        summary="Create a channel",
        description="Saves revision 1 of the spec. The channel starts STOPPED.",
        responses={201: ChannelSerializer, 400: SPEC_ERRORS},
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
        operation_id="channels_status",
        summary="Get a channel's runtime status",
        description="The connector and its tasks as the control loop last recorded them.",
        responses={200: ChannelStatusSerializer, 404: NOT_FOUND},
    )
    def status(self, request: Request, name: str) -> Response:
        channel = get_object_or_404(
            Channel.objects.select_related("connector__revision"), name=name
        )
        return Response(ChannelStatusSerializer(channel).data)

    def _respond(self, channel: Channel, code: int) -> Response:
        fresh = self.get_queryset().get(pk=channel.pk)
        return Response(self.get_serializer(fresh).data, status=code)

    @staticmethod
    def _accepted(name: str, target_state: str) -> Response:
        body = TargetStateSerializer({"name": name, "target_state": target_state}).data
        return Response(body, status=status.HTTP_202_ACCEPTED)


@extend_schema(
    summary="List a channel's lifecycle events",
    description="Recorded transitions and decisions about the channel, newest first.",
    responses={200: LifecycleEventSerializer(many=True), 404: NOT_FOUND},
)
class ChannelLifecycleView(generics.ListAPIView):
    serializer_class = LifecycleEventSerializer

    def get_queryset(self):
        channel = get_object_or_404(Channel, name=self.kwargs["name"])
        return LifecycleEvent.objects.filter(channel=channel).order_by("-created_at", "-id")


@extend_schema_view(
    list=extend_schema(summary="List runtime workers"),
    retrieve=extend_schema(summary="Get a runtime worker"),
)
class WorkerViewSet(viewsets.ReadOnlyModelViewSet):
    queryset = Worker.objects.prefetch_related("connectors")
    serializer_class = WorkerSerializer
    lookup_field = "worker_id"
