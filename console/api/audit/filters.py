"""The audit list's filters (django-filter), each optional: ``?actor=&action=&object_type=
&object_id=&since=``."""

from __future__ import annotations

import django_filters
from django.db.models import QuerySet
from django_filters.rest_framework import DjangoFilterBackend

from console.models import AuditEvent

# DRF's words for a bad date-time, which the list answered before django-filter read it.
_BAD_DATETIME = (
    "Datetime has wrong format. Use one of these formats instead: "
    "YYYY-MM-DDThh:mm[:ss[.uuuuuu]][+HH:MM|-HH:MM|Z]."
)


class AuditEventFilter(django_filters.FilterSet):
    actor = django_filters.CharFilter(help_text='Username, or "anonymous".')
    action = django_filters.CharFilter(
        method="filter_action",
        help_text="An action (channel.start); ending in '.' or '*', every action it starts.",
    )
    object_type = django_filters.CharFilter(help_text="channel, user, …")
    object_id = django_filters.CharFilter(help_text="A channel name, …")
    since = django_filters.IsoDateTimeFilter(
        field_name="created_at",
        lookup_expr="gte",
        help_text="ISO 8601; only events at or after this time.",
        error_messages={"invalid": _BAD_DATETIME},
    )

    class Meta:
        model = AuditEvent
        fields = ["actor", "action", "object_type", "object_id", "since"]

    def filter_action(self, events: QuerySet[AuditEvent], name: str, value: str):
        """Exactly ``value``, or every action it starts when it ends with ``.`` or ``*``
        (``channel.`` gives every channel operation)."""
        if value.endswith(("*", ".")):
            return events.filter(action__startswith=value.rstrip("*"))
        return events.filter(action=value)


class FilterBackend(DjangoFilterBackend):
    """django-filter's backend, without its form in DRF's browsable API: the form's template
    is an app template of django_filters, which is not an installed app (the filters need
    none; the query parameters are documented in the OpenAPI schema)."""

    def to_html(self, request, queryset, view) -> None:
        return None
