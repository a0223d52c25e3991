"""Offsets in Kafka Connect's KIP-875 shapes: what GET answers, and the PATCH and copy bodies.

The request serializers validate the bodies (the shape: types, unknown fields, exactly one of
the alternatives, a partition named twice); :mod:`console.services.offsets` checks what only
the channel knows (does it read that topic, is it STOPPED, does the origin exist). Errors are
keyed by the path of each bad field (``offsets[0].offset.offset``): :func:`validated`.
Kafka Connect's sink spelling (``kafka_topic``, ``kafka_partition``, ``kafka_offset``) is
accepted in a PATCH body too.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, cast

from django.http import QueryDict
from rest_framework import serializers
from rest_framework.exceptions import ValidationError
from rest_framework.settings import api_settings

from pipelines.spec.configs.kafka import epoch_millis
from runtime_adapter.base import SourceOffset

if TYPE_CHECKING:
    from django_stubs_ext import StrOrPromise

NOT_AN_OBJECT = "Must be a JSON object."
NON_EMPTY_LIST = "Must be a non-empty list."
NON_EMPTY_STRING = "Must be a non-empty string."
NOT_A_TIME = "Must be epoch milliseconds or RFC 3339 text."
ITEM = "Must be an object with partition and offset."
# Doubled braces: DRF formats error messages (str.format) before it answers them.
PARTITION = 'Required: an object {{"topic": ..., "partition": ...}}.'
OFFSET = 'Required: an object {{"offset": ...}}.'
TOPIC = "Required: a topic name."
PARTITION_NUMBER = "Required: a partition number (0 or more)."
NEXT_OFFSET = "Required: the next offset to read (0 or more); DELETE resets to starting_offsets."


def messages(message: str, *keys: str) -> dict[str, StrOrPromise]:
    """``error_messages`` that say ``message`` whatever went wrong."""
    return dict.fromkeys(("required", "null", "invalid", *keys), message)


def field_paths(errors: Any, prefix: str = "") -> dict[str, list[str]]:
    """A serializer's nested errors keyed by the path of each bad field:
    ``{"offsets": [{}, {"partition": {"topic": [m]}}]}`` → ``{"offsets[1].partition.topic": [m]}``.
    An error about an object as a whole (``non_field_errors``) is keyed by the object's path."""
    flat: dict[str, list[str]] = {}

    def add(path: str, found: dict[str, list[str]]) -> None:
        for key, values in found.items():
            flat.setdefault(key, []).extend(values)

    if isinstance(errors, Mapping):
        for key, value in errors.items():
            if isinstance(key, int):  # a list's items: ListSerializer keys them by index
                path = f"{prefix}[{key}]"
            elif key == api_settings.NON_FIELD_ERRORS_KEY:
                path = prefix or key
            else:
                path = f"{prefix}.{key}" if prefix else str(key)
            add(path, field_paths(value, path))
    elif isinstance(errors, list) and any(isinstance(item, (Mapping, list)) for item in errors):
        for index, item in enumerate(errors):
            if item:
                add(prefix, field_paths(item, f"{prefix}[{index}]"))
    else:
        items = errors if isinstance(errors, list) else [errors]
        flat[prefix or api_settings.NON_FIELD_ERRORS_KEY] = [str(item) for item in items]
    return flat


def validated(serializer_class: type[serializers.Serializer], data: Any) -> dict[str, Any]:
    """``data`` validated by ``serializer_class``; else a 400 keyed by field paths."""
    serializer = serializer_class(data=data)
    if not serializer.is_valid():
        raise ValidationError(field_paths(serializer.errors))
    return dict(serializer.validated_data)


def _with_alias(data: Any, name: str, alias: str) -> Any:
    """``data`` with Kafka Connect's sink spelling ``alias`` read as ``name``."""
    if isinstance(data, Mapping) and name not in data and alias in data:
        return {**data, name: data[alias]}
    return data


