"""The requests and answers of a channel's operations: start, stop, pause and resume,
restart (Kafka Connect's KIP-745), deploy, and the preview of its live output."""

from __future__ import annotations

from typing import Any

from rest_framework import serializers

from console.choices import ConnectorState, TargetState


class TargetStateSerializer(serializers.Serializer):
    """The answer to start, stop, pause and resume: what was asked for (the change shows up
    in status)."""

    name = serializers.CharField()
    target_state = serializers.ChoiceField(choices=TargetState.choices)


class RestartQuerySerializer(serializers.Serializer):
    """Kafka Connect's KIP-745 restart parameters."""

    include_tasks = serializers.BooleanField(
        default=False, help_text="Restart the connector's tasks too (all, or the FAILED ones)."
    )
    only_failed = serializers.BooleanField(
        default=False,
        help_text="Restart only what is FAILED: with nothing FAILED, nothing restarts.",
    )


class RestartConnectorSerializer(serializers.Serializer):
    state = serializers.ChoiceField(choices=ConnectorState.choices, source="connector_state")
    worker_id = serializers.CharField(allow_null=True)


class RestartTaskSerializer(serializers.Serializer):
    id = serializers.IntegerField()
    state = serializers.ChoiceField(choices=ConnectorState.choices)
    worker_id = serializers.CharField(allow_null=True)


class DeployPlanSerializer(serializers.Serializer):
    """What deploying the saved revision does (``GET``: would do; ``POST``: did)."""

    name = serializers.CharField()
    running_revision = serializers.IntegerField(
        allow_null=True,
        help_text="The revision the channel runs (or last ran); null before a first start.",
    )
    saved_revision = serializers.IntegerField(
        help_text="The latest saved revision: what a deploy puts to work."
    )
    target_state = serializers.CharField()
    state = serializers.CharField(help_text="The connector's state as last recorded.")
    effect = serializers.ChoiceField(
        choices=["none", "start", "live", "restart"],
        help_text="none: the saved revision already runs; start: the channel starts with it; "
        "live: the running bus takes its rules without a restart; restart: the query starts "
        "again with it from its checkpoint (a FAILED channel too).",
    )
    summary = serializers.CharField(help_text="What the deploy does, in a sentence.")
    changed = serializers.ListField(
        child=serializers.CharField(),
        help_text="Fields that differ from the running revision (at most 20).",
    )


class RestartAnswerSerializer(serializers.Serializer):
    """What a restart request does, shaped like Kafka Connect's KIP-745 answer: the
    connector and its tasks, RESTARTING where they will restart, else as they are."""

    name = serializers.CharField()
    connector = RestartConnectorSerializer(source="*")
    tasks = RestartTaskSerializer(many=True)


class ChannelPreviewSerializer(serializers.Serializer):
    """The live tail of a channel's output."""

    name = serializers.CharField()
    events = serializers.ListField(child=serializers.DictField())


class PreviewLimitField(serializers.IntegerField):
    """A whole number written with digits only (``+5``, ``5.0`` and `` 5`` are refused)."""

    def to_internal_value(self, data: Any) -> int:
        if not str(data).isdigit():
            self.fail("invalid")
        return super().to_internal_value(data)


_PREVIEW_LIMIT = "Must be a whole number from 1 to 500."


class PreviewQuerySerializer(serializers.Serializer):
    limit = PreviewLimitField(
        min_value=1,
        max_value=500,
        default=50,
        help_text="How many events (1-500, default 50).",
        error_messages={key: _PREVIEW_LIMIT for key in ("invalid", "min_value", "max_value")},
    )
