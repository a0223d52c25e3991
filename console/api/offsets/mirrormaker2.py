"""MirrorMaker 2 migration in the offsets API: the request and answer shapes.

* ``GET channels/{name}/offsets/mirrormaker2?source_alias=…`` shows MM2's offsets next to the
  channel's (:class:`MirrorPreviewSerializer`);
* ``POST channels/{name}/offsets/copy`` with ``{"from_mirrormaker2": {...}}`` takes over;
* ``POST channels/{name}/offsets/mirrormaker2`` hands back (:class:`HandBackSerializer`).

MM2's own offsets are shown in its KIP-875 form (``GET /connectors/MirrorSourceConnector/
offsets``): partition ``{"cluster", "topic", "partition"}``, offset ``{"offset"}`` = the LAST
record copied; the channel's in its own: the NEXT offset to read.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiExample, OpenApiParameter
from rest_framework import serializers
from rest_framework.exceptions import ValidationError
from rest_framework.settings import api_settings

from console.api.offsets.serializers import (
    NON_EMPTY_STRING,
    NOT_AN_OBJECT,
    OffsetsCopySerializer,
    SourceOffsetSerializer,
    StrictCharField,
    messages,
)
from console.services.mirrormaker2 import HandBack, MirrorPreview
from runtime_adapter.base import SourceOffset

ALIAS_HELP = (
    "MirrorMaker 2's alias of the SOURCE cluster (the 'a' of a->b.enabled; 1-64 letters, "
    "digits, '_' or '-')."
)
SERVERS_HELP = (
    "Brokers of the cluster holding MM2's offsets topic (MM2's target): must be those of the "
    "channel's Kafka sink or source. Default: the sink's (the source's without a Kafka sink)."
)
TOPIC_HELP = "MM2's Kafka Connect offsets topic. Default: mm2-offsets.<source_alias>.internal."


class MirrorMaker2Serializer(serializers.Serializer):
    """Where MirrorMaker 2's offsets are: the source alias, and optionally the cluster and
    topic (defaults: the sink's brokers, ``mm2-offsets.<source_alias>.internal``)."""

    source_alias = StrictCharField(
        max_length=64, error_messages=messages(NON_EMPTY_STRING, "blank"), help_text=ALIAS_HELP
    )
    bootstrap_servers = StrictCharField(
        required=False,
        max_length=1000,
        error_messages=messages(NON_EMPTY_STRING, "blank"),
        help_text=SERVERS_HELP,
    )
    offsets_topic = StrictCharField(
        required=False,
        max_length=249,
        error_messages=messages(NON_EMPTY_STRING, "blank"),
        help_text=TOPIC_HELP,
    )

    def run_validation(self, data: Any = serializers.empty) -> Any:
        if data is not serializers.empty and not isinstance(data, Mapping):
            raise ValidationError({api_settings.NON_FIELD_ERRORS_KEY: [NOT_AN_OBJECT]})
        return super().run_validation(data)

    def to_internal_value(self, data: Any) -> dict[str, Any]:
        unknown = {key: ["Unknown field."] for key in sorted(set(data) - set(self.fields))}
        try:
            values = super().to_internal_value(data)
        except ValidationError as exc:
            detail = exc.detail if isinstance(exc.detail, Mapping) else {}
            raise ValidationError({**detail, **unknown}) from None
        if unknown:
            raise ValidationError(unknown)
        return dict(values)


class OffsetsCopyOriginSerializer(OffsetsCopySerializer):
    """POST body of offsets/copy: exactly one origin, MirrorMaker 2 included."""

    # OffsetsCopySerializer's two alternatives are inferred as a pair: one more here.
    alternatives = ("from_channel", "from_consumer_group", "from_mirrormaker2")  # type: ignore[assignment]
    unknown_field = "Unknown field: give from_channel, from_consumer_group or from_mirrormaker2."
    exactly_one = "Give exactly one of from_channel, from_consumer_group and from_mirrormaker2."

    from_mirrormaker2 = MirrorMaker2Serializer(
        required=False,
        help_text=(
            "MirrorMaker 2's offsets topic: the channel resumes right after the last records "
            "MM2 copied (stop MM2 first)."
        ),
    )


class MirrorPartitionSerializer(serializers.Serializer):
    cluster = serializers.CharField(help_text="MM2's alias of the source cluster.")
    topic = serializers.CharField(help_text="The topic on the source cluster.")
    partition = serializers.IntegerField()


class MirrorOffsetValueSerializer(serializers.Serializer):
    offset = serializers.IntegerField(help_text="The LAST record MM2 copied (-1: none yet).")


class MirrorOffsetSerializer(serializers.Serializer):
    """One partition in MirrorMaker 2's KIP-875 form
    (``GET /connectors/MirrorSourceConnector/offsets``)."""

    partition = MirrorPartitionSerializer()
    offset = MirrorOffsetValueSerializer()


def mirror_form(alias: str, offsets: list[SourceOffset]) -> list[dict[str, Any]]:
    """``offsets`` (MM2's last copied offsets) in MM2's KIP-875 form."""
    items = [
        {
            "partition": {"cluster": alias, "topic": o.topic, "partition": o.partition},
            "offset": {"offset": o.offset},
        }
        for o in offsets
    ]
    return list(MirrorOffsetSerializer(items, many=True).data)


class _Where(serializers.Serializer):
    source_alias = serializers.CharField()
    bootstrap_servers = serializers.CharField()
    offsets_topic = serializers.CharField()


class MirrorPreviewSerializer(_Where):
    """MirrorMaker 2's offsets for the topics the channel reads, and the channel's own."""

    mirrormaker2 = MirrorOffsetSerializer(
        many=True, help_text="MM2's offsets (its form: the LAST record copied)."
    )
    takeover = SourceOffsetSerializer(
        many=True,
        help_text="What a take-over sets: the NEXT offset the channel reads (MM2's + 1).",
    )
    channel = SourceOffsetSerializer(
        many=True, help_text="The channel's offsets now (the NEXT offset it reads)."
    )


class HandBackSerializer(_Where):
    """What a hand-back wrote into MirrorMaker 2's offsets topic."""

    message = serializers.CharField()
    created_topic = serializers.BooleanField(
        help_text="True when the offsets topic did not exist and was created (compacted)."
    )
    offsets = MirrorOffsetSerializer(
        many=True,
        help_text="What was written, MM2's form: the LAST record copied (-1: none yet).",
    )


def _where(found: MirrorPreview | HandBack) -> dict[str, Any]:
    return {
        "source_alias": found.where.source_alias,
        "bootstrap_servers": found.where.bootstrap_servers,
        "offsets_topic": found.where.topic,
    }


def preview_data(found: MirrorPreview) -> dict[str, Any]:
    last = [SourceOffset(o.topic, o.partition, o.offset - 1) for o in found.mirrormaker2]
    return {
        **_where(found),
        "mirrormaker2": mirror_form(found.where.source_alias, last),
        "takeover": SourceOffsetSerializer(found.mirrormaker2, many=True).data,
        "channel": SourceOffsetSerializer(found.channel, many=True).data,
    }


def hand_back_data(found: HandBack) -> dict[str, Any]:
    return {
        **_where(found),
        "message": found.message,
        "created_topic": found.created_topic,
        "offsets": mirror_form(found.where.source_alias, found.offsets),
    }


PREVIEW_PARAMETERS = [
    OpenApiParameter("source_alias", OpenApiTypes.STR, required=True, description=ALIAS_HELP),
    OpenApiParameter("bootstrap_servers", OpenApiTypes.STR, description=SERVERS_HELP),
    OpenApiParameter("offsets_topic", OpenApiTypes.STR, description=TOPIC_HELP),
]
MIRROR_EXAMPLE = OpenApiExample(
    "Source alias a, defaults elsewhere", request_only=True, value={"source_alias": "a"}
)
TAKEOVER_EXAMPLE = OpenApiExample(
    "From MirrorMaker 2",
    request_only=True,
    value={"from_mirrormaker2": {"source_alias": "a"}},
)
