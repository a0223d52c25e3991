"""A channel's ingestion token as the API shows it: whether there is one and its prefix, or
the token itself, once, when it is issued."""

from __future__ import annotations

from typing import Any

from drf_spectacular.utils import extend_schema_field
from rest_framework import serializers

from console.models import Channel
from console.selectors.channels import ingest_token_state


class IngestTokenStateSerializer(serializers.Serializer):
    """Whether a channel has an ingestion token, and its prefix; never the token."""

    exists = serializers.BooleanField(read_only=True)
    prefix = serializers.CharField(read_only=True, allow_null=True)


class IssuedIngestTokenSerializer(serializers.Serializer):
    """A token just issued: shown this once; the console keeps only its hash."""

    token = serializers.CharField(
        read_only=True, help_text="The token: send it as 'Authorization: Bearer <token>'."
    )
    prefix = serializers.CharField(read_only=True, help_text="Its first characters.")
    created = serializers.BooleanField(
        read_only=True, help_text="true: the channel had no token; false: the old one was replaced."
    )


@extend_schema_field(
    {
        "type": "object",
        "properties": {
            "exists": {"type": "boolean"},
            "prefix": {"type": "string", "nullable": True},
        },
        "required": ["exists", "prefix"],
        "readOnly": True,
    }
)
class IngestTokenField(serializers.Field):
    """``{exists, prefix}`` of the channel's ingestion token (read-only)."""

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(source="*", read_only=True, **kwargs)

    def to_representation(self, channel: Channel) -> dict[str, Any]:
        return ingest_token_state(channel)
