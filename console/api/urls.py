"""``/api/v1/`` routes, spelled out: actions (start, stop, pause, resume, restart, status,
preview, events, ingest-token, offsets, offsets/copy, validate, test) take no trailing slash."""

from __future__ import annotations

from django.urls import path

from console.api import views

channel_list = views.ChannelViewSet.as_view({"get": "list", "post": "create"})
channel_detail = views.ChannelViewSet.as_view(
    {"get": "retrieve", "put": "update", "patch": "partial_update", "delete": "destroy"}
)
channel_start = views.ChannelViewSet.as_view({"post": "start"})
channel_stop = views.ChannelViewSet.as_view({"post": "stop"})
channel_pause = views.ChannelViewSet.as_view({"post": "pause"})
channel_resume = views.ChannelViewSet.as_view({"post": "resume"})
channel_restart = views.ChannelViewSet.as_view({"post": "restart"})
channel_status = views.ChannelViewSet.as_view({"get": "status"})
channel_preview = views.ChannelViewSet.as_view({"get": "preview"})
worker_list = views.WorkerViewSet.as_view({"get": "list"})
worker_detail = views.WorkerViewSet.as_view({"get": "retrieve"})
plugin_list = views.PluginViewSet.as_view({"get": "list"})
plugin_detail = views.PluginViewSet.as_view({"get": "retrieve"})
plugin_validate = views.PluginViewSet.as_view({"post": "validate_config"})
plugin_validate_by_type = views.PluginViewSet.as_view({"post": "validate_config_by_type"})

app_name = "api"
urlpatterns = [
    path("channels/", channel_list, name="channel-list"),
    path("channels/<str:name>/", channel_detail, name="channel-detail"),
    path("channels/<str:name>/start", channel_start, name="channel-start"),
    path("channels/<str:name>/stop", channel_stop, name="channel-stop"),
    path("channels/<str:name>/pause", channel_pause, name="channel-pause"),
    path("channels/<str:name>/resume", channel_resume, name="channel-resume"),
    path("channels/<str:name>/restart", channel_restart, name="channel-restart"),
    path("channels/<str:name>/status", channel_status, name="channel-status"),
    path("channels/<str:name>/preview", channel_preview, name="channel-preview"),
    path("channels/<str:name>/events", views.ChannelEventsView.as_view(), name="channel-events"),
    path(
        "channels/<str:name>/ingest-token",
        views.ChannelIngestTokenView.as_view(),
        name="channel-ingest-token",
    ),
    path("channels/<str:name>/offsets", views.ChannelOffsetsView.as_view(), name="channel-offsets"),
    path(
        "channels/<str:name>/offsets/copy",
        views.ChannelOffsetsCopyView.as_view(),
        name="channel-offsets-copy",
    ),
    path(
        "channels/<str:name>/lifecycle/",
        views.ChannelLifecycleView.as_view(),
        name="channel-lifecycle",
    ),
    path(
        "channels/<str:name>/revisions/",
        views.ChannelRevisionListView.as_view(),
        name="channel-revision-list",
    ),
    path(
        "channels/<str:name>/revisions/<int:number>/",
        views.ChannelRevisionDetailView.as_view(),
        name="channel-revision-detail",
    ),
    path("audit/", views.AuditEventListView.as_view(), name="audit-list"),
    path("cluster/", views.ClusterView.as_view(), name="cluster"),
    path("workers/", worker_list, name="worker-list"),
    path("workers/<str:worker_id>/", worker_detail, name="worker-detail"),
    path("plugins/", plugin_list, name="plugin-list"),
    path("plugins/<str:kind>/<str:type>/", plugin_detail, name="plugin-detail"),
    path("plugins/<str:kind>/<str:type>/validate", plugin_validate, name="plugin-validate"),
    # The spelling: kind in the query, needed only when the type is ambiguous.
    path("plugins/<str:type>/validate", plugin_validate_by_type, name="plugin-validate-by-type"),
    path("event-patterns/test", views.EventPatternTestView.as_view(), name="event-pattern-test"),
    path("me/", views.MeView.as_view(), name="me"),
]
