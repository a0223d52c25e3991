"""Channels as the API reads and writes them: the channel (its spec with secrets redacted,
its restart policy), its status, the answers to its operations, its revisions, lifecycle
events and live output. Writes go through :mod:`console.services`, never ``save()``."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import extend_schema_field
from rest_framework import serializers

from console import labels as channel_labels
from console.api.exceptions import spec_error_paths
from console.api.ingest.serializers import IngestTokenField
from console.choices import (
    ConnectorState,
    RestartPolicyType,
    ShownState,
    SubjectType,
    TargetState,
)
from console.errors import InvalidSpec
from console.models import Channel, LifecycleEvent, Revision, Task
from console.selectors import health, history, reporting, specs
from console.selectors.rates import events_per_second
from console.selectors.restart_policy import RestartPolicy
from console.selectors.specs import SECRET_CHANGED_MARKER, SECRET_MARKER


@extend_schema_field(OpenApiTypes.OBJECT)
class SpecField(serializers.JSONField):
    """A channel spec: reads the latest revision's, validates what is written.

    Secrets never leave: each one reads as the marker, and a marker (or a secret left out)
    written back keeps the stored secret. Validation errors are raised keyed by their path
    inside the spec; the channel serializer prefixes them with ``spec.``. What is written
    comes out normalised (:class:`~console.selectors.specs.NormalizedSpec`), which the
    service takes as it is: the spec is validated once per write.
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
            return specs.normalize_spec(data, stored=stored)
        except InvalidSpec as exc:
            raise serializers.ValidationError(exc.errors) from exc


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


def reporting_at(serializer: serializers.Field) -> datetime:
    """The instant a response judges reporting at: the view's (``reporting_at`` in the
    context, the one its filters used), else the clock once per response."""
    context = serializer.context
    at = context.get("reporting_at")
    if at is None:
        at = reporting.now()
        if isinstance(context, dict):  # the root's own context: shared by the whole response
            context["reporting_at"] = at
    return at


STATE_HELP = (
    "The state as shown: the connector's last observed state (STOPPED when never started), "
    "or NOT_REPORTING once a state its reporter keeps refreshing (RUNNING, PAUSED, "
    "RESTARTING, UNASSIGNED on a worker) has had no new report for twice its report interval, "
    "by the console's clock; status.reported_state keeps the last one, "
    "status.not_reporting_since says since when."
)


class ShownStateField(serializers.ChoiceField):
    """A channel's shown state (:func:`console.selectors.reporting.shown_state`), judged when
    read."""

    def __init__(self, **kwargs: Any) -> None:
        kwargs.setdefault("help_text", STATE_HELP)
        super().__init__(choices=ShownState.choices, read_only=True, **kwargs)

    def get_attribute(self, instance: Channel) -> str:
        connector = getattr(instance, "connector", None)
        return reporting.shown_state(connector, at=reporting_at(self))


_DEFAULT_POLICY = RestartPolicy()


class RestartPolicySerializer(serializers.Serializer):
    """A channel's restart policy; see :mod:`console.selectors.restart_policy`."""

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


@extend_schema_field(
    {
        "type": "object",
        "additionalProperties": {"type": "string", "maxLength": channel_labels.NAME_MAX},
        "maxProperties": channel_labels.MAX_LABELS,
    }
)
class LabelsField(serializers.JSONField):
    """``{key: value}`` labels under Kubernetes' rules (:mod:`console.labels`); each problem
    is reported under ``labels.<key>``."""

    def to_internal_value(self, data: Any) -> dict[str, str]:
        errors = channel_labels.label_errors(data)
        if errors:
            raise serializers.ValidationError(errors)
        return dict(data)


