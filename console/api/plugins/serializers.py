"""The plugin catalogue, config checks and event-pattern tests as the API shows them."""

from __future__ import annotations

from typing import Any

from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import extend_schema_field
from rest_framework import serializers

from console.api.fields import ObjectField
from console.choices import PluginKind
from console.selectors import specs
from console.selectors.specs import SECRET_MARKER, PatternError


class PluginSerializer(serializers.Serializer):
    """One plugin of the catalogue; ``(kind, type)`` identifies it."""

    type = serializers.CharField(help_text="The name a stage gives in its ``type``.")
    kind = serializers.ChoiceField(
        choices=PluginKind.choices, help_text="Where the stage may stand in a channel."
    )
    title = serializers.CharField()
    description = serializers.CharField()
    config_schema = ObjectField(
        source="json_schema",
        help_text=(
            "JSON Schema of the stage's config (drives the config form). Secret fields are "
            '"writeOnly": true with "format": "password".'
        ),
    )


class PluginKindErrorSerializer(serializers.Serializer):
    kind = serializers.ListField(
        child=serializers.CharField(), help_text="Why kind is needed, or why it is not a kind."
    )


class PluginConfigSerializer(serializers.Serializer):
    config = ObjectField(help_text="A stage config to check, as it would stand in a spec.")


class PluginConfigValidSerializer(serializers.Serializer):
    valid = serializers.BooleanField(help_text="true: the config is valid.")
    config = ObjectField(
        help_text=f"The config normalised (defaults filled in), secrets read as {SECRET_MARKER!r}."
    )


class PluginConfigInvalidSerializer(serializers.Serializer):
    valid = serializers.BooleanField(help_text="false: the config is not valid.")
    # The answer's "errors" shadows Serializer.errors: this serializer only documents the schema.
    errors = serializers.DictField(  # type: ignore[assignment]
        child=serializers.ListField(child=serializers.CharField()),
        help_text='Messages keyed by the path of the bad field ("config.topics").',
    )


@extend_schema_field(OpenApiTypes.OBJECT)
class PatternField(serializers.JSONField):
    """An event pattern (a JSON object), checked by :func:`pipelines.spec.patterns`."""


class EventPatternTestSerializer(serializers.Serializer):
    """A pattern and an event to test it on, like EventBridge's TestEventPattern."""

    pattern = PatternField(
        help_text=(
            "An EventBridge event pattern over the event in its CloudEvents JSON form "
            "(attributes at the top level, the payload under data)."
        )
    )
    event = ObjectField(help_text="The event, a JSON object, matched exactly as given.")

    def validate_pattern(self, value: Any) -> Any:
        try:
            specs.validate_pattern(value)
        except PatternError as exc:
            raise serializers.ValidationError(exc.messages) from exc
        return value


class EventPatternResultSerializer(serializers.Serializer):
    result = serializers.BooleanField(help_text="true when the event matches the pattern.")
