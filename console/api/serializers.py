"""API representations. Writes go through :mod:`console.services`, never ``save()``."""

from __future__ import annotations

from typing import Any

from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import extend_schema_field
from rest_framework import serializers

from console.api.exceptions import spec_error_paths
from console.choices import ConnectorState, PluginKind, SubjectType, TargetState, WorkerState
from console.models import Channel, LifecycleEvent, Task, Worker
from console.services import InvalidSpec, specs
from console.services.specs import SECRET_MARKER, PatternError


@extend_schema_field(OpenApiTypes.OBJECT)
class ObjectField(serializers.JSONField):
    """Any JSON object (a JSON array, string, number or null is refused)."""

    default_error_messages = {"not_an_object": "Must be a JSON object."}

    def to_internal_value(self, data: Any) -> Any:
        data = super().to_internal_value(data)
        if not isinstance(data, dict):
            self.fail("not_an_object")
        return data


@extend_schema_field(OpenApiTypes.OBJECT)
class SpecField(serializers.JSONField):
    """A channel spec: reads the latest revision's, validates what is written.

    Secrets never leave: each one reads as the marker, and a marker (or a secret left out)
    written back keeps the stored secret. Validation errors are raised keyed by their path
    inside the spec; the channel serializer prefixes them with ``spec.``.
    """

    def get_attribute(self, instance: Channel) -> Any:
        if hasattr(instance, "latest_spec"):  # annotated by Channel.objects.with_summary()
            return instance.latest_spec
        revision = instance.latest_revision_obj()
        return revision.spec if revision else None

    def to_representation(self, value: Any) -> Any:
        return specs.redact_spec(super().to_representation(value))

    def to_internal_value(self, data: Any) -> Any:
        data = super().to_internal_value(data)
        instance = getattr(self.parent, "instance", None)
        stored = self.get_attribute(instance) if isinstance(instance, Channel) else None
        try:
            specs.normalize_spec(data, stored=stored)
        except InvalidSpec as exc:
            raise serializers.ValidationError(exc.errors) from exc
        return data


class ChannelSerializer(serializers.ModelSerializer):
    spec = SpecField(
        help_text=(
            "The channel spec: source, transforms[], sink (see the plugin catalogue). Secrets "
            f"(config fields marked writeOnly) read as {SECRET_MARKER!r}; send that marker "
            "back, or leave the field out, to keep the stored secret."
        )
    )
    target_state = serializers.ChoiceField(choices=TargetState.choices, read_only=True)
    state = serializers.ChoiceField(
        choices=ConnectorState.choices,
        read_only=True,
        help_text="Observed state of the channel's connector (STOPPED when never started).",
    )
    revision = serializers.IntegerField(
        source="latest_revision",
        read_only=True,
        allow_null=True,
        help_text="Number of the latest saved revision.",
    )
    deployed_revision = serializers.IntegerField(
        source="connector.revision.number",
        read_only=True,
        allow_null=True,
        help_text="Number of the revision the connector runs (null when never started).",
    )
    created_by = serializers.CharField(
        source="created_by.username", read_only=True, allow_null=True
    )

    class Meta:
        model = Channel
        fields = [
            "name",
            "description",
            "spec",
            "target_state",
            "state",
            "revision",
            "deployed_revision",
            "created",
            "updated",
            "created_by",
        ]
        read_only_fields = ["created", "updated"]

    def validate_name(self, value: str) -> str:
        if self.instance is not None and value != self.instance.name:
            raise serializers.ValidationError("A channel cannot be renamed.")
        return value

    def to_internal_value(self, data: Any) -> dict[str, Any]:
        try:
            return super().to_internal_value(data)
        except serializers.ValidationError as exc:
            detail = dict(exc.detail) if isinstance(exc.detail, dict) else exc.detail
            if isinstance(detail, dict) and isinstance(detail.get("spec"), dict):
                detail.update(spec_error_paths(detail.pop("spec")))
            raise serializers.ValidationError(detail) from exc


class TargetStateSerializer(serializers.Serializer):
    """The answer to start and stop: what was asked for (the change shows up in status)."""

    name = serializers.CharField()
    target_state = serializers.ChoiceField(choices=TargetState.choices)


class TaskSerializer(serializers.ModelSerializer):
    id = serializers.IntegerField(source="task_id")

    class Meta:
        model = Task
        fields = [
            "id",
            "state",
            "worker_id",
            "topic",
            "partition",
            "offset",
            "end_offset",
            "lag",
            "rows_per_second",
            "updated",
        ]


class ChannelStatusSerializer(serializers.ModelSerializer):
    """The channel's connector and tasks as reconcile last recorded them."""

    state = serializers.ChoiceField(choices=ConnectorState.choices, read_only=True)
    worker_id = serializers.CharField(source="connector.worker_id", allow_null=True)
    trace = serializers.CharField(source="connector.trace", allow_null=True)
    revision = serializers.IntegerField(
        source="connector.revision.number",
        allow_null=True,
        help_text="Number of the deployed revision (null when never started).",
    )
    generation = serializers.IntegerField(source="connector.generation", allow_null=True)
    state_changed_at = serializers.DateTimeField(
        source="connector.state_changed_at", allow_null=True
    )
    last_status_at = serializers.DateTimeField(source="connector.last_status_at", allow_null=True)
    tasks = serializers.SerializerMethodField()

    class Meta:
        model = Channel
        fields = [
            "name",
            "state",
            "target_state",
            "worker_id",
            "trace",
            "revision",
            "generation",
            "state_changed_at",
            "last_status_at",
            "tasks",
        ]
        read_only_fields = fields

    @extend_schema_field(TaskSerializer(many=True))
    def get_tasks(self, channel: Channel) -> list[dict[str, Any]]:
        connector = getattr(channel, "connector", None)
        if connector is None:
            return []
        return TaskSerializer(connector.tasks.order_by("task_id"), many=True).data


class WorkerSerializer(serializers.ModelSerializer):
    state = serializers.ChoiceField(choices=WorkerState.choices)
    connectors = serializers.SerializerMethodField(
        help_text="Ids (channel names) of the connectors assigned to this worker."
    )

    class Meta:
        model = Worker
        fields = ["worker_id", "host", "pid", "state", "started_at", "last_heartbeat", "connectors"]
        read_only_fields = fields

    def get_connectors(self, worker: Worker) -> list[str]:
        return sorted(connector.runtime_id for connector in worker.connectors.all())


class LifecycleEventSerializer(serializers.ModelSerializer):
    subject_type = serializers.ChoiceField(choices=SubjectType.choices)

    class Meta:
        model = LifecycleEvent
        fields = [
            "id",
            "created_at",
            "subject_type",
            "subject_id",
            "from_state",
            "to_state",
            "actor",
            "reason",
        ]
        read_only_fields = fields


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


class PluginKindQuerySerializer(serializers.Serializer):
    kind = serializers.ChoiceField(
        choices=PluginKind.choices, required=False, help_text="Only plugins of this kind."
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
    errors = serializers.DictField(
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


class ChannelPreviewSerializer(serializers.Serializer):
    """The live tail of a channel's output."""

    name = serializers.CharField()
    events = serializers.ListField(child=serializers.DictField())
