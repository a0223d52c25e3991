"""The audit trail (``audit/``): who changed or operated what, when, from where, and the outcome.
Rows are written by :mod:`console.services.audit_trail`; this area only lists them."""

from __future__ import annotations

from drf_spectacular.utils import extend_schema, extend_schema_view
from rest_framework import mixins, viewsets

from console import permissions
from console.api.audit.filters import AuditEventFilter, FilterBackend
from console.api.audit.serializers import AuditEventSerializer
from console.api.pagination import LimitOffsetPagination
from console.api.responses import QUERY_ERRORS
from console.selectors.audit_trail import audit_events, audit_events_for


@extend_schema_view(
    list=extend_schema(
        summary="List the audit trail",
        description=(
            "Every state-changing request to the API and the admin (refused ones included) and "
            "every sign-in, sign-in failure and sign-out, newest first: who, what, the object, "
            "the redacted request body, the HTTP status, when and from where. Needs "
            "`console.view_auditevent` (the viewer role). HTTP ingestion is not recorded."
        ),
        responses={200: AuditEventSerializer(many=True), 400: QUERY_ERRORS},
    )
)
class AuditEventViewSet(mixins.ListModelMixin, viewsets.GenericViewSet):
    queryset = audit_events()
    serializer_class = AuditEventSerializer
    pagination_class = LimitOffsetPagination
    filter_backends = [FilterBackend]
    filterset_class = AuditEventFilter
    permission_classes = [permissions.RolePermission]
    required_permissions = {"list": permissions.seeing("auditevent", "the audit trail")}

    def get_queryset(self):
        return audit_events_for(self.request.user)
