"""``/connect/``: Kafka Connect's REST API over channels (console/api/connect/views.py)."""

from __future__ import annotations

from django.urls import path

from console import permissions
from console.api.connect import views

app_name = "connect"
urlpatterns = [
    path("", views.RootView.as_view(), name="root"),
    path("connectors", views.ConnectorsView.as_view(), name="connectors"),
    path("connectors/<str:name>", views.ConnectorView.as_view(), name="connector"),
    path("connectors/<str:name>/config", views.ConfigView.as_view(), name="config"),
    path("connectors/<str:name>/status", views.StatusView.as_view(), name="status"),
    path("connectors/<str:name>/tasks", views.TasksView.as_view(), name="tasks"),
    path(
        "connectors/<str:name>/tasks/<int:task>/status",
        views.TaskStatusView.as_view(),
        name="task-status",
    ),
    path(
        "connectors/<str:name>/tasks/<int:task>/restart",
        views.TaskRestartView.as_view(),
        name="task-restart",
    ),
    path("connectors/<str:name>/topics", views.TopicsView.as_view(), name="topics"),
    *[
        path(
            f"connectors/<str:name>/{op}",
            views.LifecycleView.as_view(
                operation=op,
                required_permissions={"put": permissions.OPERATE[op]},
            ),
            name=op,
        )
        for op in ("pause", "resume", "stop")
    ],
    path("connectors/<str:name>/restart", views.RestartView.as_view(), name="restart"),
    path("connectors/<str:name>/offsets", views.OffsetsView.as_view(), name="offsets"),
]
