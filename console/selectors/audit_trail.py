"""The audit trail as the API lists it (rows are written by :mod:`console.services.audit_trail`)."""

from __future__ import annotations

from django.db.models import Q, QuerySet

from console import permissions
from console.models import AuditEvent


def audit_events() -> QuerySet[AuditEvent]:
    """Every audit event, newest first, with its user (filtered by
    :class:`console.api.audit.filters.AuditEventFilter`)."""
    return AuditEvent.objects.select_related("user").order_by("-created_at", "-id")


def audit_events_for(user) -> QuerySet[AuditEvent]:
    """:func:`audit_events` ``user`` may see: a site admin every one; anyone else the rows of
    their teams' objects and their own rows (their sign-ins), never another team's."""
    rows = audit_events()
    teams = permissions.visible_team_ids(user)
    if teams is None:
        return rows
    return rows.filter(Q(team_id__in=teams) | Q(user=user))
