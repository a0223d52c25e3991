"""API representations. Writes go through :mod:`console.services`, never ``save()``."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import extend_schema_field
from rest_framework import serializers

from console.api.exceptions import spec_error_paths
from console.choices import (
    ConnectorState,
    PluginKind,
    RestartPolicyType,
    SubjectType,
    TargetState,
    WorkerState,
)
from console.models import AuditEvent, Channel, LifecycleEvent, Revision, Task, Worker
from console.services import InvalidSpec, specs
from console.services.restart_policy import RestartPolicy
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


def latest_revision_number(channel: Channel) -> int | None:
    """The latest revision's number: annotated by ``with_summary()``, else one query."""
    if hasattr(channel, "latest_revision"):
        return channel.latest_revision
    revision = channel.latest_revision_obj()
    return revision.number if revision else None


def has_drift(channel: Channel) -> bool:
    """Whether the connector's deployed revision is not the latest saved one."""
    connector = getattr(channel, "connector", None)
    if connector is None or connector.revision is None:
        return False
    return connector.revision.number != latest_revision_number(channel)


_DEFAULT_POLICY = RestartPolicy()


class RestartPolicySerializer(serializers.Serializer):
    """A channel's restart policy; see :mod:`console.services.restart_policy`."""

    type = serializers.ChoiceField(
        choices=RestartPolicyType.choices,
        default=_DEFAULT_POLICY.type,
        help_text=(
            "never: a FAILED connector stays FAILED until restarted; on-failure: the control "
            "loop restarts it with exponential backoff, at most max_attempts times in a row."
        ),
    )
    max_attempts = serializers.IntegerField(
        min_value=1,
        max_value=1000,
        default=_DEFAULT_POLICY.max_attempts,
        help_text=(
            "Automatic restarts in a row before giving up. The count resets once the connector "
            "has been RUNNING for SLUICE_RESTART_RESET_SECONDS (600 s), or when a user starts, "
            "stops or restarts the channel."
        ),
    )
    backoff_initial_seconds = serializers.FloatField(
        min_value=0.1,
        max_value=3600,
        default=_DEFAULT_POLICY.backoff_initial_seconds,
        help_text="Wait from the failure to restart 1; attempt n waits initial * 2^(n-1).",
    )
    backoff_max_seconds = serializers.FloatField(
        min_value=0.1,
        max_value=86400,
        default=_DEFAULT_POLICY.backoff_max_seconds,
        help_text="The longest wait from a failure to its restart.",
    )

    def get_attribute(self, instance: Any) -> Any:
        return RestartPolicy.of(instance) if isinstance(instance, Channel) else None

    def validate(self, attrs: dict[str, Any]) -> dict[str, Any]:
        instance = getattr(self.parent, "instance", None)
        current = RestartPolicy.of(instance) if isinstance(instance, Channel) else _DEFAULT_POLICY
        merged = current.updated(attrs)
        if merged.backoff_max_seconds < merged.backoff_initial_seconds:
            raise serializers.ValidationError(
                {
                    "backoff_max_seconds": [
                        "Must be at least backoff_initial_seconds "
                        f"({merged.backoff_initial_seconds:g})."
                    ]
                }
            )
        return attrs


class IngestTokenStateSerializer(serializers.Serializer):
    """Whether a channel has an ingestion token, and its prefix; never the token."""

    exists = serializers.BooleanField(read_only=True)
    prefix = serializers.CharField(read_only=True, allow_null=True)


class IssuedIngestTokenSerializer(serializers.Serializer):
    """A token just issued: shown this once; the console keeps only its hash."""

    token = serializers.CharField(
        read_only=True, help_text="The token: send it as 'Authorization: Bearer <token>'."
    )
    prefix = serializers.CharField(read_only=True, help_text="Its first characters.")
    created = serializers.BooleanField(
        read_only=True, help_text="true: the channel had no token; false: the old one was replaced."
    )


def ingest_token_state(channel: Channel) -> dict[str, Any]:
    exists = bool(channel.ingest_token_hash)
    return {"exists": exists, "prefix": channel.ingest_token_prefix if exists else None}


