"""``GET /api/v1/channels/{name}/tail``: the serializers of a channel's live tail (the
points it can be read at, one look at one of them). The reading is
:mod:`console.selectors.tail`."""

from __future__ import annotations

from typing import Any

from rest_framework import serializers

from console.api.channels.serializers.operations import PreviewLimitField
from console.selectors.tail import DEFAULT_LIMIT, MAX_LIMIT, TailAnswer, TailPoint

TEXT_ENCODINGS = ["text", "base64", "null"]
"""How a key or a header is shown: UTF-8 text, base64 when not UTF-8, null when absent."""
_LIMIT = f"Must be a whole number from 1 to {MAX_LIMIT}."


class TailQuerySerializer(serializers.Serializer):
    at = serializers.CharField(
        required=False,
        max_length=200,
        help_text=(
            "Where to read: `source`, `sink`, `rule:<name>` (`rule:<name>:<n>` for a rule's "
            "n-th sink when it has several Kafka targets) or `dead-letters`; the answer's "
            "`points` lists the channel's. Default: the sink (a bus: its first rule target), "
            "else the source."
        ),
    )
    limit = PreviewLimitField(
        min_value=1,
        max_value=MAX_LIMIT,
        default=DEFAULT_LIMIT,
        help_text=f"How many records, newest first (1-{MAX_LIMIT}, default {DEFAULT_LIMIT}).",
        error_messages={key: _LIMIT for key in ("invalid", "min_value", "max_value")},
    )


class TailPointSerializer(serializers.Serializer):
    id = serializers.CharField(help_text="The value of `at` that reads here.")
    label = serializers.CharField()  # type: ignore[assignment]
    kind = serializers.ChoiceField(choices=["kafka", "preview"])
    location = serializers.CharField(help_text="Where the events are, in words.")
    readable = serializers.BooleanField()
    note = serializers.CharField(help_text="Why the point cannot be read, when it cannot.")


class TailHeaderSerializer(serializers.Serializer):
    name = serializers.CharField()
    value = serializers.CharField(allow_null=True)
    encoding = serializers.ChoiceField(choices=TEXT_ENCODINGS, help_text="`base64` when not UTF-8.")


class TailRecordSerializer(serializers.Serializer):
    topic = serializers.CharField(allow_null=True, help_text="Null for a Preview sink's event.")
    partition = serializers.IntegerField(allow_null=True)
    offset = serializers.IntegerField(allow_null=True)
    timestamp = serializers.CharField(
        allow_null=True, help_text="The record's timestamp (RFC 3339, UTC), when it has one."
    )
    key = serializers.CharField(allow_null=True)
    key_encoding = serializers.ChoiceField(choices=TEXT_ENCODINGS)
    headers = TailHeaderSerializer(many=True)
    value = serializers.JSONField(
        allow_null=True,
        help_text="Parsed as JSON when it is JSON, else its text (base64 when not UTF-8).",
    )
    value_encoding = serializers.ChoiceField(choices=["json", "text", "base64", "null"])
    truncated = serializers.BooleanField(
        help_text="The value (or key) was longer than the tail shows (16 KiB) and was cut."
    )
    size = serializers.IntegerField(help_text="The value's length in bytes, before any cut.")


class ChannelTailSerializer(serializers.Serializer):
    """One look at a channel's events where they are."""

    name = serializers.CharField()
    points = TailPointSerializer(many=True)
    point = TailPointSerializer(allow_null=True, help_text="The point read; null when none.")
    state = serializers.ChoiceField(
        choices=["ok", "unreachable", "unreadable", "none"],
        help_text=(
            "`ok`; `unreachable`: Kafka (or the runtime) did not answer within a few seconds, "
            "so nothing is known about the events now; `unreadable`: the console cannot read "
            "this point (see `note`); `none`: the channel has no point to read."
        ),
    )
    note = serializers.CharField(help_text="What needs saying about this look, else empty.")
    records = TailRecordSerializer(many=True, help_text="Newest first.")
    complete = serializers.BooleanField(
        help_text="False when not every partition could be read to its end in time."
    )
    read_at = serializers.DateTimeField(allow_null=True)


NO_POINT = "This channel has no Kafka topic or Preview sink the console can read."


def tail_body(name: str, points: list[TailPoint], found: TailAnswer | None) -> dict[str, Any]:
    """The response body for one look (``found`` None: the channel has no point)."""
    if found is None:
        return {
            "name": name,
            "points": points,
            "point": None,
            "state": "none",
            "note": NO_POINT,
            "records": [],
            "complete": True,
            "read_at": None,
        }
    return {
        "name": name,
        "points": points,
        "point": found.point,
        "state": found.state,
        "note": found.note,
        "records": found.records,
        "complete": found.complete,
        "read_at": found.read_at,
    }
