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
