"""``/schema-registry/``: Confluent Schema Registry's REST API
(console/api/schema_registry/views.py), twice: each team's registry under
``teams/<team>/`` (route names ``team-…``) and the legacy one at the root, whose team is the
caller's only team, else the ``default`` team (:meth:`views.RegistryView.team`)."""

from __future__ import annotations

from django.urls import URLPattern, path

from console.api.schema_registry import views

S = "subjects/<path:subject>"
TEAM = "teams/<str:team>/"


def routes(prefix: str = "", name: str = "") -> list[URLPattern]:
    """The API's routes under ``prefix``, named with ``name`` before each."""
    return [
        path(f"{prefix}", views.RootView.as_view(), name=f"{name}root"),
        path(f"{prefix}subjects", views.SubjectsView.as_view(), name=f"{name}subjects"),
        path(f"{prefix}{S}/versions", views.VersionsView.as_view(), name=f"{name}versions"),
        path(
            f"{prefix}{S}/versions/<str:version>",
            views.VersionView.as_view(),
            name=f"{name}version",
        ),
        path(
            f"{prefix}{S}/versions/<str:version>/schema",
            views.VersionSchemaView.as_view(),
            name=f"{name}version-schema",
        ),
        path(
            f"{prefix}{S}/versions/<str:version>/referencedby",
            views.ReferencedByView.as_view(),
            name=f"{name}referenced-by",
        ),
        path(f"{prefix}{S}", views.SubjectView.as_view(), name=f"{name}subject"),
        path(f"{prefix}schemas/types", views.SchemaTypesView.as_view(), name=f"{name}schema-types"),
        path(
            f"{prefix}schemas/ids/<int:schema_id>",
            views.SchemaByIdView.as_view(),
            name=f"{name}schema",
        ),
        path(
            f"{prefix}schemas/ids/<int:schema_id>/schema",
            views.SchemaByIdRawView.as_view(),
            name=f"{name}schema-raw",
        ),
        path(
            f"{prefix}schemas/ids/<int:schema_id>/versions",
            views.SchemaByIdVersionsView.as_view(),
            name=f"{name}schema-versions",
        ),
        path(
            f"{prefix}schemas/ids/<int:schema_id>/subjects",
            views.SchemaByIdSubjectsView.as_view(),
            name=f"{name}schema-subjects",
        ),
        path(
            f"{prefix}compatibility/{S}/versions/<str:version>",
            views.CompatibilityView.as_view(),
            name=f"{name}compatibility-version",
        ),
        path(
            f"{prefix}compatibility/{S}/versions",
            views.CompatibilityView.as_view(),
            name=f"{name}compatibility",
        ),
        path(f"{prefix}config", views.ConfigView.as_view(), name=f"{name}config"),
        path(
            f"{prefix}config/<path:subject>",
            views.SubjectConfigView.as_view(),
            name=f"{name}subject-config",
        ),
        path(f"{prefix}mode", views.ModeView.as_view(), name=f"{name}mode"),
        path(f"{prefix}mode/<path:subject>", views.ModeView.as_view(), name=f"{name}subject-mode"),
    ]


app_name = "schema-registry"
urlpatterns = routes(TEAM, "team-") + routes()
