"""``/api/v1/``: one router for the areas' viewsets (``console/api/<area>/views.py``), and
the two single objects (``cluster/``, ``me/``) as plain views. Collections and items end in
a slash, actions do not (:mod:`console.api.routers`)."""

from __future__ import annotations

from django.urls import path

from console.api.audit.views import AuditEventViewSet
from console.api.channels.fleet import ChannelBulkViewSet
from console.api.channels.views import ChannelViewSet, LifecycleEventViewSet, RevisionViewSet
from console.api.cluster.views import ClusterView, WorkerViewSet
from console.api.dead_letters.views import DeadLetterViewSet
from console.api.discovery.views import DiscoveryViewSet
from console.api.health.views import HealthView
from console.api.history.views import HistoryView
from console.api.ingest.views import IngestViewSet
from console.api.me.views import MeView
from console.api.offsets.views import OffsetsViewSet
from console.api.plugins.views import EventPatternViewSet, PluginOfKindViewSet, PluginViewSet
from console.api.routers import Router
from console.api.runs.views import ReplayViewSet
from console.api.schemas.views import SchemaSubjectViewSet
from console.api.teams.views import ServiceAccountViewSet, TeamReachView, TeamViewSet

router = Router()
router.register("channels", ChannelViewSet, basename="channel")
router.register("channels", ChannelBulkViewSet, basename="channel")  # channels/bulk
# The areas under a channel share its prefix and basename: channel-offsets, channel-events…
router.register("channels", OffsetsViewSet, basename="channel")
router.register("channels", IngestViewSet, basename="channel")
router.register("channels", DiscoveryViewSet, basename="channel")  # channels/{name}/discovery
router.register(
    "channels/<str:name>/lifecycle", LifecycleEventViewSet, basename="channel-lifecycle"
)
router.register("channels/<str:name>/replays", ReplayViewSet, basename="channel-replay")
router.register("channels/<str:name>/revisions", RevisionViewSet, basename="channel-revision")
router.register(
    "channels/<str:name>/dead-letters", DeadLetterViewSet, basename="channel-dead-letter"
)
router.register("audit", AuditEventViewSet, basename="audit")
router.register("workers", WorkerViewSet, basename="worker")
router.register("plugins", PluginViewSet, basename="plugin")
router.register("plugins/<str:kind>", PluginOfKindViewSet, basename="plugin")
router.register("event-patterns", EventPatternViewSet, basename="event-pattern")
router.register("schemas", SchemaSubjectViewSet, basename="schema-subject")
router.register("teams", TeamViewSet, basename="team")
router.register(
    "teams/<str:team>/service-accounts", ServiceAccountViewSet, basename="team-service-account"
)

app_name = "api"
urlpatterns = [
    *router.urls,
    path("cluster/", ClusterView.as_view(), name="cluster"),
    path("me/", MeView.as_view(), name="me"),
    path("health/", HealthView.as_view(), name="health"),
    path("channels/<str:name>/history/", HistoryView.as_view(), name="channel-history"),
    path("teams/<str:team>/reach/", TeamReachView.as_view(), name="team-reach"),
]
