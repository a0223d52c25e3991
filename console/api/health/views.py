"""``health/``: every channel's health summary, worst first (or as asked), for the fleet view."""

from __future__ import annotations

from typing import Any

from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework import views
from rest_framework.exceptions import ValidationError
from rest_framework.request import Request
from rest_framework.response import Response

from console import permissions
from console.api.channels.serializers.status import ChannelHealthSerializer
from console.api.responses import QUERY_ERRORS
from console.api.scoping import team_channels
from console.selectors import health, history, reporting
from console.selectors.channels import channels_with_status

ORDERINGS = ("health", "-health", "name", "-name", "score", "-score")


class HealthView(views.APIView):
    """Every channel's health: score, level and the reasons (the explanation)."""

    required_permissions = {"get": permissions.seeing()}

    @extend_schema(
        operation_id="health_list",
        summary="Every channel's health, worst first",
        description=(
            "One summary per channel: a score (100 healthy down to 0), a level (idle: "
            "stopped on purpose; ok; warning; critical: the worst rule that fired) and an "
            "explanation with one sentence per rule (failure rate, dead-letter rate, lag "
            "trend, automatic restarts, time since it last ran). The same object is in "
            "`GET /channels/?expand=status` as `status.health`, and in `/metrics` as "
            "`sluice_channel_health_score` / `sluice_channel_health_level`. Roles: as for "
            "viewing channels."
        ),
        parameters=[
            OpenApiParameter(
                "ordering",
                str,
                enum=list(ORDERINGS),
                description=(
                    "health (default): worst first (level, then score); score: lowest score "
                    "first; name: by name; a leading '-' reverses."
                ),
            )
        ],
        responses={200: ChannelHealthSerializer(many=True), 400: QUERY_ERRORS},
    )
    def get(self, request: Request) -> Response:
        ordering = request.query_params.get("ordering", "health")
        if ordering not in ORDERINGS:
            raise ValidationError({"ordering": [f"One of: {', '.join(ORDERINGS)}."]})
        rows: list[tuple[health.Health, dict[str, Any]]] = []
        before = history.lags_before()  # the lag trend: one query for the fleet, cached
        at = reporting.now()  # one instant for every channel's reporting
        mine = team_channels(request, channels_with_status())  # the caller's teams' only
        listed = health.attach_recent_failures(list(mine), at=at)
        for channel in listed:
            connector = getattr(channel, "connector", None)
            assessed = health.of_channel(channel, lag_before=before.get(channel.name), at=at)
            rows.append(
                (
                    assessed,
                    {
                        "name": channel.name,
                        "state": reporting.shown_state(connector, at=at),
                        "target_state": channel.target_state,
                        "health": assessed.as_dict(),
                    },
                )
            )
        key = ordering.lstrip("-")
        if key == "name":
            rows.sort(key=lambda row: str(row[1]["name"]))
        elif key == "score":
            rows.sort(key=lambda row: (row[0].score, row[1]["name"]))
        else:
            rows.sort(key=lambda row: (health.sort_key(row[0]), row[1]["name"]))
        if ordering.startswith("-"):
            rows.reverse()
        return Response(ChannelHealthSerializer([body for _, body in rows], many=True).data)
