"""The current user as ``me/`` shows them."""

from __future__ import annotations

from rest_framework import serializers

from console import permissions


class CapabilitiesSerializer(serializers.Serializer):
    view = serializers.BooleanField(help_text="May see channels, workers and their history.")
    operate = serializers.BooleanField(
        help_text="May start, stop, pause, resume and restart channels and change offsets."
    )
    operate_workers = serializers.BooleanField(
        help_text="May drain runtime workers, put them back in service and forget dead ones."
    )
    edit = serializers.BooleanField(help_text="May create, change and delete channels.")


class MeSerializer(serializers.Serializer):
    username = serializers.CharField()
    roles = serializers.ListField(
        child=serializers.ChoiceField(choices=permissions.ROLES),
        help_text="The role groups the user is in (viewer, operator, editor).",
    )
    is_superuser = serializers.BooleanField(help_text="May do everything, whatever the roles.")
    can = CapabilitiesSerializer(
        help_text="What the user may do, from roles and permissions (superusers: all)."
    )
