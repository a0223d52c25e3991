"""The answers every area of the API shares, for the OpenAPI schema: DRF's ``{"detail": …}``
body and the error statuses the channel-scoped operations document alike."""

from __future__ import annotations

from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiExample, OpenApiResponse
from rest_framework import serializers


class ErrorDetailSerializer(serializers.Serializer):
    """The body of a 401, 403, 404, 409 or 503: DRF's ``{"detail": "<reason>"}``."""

    detail = serializers.CharField(help_text="Why the request was not served.")


QUERY_ERRORS = OpenApiResponse(
    response={
        "type": "object",
        "additionalProperties": {"type": "array", "items": {"type": "string"}},
    },
    description="A query parameter is invalid; each key is a parameter, with its messages.",
)


NOT_FOUND = OpenApiResponse(ErrorDetailSerializer, description="No channel has this name.")
RUNTIME_DOWN = OpenApiResponse(
    ErrorDetailSerializer, description="The runtime is unavailable; nothing changed."
)
CONFLICT = OpenApiResponse(
    response=OpenApiTypes.OBJECT,
    description="The channel cannot do this from where it is; nothing changed.",
    examples=[
        OpenApiExample(
            "Pause a stopped channel",
            value={
                "detail": "channel 'orders' is STOPPED: there is no driver to pause; start it first"
            },
        )
    ],
)


class QuotaReachedSerializer(ErrorDetailSerializer):
    """The body of a 429: the team's quota that refused the request, named."""

    quota = serializers.ChoiceField(
        choices=["max_channels", "max_running_channels", "max_realtime_cores"],
        help_text="The team's quota reached (a field of the team).",
    )
    limit = serializers.IntegerField(help_text="The quota.")
    used = serializers.IntegerField(help_text="What the team holds against it now.")
    team = serializers.CharField(help_text="The team.")


QUOTA_REACHED = OpenApiResponse(
    QuotaReachedSerializer,
    description="The team has reached one of its quotas (named); nothing changed.",
)
