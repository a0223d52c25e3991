"""``/schema-registry/``: Confluent Schema Registry's REST API
(console/api/schema_registry/views.py)."""

from __future__ import annotations

from django.urls import path

from console.api.schema_registry import views

S = "subjects/<path:subject>"
app_name = "schema-registry"
urlpatterns = [
    path("", views.RootView.as_view(), name="root"),
    path("subjects", views.SubjectsView.as_view(), name="subjects"),
    path(f"{S}/versions", views.VersionsView.as_view(), name="versions"),
    path(f"{S}/versions/<str:version>", views.VersionView.as_view(), name="version"),
    path(
        f"{S}/versions/<str:version>/schema",
        views.VersionSchemaView.as_view(),
        name="version-schema",
    ),
    path(
        f"{S}/versions/<str:version>/referencedby",
        views.ReferencedByView.as_view(),
        name="referenced-by",
    ),
    path(S, views.SubjectView.as_view(), name="subject"),
    path("schemas/types", views.SchemaTypesView.as_view(), name="schema-types"),
    path("schemas/ids/<int:schema_id>", views.SchemaByIdView.as_view(), name="schema"),
    path(
        "schemas/ids/<int:schema_id>/schema", views.SchemaByIdRawView.as_view(), name="schema-raw"
    ),
    path(
        "schemas/ids/<int:schema_id>/versions",
        views.SchemaByIdVersionsView.as_view(),
        name="schema-versions",
    ),
    path(
        "schemas/ids/<int:schema_id>/subjects",
        views.SchemaByIdSubjectsView.as_view(),
        name="schema-subjects",
    ),
    path(
        f"compatibility/{S}/versions/<str:version>",
        views.CompatibilityView.as_view(),
        name="compatibility-version",
    ),
    path(f"compatibility/{S}/versions", views.CompatibilityView.as_view(), name="compatibility"),
    path("config", views.ConfigView.as_view(), name="config"),
    path("config/<path:subject>", views.SubjectConfigView.as_view(), name="subject-config"),
    path("mode", views.ModeView.as_view(), name="mode"),
    path("mode/<path:subject>", views.ModeView.as_view(), name="subject-mode"),
]
