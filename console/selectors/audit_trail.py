"""The audit trail as the API lists it (rows are written by :mod:`console.services.audit_trail`)."""

from __future__ import annotations

from django.db.models import QuerySet

from console.models import AuditEvent


def audit_events() -> QuerySet[AuditEvent]:
    """Every audit event, newest first, with its user (filtered by
    :class:`console.api.audit.filters.AuditEventFilter`)."""
    return AuditEvent.objects.select_related("user").order_by("-created_at", "-id")
