"""The plugin catalogue, config checks and event-pattern tests as the API shows them."""

from __future__ import annotations

from typing import Any

from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import extend_schema_field
from rest_framework import serializers

from console.api.exceptions import flatten_errors
from console.api.fields import ObjectField
from console.choices import PluginKind
from console.selectors import specs
from console.selectors.specs import (
    FILTER,
    MAX_RULES,
    MAX_TRANSFORMS,
    RULE_FIELDS,
    RULE_NAME,
    SECRET_MARKER,
    PatternError,
    Verdict,
)


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


class TransformToTestSerializer(serializers.Serializer):
    """One of a rule's own transforms as the rules test reads it: its type, and a filter's
    pattern (checked as the spec checks it). Other types' configs are not read: the test
    does not run them (``pipelines.spec.routing``)."""

    type = serializers.CharField(max_length=64, help_text="The stage's plugin type.")
    config = ObjectField(required=False, default=dict, help_text="The stage's config.")

    def validate(self, attrs: dict[str, Any]) -> dict[str, Any]:
        if attrs["type"] == FILTER:
            pattern = attrs["config"].get("pattern", {})
            try:
                specs.validate_pattern(pattern)
            except PatternError as exc:
                raise serializers.ValidationError({"config": {"pattern": exc.messages}}) from exc
        return attrs


class RuleToTestSerializer(serializers.Serializer):
    """One rule of a bus as the rules test reads it: its name, pattern, whether it is
    enabled, and its own transforms (filters are evaluated, any other type makes the answer
    "not decided"). Its description and sinks may be sent as they stand in the spec and are
    not read; any other field is an error."""

    name = serializers.RegexField(
        RULE_NAME,
        max_length=63,
        trim_whitespace=False,
        help_text="The rule's name, unique among the rules sent (lowercase letters, digits, -).",
        error_messages={
            "invalid": "Use 1-63 lowercase letters, digits and dashes, starting and ending "
            "with a letter or a digit."
        },
    )
    pattern = PatternField(
        default=None,
        allow_null=True,
        help_text="The rule's event pattern; null or left out: every event matches.",
    )
    enabled = serializers.BooleanField(
        default=True, help_text="A disabled rule matches nothing (as in a running bus)."
    )
    # DRF takes max_length with many=True (a ListSerializer's); the stubs do not.
    transforms = TransformToTestSerializer(  # type: ignore[call-arg]
        many=True,
        required=False,
        default=list,
        max_length=MAX_TRANSFORMS,
        help_text="The rule's own transforms, in order, as in the spec.",
    )

    def to_internal_value(self, data: Any) -> Any:
        if isinstance(data, dict):
            unknown = [key for key in data if key not in RULE_FIELDS]
            if unknown:
                expected = ", ".join(RULE_FIELDS)
                raise serializers.ValidationError(
                    {key: [f"Unknown field; expected one of: {expected}."] for key in unknown}
                )
        return super().to_internal_value(data)

    def validate_pattern(self, value: Any) -> Any:
        if value is None:
            return value
        try:
            specs.validate_pattern(value)
        except PatternError as exc:
            raise serializers.ValidationError(exc.messages) from exc
        return value


class RulesTestSerializer(serializers.Serializer):
    """A bus's rules and an event: which rules does the event match?"""

    # DRF takes min_length and max_length with many=True (a ListSerializer's); the stubs do not.
    rules = RuleToTestSerializer(  # type: ignore[call-arg]
        many=True,
        min_length=1,
        max_length=MAX_RULES,
        help_text=f"The rules, in the bus's order (1 to {MAX_RULES}).",
    )
    event = ObjectField(
        help_text="The event, a JSON object in its CloudEvents JSON form (after the channel's "
        "shared transforms), matched exactly as given."
    )

    def to_internal_value(self, data: Any) -> Any:
        try:
            return super().to_internal_value(data)
        except serializers.ValidationError as exc:
            # Located like spec errors: rules[1].pattern, not {"rules": [{}, {"pattern": …}]}.
            raise serializers.ValidationError(flatten_errors(exc.detail)) from exc

    def validate(self, attrs: dict[str, Any]) -> dict[str, Any]:
        first: dict[str, int] = {}
        errors: dict[str, list[str]] = {}
        for index, rule in enumerate(attrs["rules"]):
            name = rule["name"]
            if name in first:
                errors[f"rules[{index}].name"] = [
                    f"rules[{first[name]}] is named {name!r} too; rule names are unique in a bus."
                ]
            first.setdefault(name, index)
        if errors:
            raise serializers.ValidationError(errors)
        return attrs


class RuleResultSerializer(serializers.Serializer):
    rule = serializers.CharField(help_text="The rule's name.")
    matched = serializers.BooleanField(
        allow_null=True,
        help_text="true when the event reaches the rule's sinks (the rule is enabled, the "
        "event matches its pattern and its own filters keep it); false when it does not; "
        "null when a transform only Spark runs stands before the sinks (not decided here).",
    )
    verdict = serializers.ChoiceField(
        choices=[v.value for v in Verdict],
        help_text="matched; no_match (the pattern does not match); disabled; dropped (one of "
        "the rule's own filters drops the event); undecided (see stage and reason).",
    )
    pattern_matched = serializers.BooleanField(
        help_text="true when the rule is enabled and the event matches its pattern."
    )
    stage = serializers.CharField(
        allow_blank=True,
        help_text="The rule's transform that decided (dropped) or could not be decided "
        "(undecided), as transforms[i]; empty otherwise.",
    )
    reason = serializers.CharField(allow_blank=True, help_text="Why, in words.")


class RulesTestResultSerializer(serializers.Serializer):
    results = RuleResultSerializer(
        many=True, help_text="One result per rule, in the order the rules were sent."
    )
