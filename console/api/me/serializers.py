"""The current user as ``me/`` shows them."""

from __future__ import annotations

from rest_framework import serializers

from console.choices import TeamRole


class CapabilitiesSerializer(serializers.Serializer):
    view = serializers.BooleanField(help_text="May see channels, workers and their history.")
    operate = serializers.BooleanField(
        help_text="May start, stop, pause, resume and restart channels and change offsets."
    )
    operate_workers = serializers.BooleanField(
        help_text="May drain runtime workers, put them back in service and forget dead ones."
    )
    edit = serializers.BooleanField(help_text="May create, change and delete channels.")


class TeamMembershipSerializer(serializers.Serializer):
    name = serializers.CharField(help_text="The team.")
    roles = serializers.ListField(
        child=serializers.ChoiceField(choices=TeamRole.choices),
        help_text="The user's roles in this team.",
    )
    can = CapabilitiesSerializer(help_text="What the user may do in this team.")


class MeSerializer(serializers.Serializer):
    username = serializers.CharField()
    roles = serializers.ListField(
        child=serializers.ChoiceField(choices=TeamRole.choices),
        help_text="The roles the user holds in any team (viewer, operator, editor, admin).",
    )
    teams = TeamMembershipSerializer(
        many=True,
        help_text=(
            "The teams the user sees, by name, with their roles there (a superuser: every "
            "team, with no roles needed)."
        ),
    )
    is_superuser = serializers.BooleanField(help_text="May do everything, whatever the roles.")
    can = CapabilitiesSerializer(
        help_text=(
            "What the user may do in at least one team, from roles and permissions "
            "(superusers: all)."
        )
    )