class ChannelSerializer(serializers.ModelSerializer):
    spec = SpecField(
        help_text=(
            "The channel spec: source, transforms[], then sink (a linear channel) or rules[] "
            "(a bus: each rule a name, pattern, transforms[] and sinks[]); see the plugin "
            "catalogue and docs/channels.md. Secrets "
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
    state = ShownStateField()
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
    labels = LabelsField(
        required=False,
        help_text=(
            "Key/value labels to find and act on channels as a fleet (Kubernetes rules: keys "
            "[prefix/]name, names and values at most 63 letters, digits, '-', '_' or '.', "
            f"beginning and ending with a letter or digit; at most {channel_labels.MAX_LABELS}). "
            "PUT/PATCH replace them whole."
        ),
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
            "labels",
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
            # DRF's error detail: nested dicts and lists of messages.
            detail: Any = dict(exc.detail) if isinstance(exc.detail, dict) else exc.detail
            if isinstance(detail, dict) and isinstance(detail.get("spec"), dict):
                detail.update(spec_error_paths(detail.pop("spec")))
            if isinstance(detail, dict) and isinstance(detail.get("labels"), dict):
                detail.update(detail.pop("labels"))
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


class TaskSerializer(serializers.ModelSerializer):
    id = serializers.IntegerField(source="task_id")
    state = serializers.ChoiceField(
        choices=ShownState.choices,
        read_only=True,
        help_text="As last reported; NOT_REPORTING (in place of a state its reporter keeps "
        "refreshing) while its connector is.",
    )

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
    """One stage's event counts since the channel was first started (carried over its drivers).

    ``in`` is the events the stage received (for the source, every record read; failed
    events are not passed to later stages' counts), ``out`` the events it passed on,
    ``failed`` those it failed (dead letters under errors.tolerance 'all');
    ``in - out - failed`` is what it dropped (a filter)."""

    stage = serializers.ChoiceField(choices=["source", "transform", "sink"])
    index = serializers.IntegerField(
        allow_null=True, help_text="The transform's place in the channel (null otherwise)."
    )
    type = serializers.CharField(help_text="The stage's plugin type.")
    in_ = serializers.IntegerField(help_text="Events the stage received.")
    out = serializers.IntegerField(help_text="Events the stage passed on.")
    failed = serializers.IntegerField(help_text="Events the stage failed.")
    in_per_second = serializers.FloatField(
        required=False, help_text="Events in per second over the latest micro-batch."
    )
    out_per_second = serializers.FloatField(
        required=False, help_text="Events out per second over the latest micro-batch."
    )

    def get_fields(self) -> dict[str, serializers.Field]:
        # "in" is a Python keyword: the field is declared as in_ and named "in" here.
        return {
            ("in" if name == "in_" else name): field for name, field in super().get_fields().items()
        }


class RuleTargetCountsSerializer(serializers.Serializer):
    """One target (sink) of a rule: the events it took and those it failed."""

    sink = serializers.CharField(
        help_text="The sink's path in the spec, e.g. rules[0].sinks[1] (the error paths' form)."
    )
    type = serializers.CharField(help_text="The sink's plugin type.")
    delivered = serializers.IntegerField(help_text="Events the target took.")
    failed = serializers.IntegerField(help_text="Events the target failed.")


class RuleCountsSerializer(serializers.Serializer):
    """One rule of a bus: its event counts since the channel was first started (carried over
    its drivers: ``console.services.count_totals``), its rates as the runtime reports them."""

    rule = serializers.CharField(help_text="The rule's name.")
    matched = serializers.IntegerField(help_text="Events the rule's pattern matched.")
    delivered = serializers.IntegerField(help_text="Matched events every target of the rule took.")
    failed = serializers.IntegerField(
        help_text="Matched events a target (or the rule's transforms) failed."
    )
    matched_per_second = serializers.FloatField(
        required=False, help_text="Events matched per second over the latest micro-batch."
    )
    delivered_per_second = serializers.FloatField(
        required=False, help_text="Events delivered per second over the latest micro-batch."
    )
    targets = RuleTargetCountsSerializer(
        many=True, required=False, help_text="Each of the rule's sinks, in the spec's order."
    )


class HealthSerializer(serializers.Serializer):
    """A channel's health summary (:mod:`console.selectors.health`)."""

    score = serializers.IntegerField(help_text="100 healthy (or stopped on purpose) down to 0.")
    level = serializers.ChoiceField(
        choices=[(level, level) for level in health.LEVELS],
        help_text="idle (stopped on purpose), ok, warning or critical: the worst rule that fired.",
    )
    explanation = serializers.CharField(
        help_text="One sentence per rule that fired (the console shows it on hover)."
    )
    reasons = serializers.ListField(child=serializers.CharField())
    failure_rate = serializers.FloatField(
        allow_null=True,
        help_text=(
            "Events a stage failed / events in, since the channel was first started "
            "(null: none in)."
        ),
    )
    dead_letter_rate = serializers.FloatField(allow_null=True)
    lag_trend = serializers.FloatField(
        allow_null=True, help_text="Lag now minus lag before (records); null without history."
    )
    restarts = serializers.IntegerField()
    last_success_at = serializers.DateTimeField(
        allow_null=True,
        help_text=(
            "When it was last seen running: its last status report while RUNNING, otherwise "
            "when it left its last state; null if never started."
        ),
    )


class ChannelHealthSerializer(serializers.Serializer):
    """One item of ``GET /health/``."""

    name = serializers.CharField()
    state = serializers.ChoiceField(choices=ShownState.choices, help_text=STATE_HELP)
    target_state = serializers.CharField()
    health = HealthSerializer()


class ChannelStatusSerializer(serializers.ModelSerializer):
    """The channel's connector and tasks as reconcile last recorded them, with whether the
    connector still reports judged when read (:mod:`console.selectors.reporting`)."""

    state = ShownStateField()
    reported_state = serializers.SerializerMethodField(
        help_text=(
            "The connector's last observed state (its last report, or the control loop's "
            "decision; STOPPED when never started), kept as it was while state is "
            "NOT_REPORTING."
        )
    )
    not_reporting_since = serializers.SerializerMethodField(
        help_text=(
            "state NOT_REPORTING: when the console first read the connector's last report (its "
            "own clock); null while it reports."
        )
    )
    status_seen_at = serializers.DateTimeField(
        source="connector.status_seen_at",
        allow_null=True,
        help_text=(
            "When the control loop first read the latest status report, by the console's "
            "clock (last_status_at is the reporting host's clock: shown, never compared)."
        ),
    )
    report_interval = serializers.SerializerMethodField(
        help_text=(
            "The latest report's promise: its reporter rewrites it at least this often "
            "(seconds); null when it made none (a final state)."
        )
    )
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
        source="connector.all_dead_letters",
        allow_null=True,
        help_text=(
            "Events that failed a stage under errors.tolerance 'all' and went to the "
            "dead-letter target (or were skipped), since the channel was first started, its "
            "replays' and redrives' included: what its dead-letter list holds."
        ),
    )
    tasks = serializers.SerializerMethodField()
    events_per_second = serializers.SerializerMethodField(
        help_text=(
            "Events per second the channel reads, over the last 30 s (its source stage's "
            "rate; without stage counts, its tasks' rows/s): the figure the console and "
            "/metrics show. null unless it runs and reports."
        )
    )
    stages = serializers.SerializerMethodField(
        help_text=(
            "Per-stage event counts (source, transforms in order, sink) since the channel was "
            "first started (a restarted or moved driver's counts add to the earlier ones); empty "
            "until a micro-batch ran. Rates are 0 while no driver reports."
        )
    )

    health = serializers.SerializerMethodField(
        help_text="The channel's health summary: score, level and why (GET /health/ for all)."
    )
    rules = serializers.SerializerMethodField(
        help_text=(
            "A bus's per-rule counts (matched, delivered, failed, their rates, and each "
            "target's), in the spec's rule order, since the channel was first started; empty "
            "for a linear channel and until a micro-batch ran."
        )
    )

    class Meta:
        model = Channel
        fields = [
            "name",
            "state",
            "reported_state",
            "not_reporting_since",
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
            "status_seen_at",
            "report_interval",
            "dead_letters",
            "tasks",
            "events_per_second",
            "stages",
            "rules",
            "health",
        ]
        read_only_fields = fields

    @extend_schema_field(serializers.FloatField(allow_null=True))
    def get_events_per_second(self, channel: Channel) -> float | None:
        connector = getattr(channel, "connector", None)
        if connector is None or connector.state != ConnectorState.RUNNING:
            return None
        if not self._reporting(channel).reporting:
            return None  # its last rate is no longer known
        running = [t.rows_per_second for t in connector.tasks.all() if t.state == "RUNNING"]
        return events_per_second(connector.stage_metrics, running)

    @extend_schema_field(HealthSerializer)
    def get_health(self, channel: Channel) -> dict[str, Any]:
        return health.of_channel(
            channel, lag_before=history.lags_before().get(channel.name), at=reporting_at(self)
        ).as_dict()

    def _reporting(self, channel: Channel) -> reporting.Reporting:
        return reporting.of_connector(getattr(channel, "connector", None), at=reporting_at(self))

    @extend_schema_field(serializers.ChoiceField(choices=ConnectorState.choices))
    def get_reported_state(self, channel: Channel) -> str:
        return channel.state

    @extend_schema_field(serializers.DateTimeField(allow_null=True))
    def get_not_reporting_since(self, channel: Channel) -> str | None:
        since = self._reporting(channel).since
        return serializers.DateTimeField().to_representation(since) if since else None

    @extend_schema_field(serializers.FloatField(allow_null=True))
    def get_report_interval(self, channel: Channel) -> float | None:
        connector = getattr(channel, "connector", None)
        return (connector.report_interval or None) if connector is not None else None

    def _child(self, key: str, serializer_class: type[serializers.Serializer]) -> Any:
        """One serializer of ``serializer_class`` per list (its fields are built once, not
        for each of a page's channels: a list of 50 channels with status stays fast)."""
        children = self.__dict__.setdefault("_children", {})
        if key not in children:
            children[key] = serializer_class()
        return children[key]

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
        child = self._child("tasks", TaskSerializer)
        rows = [child.to_representation(task) for task in tasks]
        if not self._reporting(channel).reporting:  # their report is the connector's
            for row in rows:
                if row["state"] in reporting.REFRESHED_STATES:
                    row["state"] = ShownState.NOT_REPORTING
        return rows

    @extend_schema_field(StageCountsSerializer(many=True))
    def get_stages(self, channel: Channel) -> list[dict[str, Any]]:
        connector = getattr(channel, "connector", None)
        if connector is None:
            return []
        child = self._child("stages", StageCountsSerializer)
        return [child.to_representation(stage) for stage in connector.stage_metrics or []]

    @extend_schema_field(RuleCountsSerializer(many=True))
    def get_rules(self, channel: Channel) -> list[dict[str, Any]]:
        connector = getattr(channel, "connector", None)
        if connector is None:
            return []
        child = self._child("rules", RuleCountsSerializer)
        return [
            child.to_representation(rule) for rule in _well_formed_rules(connector.rule_metrics)
        ]


_RULE_COUNT_KEYS = ("matched", "delivered", "failed")
_TARGET_COUNT_KEYS = ("delivered", "failed")


def _well_formed_rules(reported: Any) -> list[dict[str, Any]]:
    """The per-rule counts the runtime reported, in the documented shape whatever it sent:
    entries without a rule name are left out, a missing count reads 0, a missing rate is
    left out (so a newer or older runtime never turns status into a server error)."""
    rules = []
    for entry in reported if isinstance(reported, list) else []:
        if not isinstance(entry, dict) or not isinstance(entry.get("rule"), str):
            continue
        counts: dict[str, Any] = {"rule": entry["rule"]}
        counts.update({key: _count(entry.get(key)) for key in _RULE_COUNT_KEYS})
        for key in ("matched_per_second", "delivered_per_second"):
            if isinstance(entry.get(key), (int, float)):
                counts[key] = entry[key]
        targets = entry.get("targets")
        counts["targets"] = [
            {
                "sink": str(target.get("sink", "")),
                "type": str(target.get("type", "")),
                **{key: _count(target.get(key)) for key in _TARGET_COUNT_KEYS},
            }
            for target in (targets if isinstance(targets, list) else [])
            if isinstance(target, dict)
        ]
        rules.append(counts)
    return rules


def _count(value: Any) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) else 0


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


class RevisionDiffQuerySerializer(serializers.Serializer):
    against = serializers.IntegerField(
        required=False,
        min_value=1,
        help_text="The revision to compare with (default: the one before; for revision 1, "
        "an empty spec).",
    )


class SpecChangeSerializer(serializers.Serializer):
    """One change between two revisions' specs."""

    path = serializers.CharField(
        help_text=(
            "Where, as a reader names it: objects by key, stage lists by position, a bus's "
            "rules by name (rules[big-orders].pattern, rules[big-orders].sinks[0].config."
            "topic); an event pattern changes whole."
        )
    )
    change = serializers.ChoiceField(
        choices=["added", "removed", "changed", "reordered"],
        help_text="reordered: the rules kept in both (before and after list their names).",
    )
    before = serializers.JSONField(
        allow_null=True, help_text="The value before (null when added); secrets as the marker."
    )
    after = serializers.JSONField(
        allow_null=True,
        help_text=(
            "The value after (null when removed); secrets as the marker, or as "
            f"{SECRET_CHANGED_MARKER!r} when the secret changed."
        ),
    )


class RevisionDiffSerializer(serializers.Serializer):
    """What changed from one revision of a channel's spec to another."""

    number = serializers.IntegerField(help_text="The revision compared.")
    against = serializers.IntegerField(
        allow_null=True, help_text="The revision it is compared with (null: an empty spec)."
    )
    changes = SpecChangeSerializer(many=True, help_text="Every change, in the specs' order.")


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