class CountField(serializers.IntegerField):
    """A JSON integer, 0 or more (not a string of digits, not a float, not a boolean)."""

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(min_value=0, **kwargs)

    def to_internal_value(self, data: Any) -> int:
        if isinstance(data, bool) or not isinstance(data, int):
            self.fail("invalid")
        return super().to_internal_value(data)


class StrictCharField(serializers.CharField):
    """A JSON string with something else than spaces in it, kept as it is."""

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(trim_whitespace=False, **kwargs)

    def run_validation(self, data: Any = serializers.empty) -> Any:
        # CharField answers "" before to_internal_value runs: this field's message instead.
        return serializers.Field.run_validation(self, data)

    def to_internal_value(self, data: Any) -> str:
        if not isinstance(data, str) or not data.strip():
            self.fail("invalid")
        return data


class OffsetPartitionSerializer(serializers.Serializer):
    """A source partition: a Kafka topic-partition."""

    topic = StrictCharField(error_messages=messages(TOPIC, "blank"))
    partition = CountField(error_messages=messages(PARTITION_NUMBER, "min_value"))

    def to_internal_value(self, data: Any) -> Any:
        data = _with_alias(
            _with_alias(data, "topic", "kafka_topic"), "partition", "kafka_partition"
        )
        return super().to_internal_value(data)


class OffsetValueSerializer(serializers.Serializer):
    offset = CountField(
        help_text="The NEXT offset the channel reads from this partition.",
        error_messages=messages(NEXT_OFFSET, "min_value"),
    )

    def to_internal_value(self, data: Any) -> Any:
        return super().to_internal_value(_with_alias(data, "offset", "kafka_offset"))


class SourceOffsetListSerializer(serializers.ListSerializer):
    default_error_messages = {
        "not_a_list": NON_EMPTY_LIST,
        "empty": NON_EMPTY_LIST,
        "null": NON_EMPTY_LIST,
    }

    def to_internal_value(self, data: Any) -> list[SourceOffset]:
        offsets = super().to_internal_value(data)
        seen: set[tuple[str, int]] = set()
        errors: list[dict[str, Any]] = []
        for offset in offsets:
            key = (offset.topic, offset.partition)
            named_twice = key in seen
            seen.add(key)
            errors.append(
                {"partition": [f"Partition {key[0]}/{key[1]} is named twice."]}
                if named_twice
                else {}
            )
        if any(errors):
            raise ValidationError(errors)
        return offsets


class SourceOffsetSerializer(serializers.Serializer):
    """One source partition and where the channel resumes reading it."""

    default_error_messages = {"invalid": ITEM, "null": ITEM}

    partition = OffsetPartitionSerializer(source="*", error_messages=messages(PARTITION))
    offset = OffsetValueSerializer(source="*", error_messages=messages(OFFSET))

    class Meta:
        list_serializer_class = SourceOffsetListSerializer

    def to_internal_value(self, data: Any) -> SourceOffset:
        unknown = sorted(set(data) - {"partition", "offset"}) if isinstance(data, Mapping) else []
        errors: dict[str, Any] = {key: ["Unknown field."] for key in unknown}
        try:
            attrs = super().to_internal_value(data)
        except ValidationError as exc:
            if not isinstance(exc.detail, Mapping):
                raise
            raise ValidationError({**exc.detail, **errors}) from None
        if errors:
            raise ValidationError(errors)
        return SourceOffset(attrs["topic"], attrs["partition"], attrs["offset"])


class ChannelOffsetsSerializer(serializers.Serializer):
    """A channel's offsets, shaped like Kafka Connect's ``GET /connectors/{name}/offsets``."""

    offsets = SourceOffsetSerializer(many=True)
    note = serializers.CharField(
        allow_blank=True,
        help_text=(
            "Empty, or what to know about these offsets: a change waiting for the next start, "
            "no committed batch yet, or a source without offsets."
        ),
    )


