"""``channels/{name}/history/``: a channel's metrics over time, from the time-series store
(:mod:`console.selectors.history`)."""

from __future__ import annotations

from django.http import HttpResponse
from drf_spectacular.utils import OpenApiParameter, OpenApiResponse, extend_schema
from rest_framework import serializers, views
from rest_framework.exceptions import ValidationError
from rest_framework.request import Request

from console import permissions
from console.api.exceptions import ServiceUnavailable
from console.api.responses import NOT_FOUND, QUERY_ERRORS, ErrorDetailSerializer
from console.api.scoping import channel_or_404
from console.selectors import history

MAX_SERIES = len(history.SERIES)


class BreakdownSerializer(serializers.Serializer):
    name = serializers.CharField(help_text="The stage (source, transforms[0], sink) or rule.")
    values = serializers.ListField(
        child=serializers.FloatField(allow_null=True),
        help_text="One value (or null) per timestamp of the answer.",
    )


class HistorySeriesSerializer(serializers.Serializer):
    name = serializers.ChoiceField(choices=list(history.SERIES))
    unit = serializers.CharField(help_text="events/s, events (per step), records or s.")
    description = serializers.CharField()
    values = serializers.ListField(
        child=serializers.FloatField(allow_null=True),
        help_text="The channel's value at each timestamp of the answer (null where the store "
        "has no sample).",
    )
    stages = BreakdownSerializer(many=True, help_text="Per stage, when asked (by=stage).")
    rules = BreakdownSerializer(many=True, help_text="Per rule of a bus, when asked (by=rule).")


class HistorySerializer(serializers.Serializer):
    channel = serializers.CharField()
    window = serializers.ChoiceField(choices=list(history.WINDOWS))
    step = serializers.IntegerField(help_text="Seconds between two points.")
    start = serializers.IntegerField(help_text="Unix seconds of the window's start.")
    end = serializers.IntegerField(help_text="Unix seconds of the window's end.")
    timestamps = serializers.ListField(
        child=serializers.IntegerField(),
        help_text="Unix seconds of every point, start to end one step apart; each series has "
        "one value per timestamp.",
    )
    series = HistorySeriesSerializer(many=True)


class HistoryQuerySerializer(serializers.Serializer):
    window = serializers.ChoiceField(choices=list(history.WINDOWS), default=history.DEFAULT_WINDOW)
    series = serializers.CharField(required=False)
    by = serializers.CharField(required=False)

    def validate_by(self, value: str) -> tuple[str, ...]:
        names = [part.strip() for part in value.split(",") if part.strip()]
        unknown = [name for name in names if name not in history.BREAKDOWNS]
        if unknown:
            raise ValidationError(
                f"Unknown breakdown {', '.join(repr(n[:40]) for n in unknown[:5])}; "
                f"one or more of: {', '.join(history.BREAKDOWNS)}."
            )
        return tuple(dict.fromkeys(names))

    def validate_series(self, value: str) -> list[str]:
        names = [part.strip() for part in value.split(",") if part.strip()]
        unknown = [name for name in names if name not in history.SERIES]
        if unknown:
            raise ValidationError(
                f"Unknown series {', '.join(repr(n[:40]) for n in unknown[:5])}; "
                f"one or more of: {', '.join(history.SERIES)}."
            )
        if not names:
            raise ValidationError("Name at least one series.")
        return list(dict.fromkeys(names))[:MAX_SERIES]


class HistoryView(views.APIView):
    """A channel's history: events in/out, lag, dead letters, batch duration over a window."""

    required_permissions = {"get": permissions.seeing()}

    @extend_schema(
        operation_id="channels_history_retrieve",
        summary="A channel's metrics over time",
        description=(
            "The channel's series over the window ending now, from the time-series store "
            "that scrapes `/metrics` every 10 s: a point every 10 s in the windows from 5 min "
            "up to 24 h, every 5 minutes beyond, as one `timestamps` list and one value per "
            "timestamp in each series. Rates (`events/s`) are over each step; "
            "`dead_letters` counts the events of each step; `lag` and `batch_duration` are "
            "the highest of each step. Per stage and per rule where the series has them. "
            "503 when the store is unavailable. Roles: as for viewing channels."
        ),
        parameters=[
            OpenApiParameter("window", str, enum=list(history.WINDOWS), description="Default 1h."),
            OpenApiParameter(
                "series",
                str,
                description="Comma-separated, any of: "
                + ", ".join(history.SERIES)
                + " (default: all).",
            ),
            OpenApiParameter(
                "by",
                str,
                description="Also per stage and/or per rule: stage, rule or stage,rule "
                "(default: the channel's totals only).",
            ),
        ],
        responses={
            200: HistorySerializer,
            400: QUERY_ERRORS,
            404: NOT_FOUND,
            503: OpenApiResponse(
                ErrorDetailSerializer, description="The history store is unavailable."
            ),
        },
    )
    def get(self, request: Request, name: str) -> HttpResponse:
        query = HistoryQuerySerializer(data=request.query_params)
        query.is_valid(raise_exception=True)
        channel = channel_or_404(self, request, name)
        series = query.validated_data.get("series") or list(history.SERIES)
        try:
            body = history.channel_history(
                channel.name,
                query.validated_data["window"],
                series,
                by=query.validated_data.get("by", ()),
            )
        except history.HistoryUnavailable as exc:
            raise ServiceUnavailable(str(exc), code="history_unavailable") from exc
        # Already JSON (HistorySerializer's shape): the service builds it as text, a day's
        # 43,205 values are not serialized again (docs/benchmarks.md, the history query).
        return HttpResponse(body, content_type="application/json")
