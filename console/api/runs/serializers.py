"""A channel's bounded runs (replays, redrives): what GET answers and what POST takes.

Errors are keyed by the path of each bad field (``window.end``, ``start_offsets[0].offset``):
:func:`console.api.offsets.serializers.validated`."""

from __future__ import annotations

from typing import Any

from rest_framework import serializers

from console.models import ChannelRun


class RunWindowSerializer(serializers.Serializer):
    """``[start, end)``: RFC 3339 times."""

    start = serializers.DateTimeField()
    end = serializers.DateTimeField()


class RunOffsetSerializer(serializers.Serializer):
    topic = serializers.CharField()
    partition = serializers.IntegerField(min_value=0)
    offset = serializers.IntegerField(min_value=0)


class ReplayRequestSerializer(serializers.Serializer):
    """Exactly one of ``window`` (by time) and ``start_offsets`` + ``end_offsets``."""

    window = RunWindowSerializer(required=False)
    start_offsets = RunOffsetSerializer(many=True, required=False)
    end_offsets = RunOffsetSerializer(many=True, required=False)
    confirm = serializers.BooleanField(
        required=False,
        default=False,
        help_text=(
            "Write into the channel's live targets (GET replays/targets names them): their "
            "consumers get the events a second time. Without it, a replay into a live "
            "target is refused (400 on confirm)."
        ),
    )

    def validate(self, attrs: dict[str, Any]) -> dict[str, Any]:
        has_window = "window" in attrs
        has_offsets = "start_offsets" in attrs or "end_offsets" in attrs
        if has_window == has_offsets:
            raise serializers.ValidationError(
                "Give exactly one of window and start_offsets/end_offsets."
            )
        if has_offsets and not ("start_offsets" in attrs and "end_offsets" in attrs):
            missing = "end_offsets" if "start_offsets" in attrs else "start_offsets"
            raise serializers.ValidationError({missing: ["Required with the other offsets."]})
        return attrs


class RunTargetSerializer(serializers.Serializer):
    """A target a run writes into (:class:`console.services.runs.RunTarget`)."""

    rule = serializers.CharField(allow_null=True, help_text="A bus's rule; null: the sink.")
    type = serializers.CharField(help_text="The sink plugin: kafka, http, jdbc, files, preview.")
    where = serializers.CharField(help_text="Its topic, request URL (no query), table or path.")
    live = serializers.BooleanField(help_text="Others read it (all but the console's live tail).")
    marked = serializers.CharField(
        help_text="How a run's events are marked there, or 'not marked'."
    )
    name = serializers.CharField(help_text="The words the confirmation names it with.")


class RunTargetsSerializer(serializers.Serializer):
    """What a replay or redrive of the channel would write into now."""

    targets = RunTargetSerializer(many=True)
    live = serializers.IntegerField(help_text="How many of them are live (need confirm).")


class ChannelRunSerializer(serializers.ModelSerializer):
    channel = serializers.CharField(source="channel.name", read_only=True)
    progress = serializers.FloatField(read_only=True, help_text="Events read / expected, 0..1.")
    window = serializers.SerializerMethodField()
    targets = RunTargetSerializer(many=True, read_only=True)
    dead_letter_ids = serializers.ListField(
        child=serializers.CharField(), read_only=True, help_text="A redrive's dead letters."
    )

    class Meta:
        model = ChannelRun
        fields = [
            "id",
            "channel",
            "kind",
            "state",
            "window",
            "topic",
            "start_offsets",
            "end_offsets",
            "expected",
            "events_read",
            "events_written",
            "events_failed",
            "progress",
            "targets",
            "dead_letter_ids",
            "created_by",
            "created_at",
            "started_at",
            "finished_at",
            "error",
        ]
        read_only_fields = fields

    def get_window(self, run: ChannelRun) -> dict[str, str] | None:
        if run.window_start is None or run.window_end is None:
            return None
        return {"start": run.window_start.isoformat(), "end": run.window_end.isoformat()}
