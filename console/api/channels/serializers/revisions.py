"""A channel's past as the API shows it: its saved revisions (secrets redacted), the
differences between two of them, and its lifecycle events."""

from __future__ import annotations

from typing import Any

from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import extend_schema_field
from rest_framework import serializers

from console.choices import SubjectType
from console.models import LifecycleEvent, Revision
from console.selectors import specs
from console.selectors.specs import SECRET_CHANGED_MARKER, SECRET_MARKER


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
