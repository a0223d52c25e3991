"""Shapes of ``/api/v1/schemas/`` (the console's own view of the schema registry)."""

from __future__ import annotations

from rest_framework import serializers

from console.api.fields import ObjectField
from console.schemas.base import SCHEMA_TYPES
from console.services.schemas import MAX_SUBJECT


class SubjectSerializer(serializers.Serializer):
    team = serializers.CharField(help_text="The team the subject belongs to.")
    name = serializers.CharField(help_text="The subject (Confluent's naming: `<topic>-value`).")
    schema_type = serializers.ChoiceField(
        choices=["AVRO", "JSON", "PROTOBUF"], help_text="The latest version's type."
    )
    latest_version = serializers.IntegerField()
    latest_id = serializers.IntegerField(help_text="The latest version's global schema id.")
    versions = serializers.IntegerField(help_text="How many versions (not deleted).")
    compatibility = serializers.CharField(
        help_text="The level that applies: the subject's own, else the global one."
    )
    compatibility_set = serializers.CharField(
        allow_blank=True, help_text="The subject's own level; empty when it follows the global one."
    )
    updated_at = serializers.DateTimeField(help_text="When the latest version was registered.")


class ReferenceSerializer(serializers.Serializer):
    name = serializers.CharField()
    subject = serializers.CharField()
    version = serializers.IntegerField()


class VersionSerializer(serializers.Serializer):
    subject = serializers.CharField(source="subject.name")
    version = serializers.IntegerField()
    id = serializers.IntegerField(source="schema_id", help_text="The global schema id.")
    schema_type = serializers.CharField(source="schema.schema_type")
    schema = serializers.CharField(source="schema.schema", help_text="The canonical text.")
    references = ReferenceSerializer(source="schema.references", many=True)
    deleted = serializers.BooleanField(help_text="Soft-deleted (kept until deleted for good).")
    created_at = serializers.DateTimeField()
    created_by = serializers.CharField(help_text="Who registered it.")


class DiffSerializer(serializers.Serializer):
    subject = serializers.CharField()
    from_version = VersionSerializer(source="old")
    to_version = VersionSerializer(source="new")
    diff = serializers.CharField(
        help_text="A unified diff of the two schemas, pretty-printed (JSON for Avro and JSON "
        "Schema) so that it is line by line."
    )
    backward = serializers.ListField(
        child=serializers.CharField(),
        help_text="Why the newer cannot read data written with the older (empty: it can).",
    )
    forward = serializers.ListField(
        child=serializers.CharField(),
        help_text="Why the older cannot read data written with the newer (empty: it can).",
    )


class SubjectShapeSerializer(serializers.Serializer):
    subject = serializers.CharField()
    version = serializers.IntegerField()
    id = serializers.IntegerField(help_text="The version's global schema id.")
    schema_type = serializers.ChoiceField(choices=["AVRO", "JSON", "PROTOBUF"])
    schema = ObjectField(
        help_text="The JSON Schema of the payload (the event's data) this version describes: "
        "the schema itself for JSON Schema; for Avro and Protobuf the value their wire format "
        "decodes to (records and messages as objects, arrays, maps as open objects, enums as "
        "strings, unions with null as nullable, logical types as formatted strings)."
    )
    messages = serializers.ListField(
        child=serializers.CharField(),
        help_text="Protobuf: the messages the file declares (full names); empty otherwise.",
    )
    message = serializers.CharField(
        allow_blank=True, help_text="Protobuf: the message the shape is of (default: the first)."
    )


class RegistrationSerializer(serializers.Serializer):
    """A schema to register under a subject (or to check first): Confluent's
    ``POST /subjects/{subject}/versions`` as a console form sends it."""

    team = serializers.CharField(
        required=False,
        allow_null=True,
        default=None,
        max_length=63,
        help_text="The team whose registry this is (the subject's team). Default: the one team "
        "where you may register schemas (for a check: see them); a site admin's: default.",
    )
    subject = serializers.CharField(
        max_length=MAX_SUBJECT,
        trim_whitespace=False,
        help_text="The subject (Confluent's naming: `<topic>-value`, `<topic>-key` or a record "
        "name), in the team. A new subject is created; an existing one gets a new version.",
    )
    schema_type = serializers.ChoiceField(
        choices=sorted(SCHEMA_TYPES), default="AVRO", help_text="The schema's language."
    )
    schema = serializers.CharField(
        trim_whitespace=False,
        help_text="The schema text: Avro or JSON Schema as JSON, Protobuf as a .proto file.",
    )
    references = ReferenceSerializer(
        many=True,
        required=False,
        default=list,
        help_text="Other subjects' versions the schema imports (name as the schema refers to it).",
    )


class RegistrationCheckSerializer(serializers.Serializer):
    """What registering the schema would do, said before it is done."""

    team = serializers.CharField(help_text="The team whose registry was checked.")
    subject = serializers.CharField()
    exists = serializers.BooleanField(help_text="The subject has versions (not deleted).")
    compatibility = serializers.CharField(
        help_text="The level the new version is checked under (the subject's, else global)."
    )
    compatible = serializers.BooleanField(
        help_text="Registering would succeed: a new subject, an already registered schema, or "
        "a schema the level accepts after the subject's versions."
    )
    problems = serializers.ListField(
        child=serializers.CharField(),
        help_text="Why the level refuses it (empty when compatible), in the registry's words.",
    )
    registered_version = serializers.IntegerField(
        allow_null=True,
        help_text="The version that already holds exactly this schema: registering it again "
        "changes nothing. null otherwise.",
    )
    next_version = serializers.IntegerField(
        allow_null=True,
        help_text="The version number registering would create; null when it would create none.",
    )


class RegisteredSerializer(serializers.Serializer):
    team = serializers.CharField(help_text="The team the subject belongs to.")
    created = serializers.BooleanField(
        help_text="false when the subject already had this exact schema (that version is given)."
    )
    version = VersionSerializer()


class IncompatibleSerializer(serializers.Serializer):
    detail = serializers.CharField(help_text="The registry's own message, verbatim.")
    compatibility = serializers.CharField(help_text="The level that refused it.")
    problems = serializers.ListField(
        child=serializers.CharField(), help_text="Each incompatibility, one per line."
    )
