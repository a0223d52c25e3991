"""Teams and their service accounts as the API shows them."""

from __future__ import annotations

from rest_framework import serializers

from console.choices import TeamRole
from console.models import ServiceAccount
from console.services.service_accounts import MAX_LIFETIME_DAYS


class TeamSerializer(serializers.Serializer):
    name = serializers.CharField()
    description = serializers.CharField()
    roles = serializers.ListField(
        child=serializers.ChoiceField(choices=TeamRole.choices),
        help_text="The caller's roles in the team (a site admin may hold none).",
    )
    reach = serializers.DictField(
        child=serializers.ListField(child=serializers.CharField()),
        help_text=(
            "What the team's channels may touch (set by a site admin; see teams/{team}/reach/): "
            "only the keys it sets; a key left out is the site's default."
        ),
    )


class ReachSerializer(serializers.Serializer):
    """A team's reach (:class:`pipelines.spec.reach.Reach`): each key left out (or ``null``)
    is the site's default; an empty list reaches nothing of that kind."""

    topic_prefixes = serializers.ListField(
        child=serializers.CharField(),
        required=False,
        allow_null=True,
        help_text="Kafka topic-name prefixes the team's channels may read and write.",
    )
    kafka_clusters = serializers.ListField(
        child=serializers.CharField(),
        required=False,
        allow_null=True,
        help_text="Kafka brokers (host:port) the team's Kafka stages may name.",
    )
    files_roots = serializers.ListField(
        child=serializers.CharField(),
        required=False,
        allow_null=True,
        help_text="Absolute directories of the team's files stages and SQLite databases.",
    )
    http_sink = serializers.ListField(
        child=serializers.CharField(),
        required=False,
        allow_null=True,
        help_text="Non-public hosts, addresses or CIDRs the HTTP sink may reach.",
    )
    jdbc_sink = serializers.ListField(
        child=serializers.CharField(),
        required=False,
        allow_null=True,
        help_text="Non-public PostgreSQL hosts, addresses or CIDRs of the JDBC sink.",
    )
    http_enrich = serializers.ListField(
        child=serializers.CharField(),
        required=False,
        allow_null=True,
        help_text="Non-public hosts, addresses or CIDRs the enrich transform may call.",
    )
    schema_registry = serializers.ListField(
        child=serializers.CharField(),
        required=False,
        allow_null=True,
        help_text="Non-public hosts, addresses or CIDRs of external schema registries.",
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
