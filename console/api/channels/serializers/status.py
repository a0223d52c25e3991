"""A channel's status as the API shows it: its connector and tasks as the control loop last
recorded them, their counts per stage and per rule, and its health, judged when read."""

from __future__ import annotations

from typing import Any

from drf_spectacular.utils import extend_schema_field
from rest_framework import serializers

from console.api.channels.serializers.channel import (
    STATE_HELP,
    ChannelSerializer,
    ShownStateField,
    has_drift,
    latest_revision_number,
    reporting_at,
)
from console.choices import ConnectorState, ShownState
from console.models import Channel, Task
from console.selectors import health, history, reporting
from console.selectors.rates import events_per_second


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