@extend_schema_field(
    {
        "type": "object",
        "properties": {
            "exists": {"type": "boolean"},
            "prefix": {"type": "string", "nullable": True},
        },
        "required": ["exists", "prefix"],
        "readOnly": True,
    }
)
class IngestTokenField(serializers.Field):
    """``{exists, prefix}`` of the channel's ingestion token (read-only)."""

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(source="*", read_only=True, **kwargs)

    def to_representation(self, channel: Channel) -> dict[str, Any]:
        return ingest_token_state(channel)


class ChannelSerializer(serializers.ModelSerializer):
    spec = SpecField(
        help_text=(
            "The channel spec: source, transforms[], sink (see the plugin catalogue). Secrets "
            f"(config fields marked writeOnly) read as {SECRET_MARKER!r}; send that marker "
            "back, or leave the field out, to keep the stored secret."
        )
    )
    target_state = serializers.ChoiceField(
        choices=TargetState.choices,
        required=False,
        help_text=(
            "What the user asked for. May be given on create (default STOPPED; RUNNING or "
            "PAUSED also deploys revision 1); afterwards it changes only through start, stop, "
            "pause and resume."
        ),
    )
    state = serializers.ChoiceField(
        choices=ConnectorState.choices,
        read_only=True,
        help_text="Observed state of the channel's connector (STOPPED when never started).",
    )
    restart_policy = RestartPolicySerializer(
        required=False,
        help_text=(
            "What the control loop does when the connector fails. Left out on create: the "
            "defaults; on PATCH only the keys given change."
        ),
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
    drift = serializers.SerializerMethodField(
        help_text=(
            "true when the deployed revision is not the latest saved one: start the channel "
            "again to deploy the latest."
        )
    )
    created_by = serializers.CharField(
        source="created_by.username", read_only=True, allow_null=True
    )
    ingest_rate_limit = serializers.IntegerField(
        min_value=1,
        allow_null=True,
        required=False,
        help_text=(
            "Events per second POST …/events accepts for this channel (http source); null: "
            "the site default SLUICE_INGEST_RATE_LIMIT."
        ),
    )
    ingest_token = IngestTokenField(
        help_text=(
            "Whether the channel has an ingestion token for POST …/events (http source) and "
            "its prefix; issue one with POST …/ingest-token."
        )
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
            "drift",
            "restart_policy",
            "ingest_token",
            "ingest_rate_limit",
            "created",
            "updated",
            "created_by",
        ]
        read_only_fields = ["created", "updated"]

    def get_drift(self, channel: Channel) -> bool:
        return has_drift(channel)

    def validate_name(self, value: str) -> str:
        if self.instance is not None and value != self.instance.name:
            raise serializers.ValidationError("A channel cannot be renamed.")
        return value

    def validate_target_state(self, value: str) -> str:
        if self.instance is not None and value != self.instance.target_state:
            raise serializers.ValidationError(
                "Change the target with start, stop, pause or resume."
            )
        return value

    def to_internal_value(self, data: Any) -> dict[str, Any]:
        try:
            return super().to_internal_value(data)
        except serializers.ValidationError as exc:
            detail = dict(exc.detail) if isinstance(exc.detail, dict) else exc.detail
            if isinstance(detail, dict) and isinstance(detail.get("spec"), dict):
                detail.update(spec_error_paths(detail.pop("spec")))
            if isinstance(detail, dict) and isinstance(detail.get("restart_policy"), dict):
                nested = detail.pop("restart_policy")
                for key, messages in nested.items():
                    path = (
                        "restart_policy" if key == "non_field_errors" else f"restart_policy.{key}"
                    )
                    detail[path] = messages
            raise serializers.ValidationError(detail) from exc


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


class RestartAnswerSerializer(serializers.Serializer):
    """What a restart request does, shaped like Kafka Connect's KIP-745 answer: the
    connector and its tasks, RESTARTING where they will restart, else as they are."""

    name = serializers.CharField()
    connector = RestartConnectorSerializer(source="*")
    tasks = RestartTaskSerializer(many=True)


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


class StageCountsSerializer(serializers.Serializer):
    """One stage's event counts since the channel's driver started (0 again after a restart).

    ``in`` is the events the stage received (for the source, every record read; failed
    events are not passed to later stages' counts), ``out`` the events it passed on,
    ``failed`` those it failed (dead letters under errors.tolerance 'all');
    ``in - out - failed`` is what it dropped (a filter)."""

    stage = serializers.ChoiceField(choices=["source", "transform", "sink"])
    index = serializers.IntegerField(
        allow_null=True, help_text="The transform's place in the channel (null otherwise)."
    )
    type = serializers.CharField(help_text="The stage's plugin type.")
    # "in" is a Python keyword: declared through the class namespace, in field order.
    locals()["in"] = serializers.IntegerField(help_text="Events the stage received.")
    out = serializers.IntegerField(help_text="Events the stage passed on.")
    failed = serializers.IntegerField(help_text="Events the stage failed.")
    in_per_second = serializers.FloatField(
        required=False, help_text="Events in per second over the latest micro-batch."
    )
    out_per_second = serializers.FloatField(
        required=False, help_text="Events out per second over the latest micro-batch."
    )


class ChannelStatusSerializer(serializers.ModelSerializer):
    """The channel's connector and tasks as reconcile last recorded them."""

    state = serializers.ChoiceField(choices=ConnectorState.choices, read_only=True)
    worker_id = serializers.CharField(source="connector.worker_id", allow_null=True)
    driver_id = serializers.SerializerMethodField(
        help_text=(
            "The Spark driver running the channel's query, as the runtime last reported "
            "(a shared driver hosts many channels; see GET /cluster/); null when none."
        )
    )
    reason = serializers.SerializerMethodField(
        help_text=(
            "Why the channel is in its state when the state alone does not say, as the "
            "runtime last reported (e.g. a source topic waited for while UNASSIGNED, or "
            "'available-now run finished: …' once STOPPED); empty otherwise."
        )
    )
    trace = serializers.CharField(source="connector.trace", allow_null=True)
    revision = serializers.IntegerField(
        source="connector.revision.number",
        allow_null=True,
        help_text="Number of the deployed revision (null when never started).",
    )
    latest_revision = serializers.SerializerMethodField(
        help_text="Number of the latest saved revision."
    )
    drift = serializers.SerializerMethodField(
        help_text="true when the deployed revision is not the latest saved one."
    )
    generation = serializers.IntegerField(source="connector.generation", allow_null=True)
    restart_attempts = serializers.IntegerField(
        source="connector.restart_attempts",
        allow_null=True,
        help_text="Automatic restarts in a row so far (the restart policy's count).",
    )
    state_changed_at = serializers.DateTimeField(
        source="connector.state_changed_at", allow_null=True
    )
    last_status_at = serializers.DateTimeField(source="connector.last_status_at", allow_null=True)
    dead_letters = serializers.IntegerField(
        source="connector.dead_letters",
        allow_null=True,
        help_text=(
            "Events that failed a stage under errors.tolerance 'all' and went to the "
            "dead-letter target (or were skipped), since the channel was first started."
        ),
    )
    tasks = serializers.SerializerMethodField()
    stages = serializers.SerializerMethodField(
        help_text=(
            "Per-stage event counts (source, transforms in order, sink) since the channel's "
            "driver started; empty until a micro-batch ran. They restart from 0 with the driver."
        )
    )

    class Meta:
        model = Channel
        fields = [
            "name",
            "state",
            "target_state",
            "worker_id",
            "driver_id",
            "reason",
            "trace",
            "revision",
            "latest_revision",
            "drift",
            "generation",
            "restart_attempts",
            "state_changed_at",
            "last_status_at",
            "dead_letters",
            "tasks",
            "stages",
        ]
        read_only_fields = fields

    def get_latest_revision(self, channel: Channel) -> int | None:
        return latest_revision_number(channel)

    @extend_schema_field(serializers.CharField(allow_null=True))
    def get_driver_id(self, channel: Channel) -> str | None:
        connector = getattr(channel, "connector", None)
        return (connector.driver_id or None) if connector is not None else None

    @extend_schema_field(serializers.CharField())
    def get_reason(self, channel: Channel) -> str:
        connector = getattr(channel, "connector", None)
        return connector.status_reason if connector is not None else ""

    def get_drift(self, channel: Channel) -> bool:
        return has_drift(channel)

    @extend_schema_field(TaskSerializer(many=True))
    def get_tasks(self, channel: Channel) -> list[dict[str, Any]]:
        connector = getattr(channel, "connector", None)
        if connector is None:
            return []
        tasks = sorted(connector.tasks.all(), key=lambda task: task.task_id)  # prefetch-friendly
        return TaskSerializer(tasks, many=True).data

    @extend_schema_field(StageCountsSerializer(many=True))
    def get_stages(self, channel: Channel) -> list[dict[str, Any]]:
        connector = getattr(channel, "connector", None)
        if connector is None:
            return []
        return StageCountsSerializer(connector.stage_metrics or [], many=True).data


class ChannelWithStatusSerializer(ChannelSerializer):
    """A channel with its runtime status (``GET /channels/?expand=status``)."""

    status = ChannelStatusSerializer(source="*", read_only=True)

    class Meta(ChannelSerializer.Meta):
        fields = [*ChannelSerializer.Meta.fields, "status"]


class ChannelListItemSerializer(ChannelWithStatusSerializer):
    """The documented shape of a ``GET /channels/`` item: ``status`` only with ``?expand=status``.

    For the schema only (the view answers with one of the two above). Not read-only, so
    that drf-spectacular does not mark ``status`` required in the response.
    """

    status = ChannelStatusSerializer(
        source="*", required=False, help_text="Only with `expand=status`."
    )


class ErrorDetailSerializer(serializers.Serializer):
    """The body of a 401, 403, 404, 409 or 503: DRF's ``{"detail": "<reason>"}``."""

    detail = serializers.CharField(help_text="Why the request was not served.")


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


class RevisionSerializer(serializers.ModelSerializer):
    """One saved version of a channel's spec; its secrets read as the marker."""

    spec = serializers.SerializerMethodField(
        help_text=(
            "The spec as saved in this revision, redacted like the channel's own spec: "
            f"secrets read as {SECRET_MARKER!r}."
        )
    )
    created_by = serializers.CharField(
        source="created_by.username",
        read_only=True,
        allow_null=True,
        help_text="Who saved it (null when unknown or the user was deleted).",
    )

    class Meta:
        model = Revision
        fields = ["number", "created_at", "created_by", "spec"]
        read_only_fields = fields

    @extend_schema_field(OpenApiTypes.OBJECT)
    def get_spec(self, revision: Revision) -> Any:
        return specs.redact_spec(revision.spec)


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


class AuditEventSerializer(serializers.ModelSerializer):
    """One audited change or operation: who, what, when, from where, and the outcome."""

    user = serializers.IntegerField(
        source="user_id",
        read_only=True,
        allow_null=True,
        help_text="The user's id; null for anonymous requests or a deleted user.",
    )
    changes = serializers.JSONField(
        read_only=True,
        help_text=(
            "The request body as recorded: channel specs with their secrets as "
            f'{SECRET_MARKER!r}, password and token fields as "[redacted]"; a large body '
            "only as {truncated, bytes, keys}."
        ),
    )

    class Meta:
        model = AuditEvent
        fields = [
            "id",
            "created_at",
            "actor",
            "user",
            "action",
            "object_type",
            "object_id",
            "changes",
            "outcome",
            "remote_addr",
            "user_agent",
            "via",
        ]
        read_only_fields = fields


class AuditQuerySerializer(serializers.Serializer):
    """Filters of the audit list; each is optional."""

    actor = serializers.CharField(required=False, help_text='Username, or "anonymous".')
    action = serializers.CharField(
        required=False,
        help_text="An action (channel.start); ending in '.' or '*', every action it starts.",
    )
    object_type = serializers.CharField(required=False, help_text="channel, user, …")
    object_id = serializers.CharField(required=False, help_text="A channel name, …")
    since = serializers.DateTimeField(
        required=False, help_text="ISO 8601; only events at or after this time."
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


# -- offsets (Kafka Connect's KIP-875 shapes) ----------------------------------------------------


class OffsetPartitionSerializer(serializers.Serializer):
    """A source partition: a Kafka topic-partition."""

    topic = serializers.CharField()
    partition = serializers.IntegerField(min_value=0)


class OffsetValueSerializer(serializers.Serializer):
    offset = serializers.IntegerField(
        min_value=0, help_text="The NEXT offset the channel reads from this partition."
    )


class SourceOffsetSerializer(serializers.Serializer):
    """One source partition and where the channel resumes reading it."""

    partition = OffsetPartitionSerializer(source="*")
    offset = OffsetValueSerializer(source="*")


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


class OffsetsAlterSerializer(serializers.Serializer):
    """PATCH body: explicit offsets or a timestamp, not both (described here; the service
    validates it and names each bad field by its path, e.g. ``offsets[0].offset.offset``)."""

    offsets = SourceOffsetSerializer(
        many=True,
        required=False,
        help_text="The partitions to move; partitions left out keep their position.",
    )
    timestamp = serializers.CharField(
        required=False,
        help_text=(
            "Epoch milliseconds (a number) or RFC 3339 text: every partition moves to its "
            "first record at or after it (its end when there is none)."
        ),
    )


class OffsetsCopySerializer(serializers.Serializer):
    """POST body of offsets/copy: exactly one origin."""

    from_channel = serializers.CharField(
        required=False, help_text="Another channel, whose offsets (as GET shows them) are copied."
    )
    from_consumer_group = serializers.CharField(
        required=False,
        help_text=(
            "A consumer group on the source's brokers (e.g. a Kafka Connect sink's "
            "connect-<name>, or one MirrorMaker 2 checkpoints), whose committed offsets are "
            "copied."
        ),
    )


class OffsetsMessageSerializer(serializers.Serializer):
    """Kafka Connect's answer to an offsets change."""

    message = serializers.CharField()


# -- the cluster view ------------------------------------------------------------------------


class EpochDateTimeField(serializers.DateTimeField):
    """A Unix time in seconds (what runtimes report), shown as an ISO 8601 date-time."""

    def to_representation(self, value: Any) -> Any:
        if value is None:
            return None
        return super().to_representation(datetime.fromtimestamp(value, tz=UTC))


class ClusterDriverSerializer(serializers.Serializer):
    """A long-lived Spark driver of a runtime worker, as its last heartbeat describes it."""

    driver_id = serializers.CharField()
    isolation = serializers.ChoiceField(
        choices=["shared", "dedicated"],
        help_text=(
            "shared: many channels' queries side by side (up to capacity); dedicated: one "
            "channel's (runtime.isolation: dedicated in its spec)."
        ),
    )
    pid = serializers.IntegerField(help_text="The driver's process id on the worker's host.")
    started_at = EpochDateTimeField()
    last_heartbeat = EpochDateTimeField()
    heartbeat_age = serializers.FloatField(help_text="Seconds since the driver's last heartbeat.")
    capacity = serializers.IntegerField(help_text="The most channels the driver takes.")
    memory = serializers.CharField(
        allow_blank=True, help_text="The driver's JVM memory (spark.driver.memory, e.g. 1g)."
    )
    cores = serializers.IntegerField(help_text="Cores its real-time queries hold.")
    application_id = serializers.CharField(
        allow_null=True, help_text="The driver's Spark application id."
    )
    connectors = serializers.ListField(
        child=serializers.CharField(),
        help_text="Ids of the connectors whose queries it hosts now (running or paused).",
    )
    channels = serializers.ListField(
        child=serializers.CharField(),
        help_text="The names of the channels those connectors run.",
    )


class ClusterRuntimeWorkerSerializer(serializers.Serializer):
    worker_id = serializers.CharField()
    host = serializers.CharField()
    pid = serializers.IntegerField()
    state = serializers.ChoiceField(
        choices=WorkerState.choices,
        help_text="DEAD once its last heartbeat is older than the session timeout.",
    )
    started_at = EpochDateTimeField()
    last_heartbeat = EpochDateTimeField()
    heartbeat_age = serializers.FloatField(help_text="Seconds since its last heartbeat.")
    connectors = serializers.ListField(
        child=serializers.CharField(),
        help_text="Ids of the connectors whose drivers it hosts, as its heartbeat says.",
    )
    drivers = ClusterDriverSerializer(
        many=True, help_text="Its Spark drivers, each with the channels it hosts."
    )


class SparkWorkerSerializer(serializers.Serializer):
    worker_id = serializers.CharField(help_text="The id the Spark master gave the worker.")
    host = serializers.CharField()
    port = serializers.IntegerField(allow_null=True)
    state = serializers.CharField(help_text="As the master says: ALIVE, DEAD, DECOMMISSIONED…")
    cores = serializers.IntegerField(help_text="Cores the worker offers.")
    cores_used = serializers.IntegerField()
    memory_mb = serializers.IntegerField(help_text="Memory the worker offers, in MiB.")
    memory_used_mb = serializers.IntegerField()
    last_heartbeat = EpochDateTimeField(allow_null=True)
    heartbeat_age = serializers.SerializerMethodField(
        help_text="Seconds since the master last heard from the worker."
    )
    web_ui = serializers.CharField(allow_blank=True)

    def get_heartbeat_age(self, worker: Any) -> float | None:
        now = self.context.get("now")
        if worker.last_heartbeat is None or now is None:
            return None
        return round(max(now - worker.last_heartbeat, 0.0), 3)


class SparkApplicationSerializer(serializers.Serializer):
    app_id = serializers.CharField()
    name = serializers.CharField(help_text="sluice-<channel> for a connector's driver.")
    state = serializers.CharField()
    cores = serializers.IntegerField(help_text="Cores granted to the application.")
    memory_per_executor_mb = serializers.IntegerField()
    started_at = EpochDateTimeField(allow_null=True)


class SparkClusterSerializer(serializers.Serializer):
    mode = serializers.ChoiceField(
        choices=["local", "standalone", "other"],
        help_text=(
            "local: executors run inside each driver (local[*]); standalone: a spark:// "
            "master, whose workers and applications follow; other: a master Sluice does not "
            "inspect."
        ),
    )
    master = serializers.CharField(help_text="SPARK_MASTER as the console sees it.")
    status = serializers.CharField(allow_null=True, help_text="The master's own status.")
    web_ui = serializers.CharField(allow_null=True)
    error = serializers.CharField(
        allow_null=True, help_text="Why the master's status could not be read (else null)."
    )
    workers = SparkWorkerSerializer(many=True)
    applications = SparkApplicationSerializer(many=True)


class ExecutorSerializer(serializers.Serializer):
    id = serializers.CharField(
        source="executor_id", help_text="Spark's executor id; 'driver' for the driver itself."
    )
    host = serializers.CharField()
    port = serializers.IntegerField(allow_null=True)
    cores = serializers.IntegerField()
    active_tasks = serializers.IntegerField()
    completed_tasks = serializers.IntegerField()
    failed_tasks = serializers.IntegerField()
    memory_used = serializers.IntegerField(help_text="Storage memory in use, in bytes.")
    memory_total = serializers.IntegerField(help_text="Storage memory available, in bytes.")


class ClusterChannelSerializer(serializers.Serializer):
    name = serializers.CharField()
    connector_id = serializers.CharField()
    state = serializers.ChoiceField(choices=ConnectorState.choices)
    worker_id = serializers.CharField(allow_null=True)
    driver_id = serializers.CharField(
        allow_null=True, help_text="The Spark driver running the channel's query."
    )
    application_id = serializers.CharField(
        allow_null=True, help_text="The Spark application of the connector's driver."
    )
    executors = ExecutorSerializer(many=True)


class ClusterSerializer(serializers.Serializer):
    runtime_workers = ClusterRuntimeWorkerSerializer(many=True)
    spark = SparkClusterSerializer()
    channels = ClusterChannelSerializer(
        many=True, help_text="Each channel whose connector reported, with its executors."
    )
