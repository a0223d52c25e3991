"""The runtime side as the console sees it: the runtime workers the control loop records
(``workers/``; an operator drains one, puts it back in service or forgets a dead one) and
the cluster view read live from the runtime (``cluster/``: workers, their Spark drivers, the
Spark cluster, each channel's executors)."""

from __future__ import annotations

from typing import cast

from django.contrib.auth.models import User
from django.db.models import QuerySet
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import (
    OpenApiExample,
    OpenApiParameter,
    OpenApiResponse,
    extend_schema,
    extend_schema_view,
)
from rest_framework import status, views, viewsets
from rest_framework.decorators import action
from rest_framework.exceptions import ValidationError
from rest_framework.request import Request
from rest_framework.response import Response

from console import permissions
from console.api.cluster.serializers import ClusterSerializer, DrainSerializer, WorkerSerializer
from console.api.pagination import LimitOffsetPagination
from console.api.responses import QUERY_ERRORS, RUNTIME_DOWN, ErrorDetailSerializer
from console.api.scoping import team_channels
from console.choices import WorkerService
from console.models import Worker
from console.selectors import cluster as selectors
from console.services import workers as services

WORKER_NOT_FOUND = OpenApiResponse(ErrorDetailSerializer, description="No worker has this id.")
WORKER_ALIVE = OpenApiResponse(
    response=OpenApiTypes.OBJECT,
    description="The worker is alive: only a DEAD worker can be forgotten; nothing changed.",
    examples=[
        OpenApiExample(
            "Forget a live worker",
            value={
                "detail": "worker w1 is alive (last heartbeat 1.2 s ago, session timeout 15 s): "
                "only a DEAD worker can be forgotten. Drain it, stop its process, and forget "
                "it once it is DEAD"
            },
        )
    ],
)


@extend_schema_view(
    list=extend_schema(
        summary="List runtime workers",
        parameters=[
            OpenApiParameter(
                "service",
                OpenApiTypes.STR,
                many=True,
                enum=list(WorkerService.values),
                description=(
                    "Only workers in this service state (repeatable: any of them); an unknown "
                    "value is a 400 naming `service`."
                ),
            )
        ],
        responses={200: WorkerSerializer(many=True), 400: QUERY_ERRORS},
    ),
    retrieve=extend_schema(
        summary="Get a runtime worker",
        responses={
            200: WorkerSerializer,
            404: OpenApiResponse(ErrorDetailSerializer, description="No worker has this id."),
        },
    ),
)
class WorkerViewSet(viewsets.ReadOnlyModelViewSet):
    queryset = selectors.workers()
    required_permissions = {
        "list": permissions.seeing("worker", "runtime workers"),
        "retrieve": permissions.seeing("worker", "runtime workers"),
        "drain": permissions.DRAIN_WORKERS,
        "undrain": permissions.DRAIN_WORKERS,
        "destroy": permissions.FORGET_WORKERS,
    }
    serializer_class = WorkerSerializer
    pagination_class = LimitOffsetPagination
    lookup_field = "worker_id"
    lookup_value_converter = "str"

    def get_queryset(self) -> QuerySet[Worker]:
        queryset = super().get_queryset()
        if self.action != "list":
            return queryset
        wanted = [value for value in self.request.query_params.getlist("service") if value]
        unknown = sorted(set(wanted) - set(WorkerService.values))
        if unknown:
            raise ValidationError(
                {
                    "service": [
                        f"Unknown value(s) {', '.join(map(repr, unknown))}; use "
                        f"{', '.join(WorkerService.values)}."
                    ]
                }
            )
        return queryset.filter(service__in=wanted) if wanted else queryset

    @extend_schema(
        operation_id="workers_drain",
        summary="Drain a runtime worker",
        description=(
            "Takes the worker out of service (`service` DRAINING): it gets no new channels, "
            "and the control loop hands each channel it runs to the least loaded other live "
            "worker in service: the query stops on this worker first, then the other resumes "
            "it from its checkpoint, so no event is lost. With no other worker in service the "
            "channels keep running here until one is alive. Once none is left, `service` turns "
            "DRAINED. Returns at once; repeating it changes nothing (`changed` false)."
        ),
        request=None,
        responses={202: DrainSerializer, 404: WORKER_NOT_FOUND},
    )
    @action(detail=True, methods=["post"])
    def drain(self, request: Request, worker_id: str) -> Response:
        result = services.drain_worker(worker_id, user=cast(User, request.user))
        mine = set(team_channels(request).filter(name__in=result.channels).values_list("name"))
        body = {
            "worker": self._fresh(worker_id),
            "changed": result.changed,
            "channels": [name for name in result.channels if (name,) in mine],
            "takers": result.takers,
        }
        return Response(
            DrainSerializer(body, context=self.get_serializer_context()).data,
            status=status.HTTP_202_ACCEPTED,
        )

    @extend_schema(
        operation_id="workers_undrain",
        summary="Put a runtime worker back in service",
        description=(
            "`service` IN_SERVICE: the worker takes new channels again. Channels that moved "
            "away stay where they are (placement is sticky). Repeating it changes nothing."
        ),
        request=None,
        responses={202: WorkerSerializer, 404: WORKER_NOT_FOUND},
    )
    @action(detail=True, methods=["post"])
    def undrain(self, request: Request, worker_id: str) -> Response:
        services.undrain_worker(worker_id, user=cast(User, request.user))
        return Response(
            WorkerSerializer(self._fresh(worker_id), context=self.get_serializer_context()).data,
            status=status.HTTP_202_ACCEPTED,
        )

    @extend_schema(
        operation_id="workers_forget",
        summary="Forget a dead runtime worker",
        description=(
            "Drops a DEAD worker's registration with the runtime, its Spark drivers' and its "
            "record here. A worker that is alive (a heartbeat within the session timeout) is "
            "refused with 409: drain it, stop its process, then forget it. A worker that "
            "starts again with the same id registers anew."
        ),
        request=None,
        responses={
            204: None,
            404: WORKER_NOT_FOUND,
            409: WORKER_ALIVE,
            503: RUNTIME_DOWN,
        },
    )
    def destroy(self, request: Request, worker_id: str) -> Response:
        services.forget_worker(worker_id, user=cast(User, request.user))
        return Response(status=status.HTTP_204_NO_CONTENT)

    def _fresh(self, worker_id: str):
        return selectors.workers().get(worker_id=worker_id)


class ClusterView(views.APIView):
    """``cluster/``: one object, not a collection (so a view, not a viewset)."""

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
        cluster = selectors.cluster_view(permissions.visible_team_ids(request.user))
        return Response(ClusterSerializer(cluster, context={"now": cluster.now}).data)
