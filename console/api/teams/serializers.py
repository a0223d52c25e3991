"""Teams and their service accounts as the API shows them."""

from __future__ import annotations

from rest_framework import serializers

from console.choices import TeamRole
from console.models import ServiceAccount
from console.services.service_accounts import MAX_LIFETIME_DAYS


class QuotaSerializer(serializers.Serializer):
    limit = serializers.IntegerField(allow_null=True, help_text="The quota; null: no limit.")
    used = serializers.IntegerField(
        allow_null=True,
        help_text="What the team holds against it now; null: the console does not know it "
        "(driver cores and memory are enforced and used on each runtime worker).",
    )


class TeamQuotasSerializer(serializers.Serializer):
    max_channels = QuotaSerializer(help_text="Channels the team holds.")
    max_running_channels = QuotaSerializer(
        help_text="Channels whose target is RUNNING or PAUSED (a paused one keeps its driver)."
    )
    max_realtime_cores = QuotaSerializer(
        help_text="Cores the team's running or paused real-time channels hold, one per source "
        "partition, counted when each was deployed."
    )
    max_driver_cores = QuotaSerializer(help_text="Cores of the team's drivers on one worker.")
    max_driver_memory_mib = QuotaSerializer(
        help_text="Memory (MiB) of the team's drivers on one worker."
    )


class TeamSerializer(serializers.Serializer):
    name = serializers.CharField()
    description = serializers.CharField()
    roles = serializers.ListField(
        child=serializers.ChoiceField(choices=TeamRole.choices),
        help_text="The caller's roles in the team (a site admin may hold none).",
    )
    quotas = TeamQuotasSerializer(help_text="Each quota of the team with the team's use.")
    reach = serializers.DictField(
        child=serializers.ListField(child=serializers.CharField()),
        help_text=(
            "What the team's channels may touch (set by a site admin; see teams/{team}/reach/): "
            "only the keys it sets; a key left out is the site's default."
        ),
    )


#: The most a quota may be set to (Team's fields are PositiveIntegerFields; 0 forbids).
MAX_QUOTA = 1_000_000
MAX_MEMORY_QUOTA_MIB = 64 * 1024 * 1024  # 64 TiB


def _quota_field(help_text: str, max_value: int = MAX_QUOTA) -> serializers.IntegerField:
    return serializers.IntegerField(
        min_value=0, max_value=max_value, allow_null=True, required=False, help_text=help_text
    )


class TeamQuotasUpdateSerializer(serializers.Serializer):
    """``PATCH teams/{team}/``: the quotas a site admin sets; those left out stay, null
    removes the limit."""

    max_channels = _quota_field("Channels the team may hold.")
    max_running_channels = _quota_field("Channels the team may have running or paused.")
    max_realtime_cores = _quota_field("Cores the team's real-time channels may hold.")
    max_driver_cores = _quota_field("Cores of the team's drivers on one runtime worker.")
    max_driver_memory_mib = _quota_field(
        "Memory (MiB) of the team's drivers on one runtime worker.", MAX_MEMORY_QUOTA_MIB
    )

    def validate(self, attrs: dict) -> dict:
        unknown = sorted(set(self.initial_data) - set(self.fields))
        if unknown:
            raise serializers.ValidationError({key: ["Unknown field."] for key in unknown})
        return attrs


def _reach_list(help_text: str) -> serializers.ListField:
    """One kind of a team's reach: a list, or ``null`` (left out) for the site's default."""
    return serializers.ListField(
        child=serializers.CharField(), required=False, allow_null=True, help_text=help_text
    )


class ReachSerializer(serializers.Serializer):
    """A team's reach (:class:`pipelines.spec.reach.Reach`): each key left out (or ``null``)
    is the site's default; an empty list reaches nothing of that kind."""

    topic_prefixes = _reach_list(
        "Kafka topic-name prefixes the team's channels may read and write."
    )
    kafka_clusters = _reach_list("Kafka brokers (host:port) the team's Kafka stages may name.")
    files_roots = _reach_list(
        "Absolute directories of the team's files stages and SQLite databases."
    )
    http_sink = _reach_list("Non-public hosts, addresses or CIDRs the HTTP sink may reach.")
    jdbc_sink = _reach_list("Non-public PostgreSQL hosts, addresses or CIDRs of the JDBC sink.")
    http_enrich = _reach_list("Non-public hosts, addresses or CIDRs the enrich transform may call.")
    schema_registry = _reach_list(
        "Non-public hosts, addresses or CIDRs of external schema registries."
    )


class ServiceAccountSerializer(serializers.ModelSerializer):
    team = serializers.CharField(source="team.name", read_only=True)
    username = serializers.CharField(source="user.username", read_only=True)
    created_by = serializers.CharField(
        source="created_by.username", read_only=True, allow_null=True
    )

    class Meta:
        model = ServiceAccount
        fields = [
            "name",
            "team",
            "role",
            "username",
            "token_prefix",
            "expires_at",
            "created",
            "created_by",
            "last_used_at",
        ]
        read_only_fields = fields


class IssueServiceAccountSerializer(serializers.Serializer):
    name = serializers.CharField(max_length=63)
    role = serializers.ChoiceField(choices=TeamRole.choices)
    expires_in_days = serializers.IntegerField(
        min_value=1,
        max_value=MAX_LIFETIME_DAYS,
        default=90,
        help_text=f"How long the token works (1 to {MAX_LIFETIME_DAYS} days; default 90).",
    )


class IssuedServiceAccountSerializer(ServiceAccountSerializer):
    token = serializers.CharField(
        read_only=True, help_text="The token, shown this once: keep it in a secret store."
    )

    class Meta(ServiceAccountSerializer.Meta):
        fields = [*ServiceAccountSerializer.Meta.fields, "token"]
        read_only_fields = fields
