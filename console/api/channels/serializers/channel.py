"""A channel as the API reads and writes it: its spec (secrets redacted, validated and
normalised once on write), its restart policy and labels, and the shown state every answer
about a channel shares. Writes go through :mod:`console.services`, never ``save()``."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import extend_schema_field
from rest_framework import serializers
from rest_framework.validators import UniqueValidator

from console import labels as channel_labels
from console.api.exceptions import spec_error_paths
from console.api.ingest.serializers import IngestTokenField
from console.choices import RestartPolicyType, ShownState, TargetState
from console.demo import DEMO_CHANNEL
from console.errors import InvalidSpec
from console.models import CHANNEL_NAME_TAKEN, Channel, channel_name_validator
from console.selectors import reporting, specs
from console.selectors.restart_policy import RestartPolicy
from console.selectors.specs import SECRET_MARKER


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
        # A channel's own team's reach; a new channel's team is chosen by the view, and the
        # service validates the spec again within its reach.
        team = instance.team if isinstance(instance, Channel) else None
        try:
            return specs.normalize_spec(data, stored=stored, team=team)
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


class TeamField(serializers.CharField):
    """A team by name. Written only when a channel is created (the view finds the team among
    the caller's, :func:`console.api.scoping.creation_team`); a channel never changes team."""

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(max_length=63, required=False, **kwargs)

    def get_attribute(self, instance: Any) -> Any:
        return instance.team.name if isinstance(instance, Channel) else None


class ChannelSerializer(serializers.ModelSerializer):
    team = TeamField(
        help_text=(
            "The team the channel belongs to, by name. On create: where to create it (left "
            "out: the one team where the caller may create channels); it cannot change."
        )
    )
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
    demo = serializers.SerializerMethodField(
        help_text=(
            "true for the demo channel `make run` seeds (console.demo): the console offers a "
            "new user to start it."
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
            "team",
            "description",
            "spec",
            "target_state",
            "state",
            "revision",
            "deployed_revision",
            "drift",
            "demo",
            "restart_policy",
            "ingest_token",
            "ingest_rate_limit",
            "labels",
            "created",
            "updated",
            "created_by",
        ]
        read_only_fields = ["created", "updated"]
        extra_kwargs = {
            # The same refusal whichever team holds a name (never which, nor that it is another).
            "name": {
                "validators": [
                    channel_name_validator,
                    UniqueValidator(Channel.objects.all(), message=CHANNEL_NAME_TAKEN),
                ]
            }
        }

    def get_drift(self, channel: Channel) -> bool:
        return has_drift(channel)

    def get_demo(self, channel: Channel) -> bool:
        return channel.name == DEMO_CHANNEL

    def validate_name(self, value: str) -> str:
        if self.instance is not None and value != self.instance.name:
            raise serializers.ValidationError("A channel cannot be renamed.")
        return value

    def validate_team(self, value: str) -> str:
        if self.instance is not None and value != self.instance.team.name:
            raise serializers.ValidationError("A channel cannot move to another team.")
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
