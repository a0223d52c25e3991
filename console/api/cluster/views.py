"""The runtime side as the console sees it: the runtime workers the control loop records
(``workers/``) and the cluster view read live from the runtime (``cluster/``: workers, their
Spark drivers, the Spark cluster, each channel's executors)."""

from __future__ import annotations

from drf_spectacular.utils import OpenApiResponse, extend_schema, extend_schema_view
from rest_framework import views, viewsets
from rest_framework.request import Request
from rest_framework.response import Response

from console import permissions
from console.api.cluster.serializers import ClusterSerializer, WorkerSerializer
from console.api.pagination import LimitOffsetPagination
from console.api.responses import RUNTIME_DOWN, ErrorDetailSerializer
from console.selectors import cluster as selectors


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
    queryset = selectors.workers()
    required_permissions = {
        "list": permissions.seeing("worker", "runtime workers"),
        "retrieve": permissions.seeing("worker", "runtime workers"),
    }
    serializer_class = WorkerSerializer
    pagination_class = LimitOffsetPagination
    lookup_field = "worker_id"
    lookup_value_converter = "str"


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
        cluster = selectors.cluster_view()
        return Response(ClusterSerializer(cluster, context={"now": cluster.now}).data)
