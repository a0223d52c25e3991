"""The audit trail's rows as the API shows them."""

from __future__ import annotations

from rest_framework import serializers

from console.models import AuditEvent
from console.selectors.specs import SECRET_MARKER


class AuditEventSerializer(serializers.ModelSerializer):
    """One audited change or operation: who, what, when, from where, and the outcome."""

    user = serializers.IntegerField(
        source="user_id",
        read_only=True,
        allow_null=True,
        help_text="The user's id; null for anonymous requests or a deleted user.",
    )
    changes = serializers.JSONField(
        read_only=True,
        help_text=(
            "The request body as recorded: channel specs with their secrets as "
            f'{SECRET_MARKER!r}, password and token fields as "[redacted]"; a large body '
            "only as {truncated, bytes, keys}."
        ),
    )

    class Meta:
        model = AuditEvent
        fields = [
            "id",
            "created_at",
            "actor",
            "user",
            "action",
            "object_type",
            "object_id",
            "changes",
            "outcome",
            "remote_addr",
            "user_agent",
            "via",
        ]
        read_only_fields = fields