class TimestampField(serializers.CharField):
    """Epoch milliseconds (a JSON number) or RFC 3339 text, read as epoch milliseconds."""

    def run_validation(self, data: Any = serializers.empty) -> Any:
        return serializers.Field.run_validation(self, data)

    # A CharField's input read as epoch milliseconds: an int, where a CharField's is a str.
    def to_internal_value(self, data: Any) -> int:  # type: ignore[override]
        if isinstance(data, bool) or not isinstance(data, (int, str)):
            self.fail("invalid")
        try:
            return epoch_millis(data)
        except ValueError as exc:
            raise ValidationError(str(exc)) from None


class OneOfSerializer(serializers.Serializer):
    """A body that is a JSON object with exactly one of ``alternatives`` and no other key."""

    alternatives: tuple[str, ...] = ()
    unknown_field = ""
    exactly_one = ""
    #: True: a body of the wrong shape is answered with its shape errors alone (its fields are
    #: not read); False: with its fields' errors too.
    shape_errors_alone = True

    def run_validation(self, data: Any = serializers.empty) -> Any:
        if not isinstance(data, Mapping):
            raise ValidationError({api_settings.NON_FIELD_ERRORS_KEY: [NOT_AN_OBJECT]})
        if isinstance(data, QueryDict):  # a form: each field's last value, as JSON would give one
            data = data.dict()
        return super().run_validation(data)

    def shape_errors(self, data: Mapping[str, Any]) -> dict[str, list[str]]:
        errors = {key: [self.unknown_field] for key in sorted(set(data) - set(self.alternatives))}
        if sum(key in data for key in self.alternatives) != 1:
            errors[api_settings.NON_FIELD_ERRORS_KEY] = [self.exactly_one]
        return errors

    def to_internal_value(self, data: Any) -> dict[str, Any]:
        errors = self.shape_errors(data)
        if errors and self.shape_errors_alone:
            raise ValidationError(errors)
        try:
            values = super().to_internal_value(data)
        except ValidationError as exc:
            # A serializer's field errors: always a dict.
            raise ValidationError({**cast(dict[str, Any], exc.detail), **errors}) from None
        if errors:
            raise ValidationError(errors)
        return values


class OffsetsAlterSerializer(OneOfSerializer):
    """PATCH body: explicit offsets or a timestamp, not both."""

    alternatives = ("offsets", "timestamp")
    unknown_field = "Unknown field: give offsets or timestamp."
    exactly_one = "Give exactly one of offsets (a list) and timestamp (epoch ms or RFC 3339)."

    offsets = SourceOffsetSerializer(
        many=True,
        required=False,
        allow_empty=False,
        help_text="The partitions to move; partitions left out keep their position.",
    )
    timestamp = TimestampField(
        source="timestamp_ms",
        required=False,
        error_messages=messages(NOT_A_TIME),
        help_text=(
            "Epoch milliseconds (a number) or RFC 3339 text: every partition moves to its "
            "first record at or after it (its end when there is none)."
        ),
    )


class OffsetsCopySerializer(OneOfSerializer):
    """POST body of offsets/copy: exactly one origin."""

    alternatives = ("from_channel", "from_consumer_group")
    unknown_field = "Unknown field: give from_channel or from_consumer_group."
    exactly_one = "Give exactly one of from_channel and from_consumer_group."
    shape_errors_alone = False

    from_channel = StrictCharField(
        required=False,
        error_messages=messages(NON_EMPTY_STRING, "blank"),
        help_text="Another channel, whose offsets (as GET shows them) are copied.",
    )
    from_consumer_group = StrictCharField(
        required=False,
        error_messages=messages(NON_EMPTY_STRING, "blank"),
        help_text=(
            "A consumer group on the source's brokers (e.g. a Kafka Connect sink's "
            "connect-<name>, or one MirrorMaker 2 checkpoints), whose committed offsets are "
            "copied."
        ),
    )


class OffsetsMessageSerializer(serializers.Serializer):
    """Kafka Connect's answer to an offsets change."""

    message = serializers.CharField()
