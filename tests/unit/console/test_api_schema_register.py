"""``POST /api/v1/schemas/`` and ``POST /api/v1/schemas/check``: registering a schema from the
console's form, with what it would do said first, each refusal at its field, the registry's
compatibility error verbatim, the editor role, and the audit trail."""

from __future__ import annotations

import base64
import json

import pytest
from google.protobuf import descriptor_pb2
from rest_framework.authtoken.models import Token
from rest_framework.test import APIClient

from console.models import AuditEvent, SubjectVersion
from console.permissions import EDITOR, OPERATOR, VIEWER, grant_role

pytestmark = pytest.mark.django_db

SCHEMAS = "/api/v1/schemas/"
CHECK = "/api/v1/schemas/check"
V1 = {"type": "record", "name": "Order", "fields": [{"name": "id", "type": "string"}]}
V2 = {**V1, "fields": [*V1["fields"], {"name": "total", "type": "double", "default": 0}]}
BREAKING = {**V1, "fields": [*V1["fields"], {"name": "region", "type": "string"}]}


def body(schema: dict | str, subject: str = "orders-value", **extra) -> dict:
    text = schema if isinstance(schema, str) else json.dumps(schema)
    return {"subject": subject, "schema": text, **extra}


def client_for(django_user_model, username: str, *roles: str) -> APIClient:
    user = django_user_model.objects.create_user(username, password="s3cret-pass")
    for role in roles:
        grant_role(user, role)
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Token {Token.objects.create(user=user).key}")
    return client


def test_a_new_subject_is_checked_then_registered_as_version_1(api):
    check = api.post(CHECK, body(V1), format="json")

    assert check.status_code == 200, check.json()
    assert check.json() == {
        "team": "default",
        "subject": "orders-value",
        "exists": False,
        "compatibility": "BACKWARD",
        "compatible": True,
        "problems": [],
        "registered_version": None,
        "next_version": 1,
    }
    assert not SubjectVersion.objects.exists()  # the check changes nothing

    response = api.post(SCHEMAS, body(V1), format="json")

    assert response.status_code == 201, response.json()
    answer = response.json()
    assert answer["created"] is True
    version = answer["version"]
    assert (version["subject"], version["version"], version["schema_type"]) == (
        "orders-value",
        1,
        "AVRO",
    )
    assert version["created_by"] == "alice"
    assert json.loads(version["schema"]) == V1
    # The registry API sees it: one registry for both doors.
    listed = api.get("/api/v1/schemas/orders-value/versions").json()
    assert [v["id"] for v in listed] == [version["id"]]


def test_a_compatible_new_version_says_its_number_before_and_after(api):
    api.post(SCHEMAS, body(V1), format="json")

    check = api.post(CHECK, body(V2), format="json").json()
    assert (check["exists"], check["compatible"], check["next_version"]) == (True, True, 2)

    response = api.post(SCHEMAS, body(V2), format="json")

    assert response.status_code == 201
    assert response.json()["version"]["version"] == 2


def test_the_same_schema_again_changes_nothing_and_says_which_version_holds_it(api):
    api.post(SCHEMAS, body(V1), format="json")

    check = api.post(CHECK, body(json.dumps(V1, indent=4)), format="json").json()
    assert (check["registered_version"], check["next_version"], check["compatible"]) == (
        1,
        None,
        True,
    )

    again = api.post(SCHEMAS, body(V1), format="json")

    assert again.status_code == 200
    assert again.json()["created"] is False and again.json()["version"]["version"] == 1
    assert SubjectVersion.objects.count() == 1


def test_an_incompatible_version_is_refused_with_the_registrys_words(api):
    api.post(SCHEMAS, body(V1), format="json")

    check = api.post(CHECK, body(BREAKING), format="json").json()
    assert check["compatible"] is False and check["next_version"] is None
    assert check["problems"] and check["problems"][0].startswith(
        "READER_FIELD_MISSING_DEFAULT_VALUE"
    )

    response = api.post(SCHEMAS, body(BREAKING), format="json")

    assert response.status_code == 409
    refused = response.json()
    assert refused["detail"].startswith(
        'Schema being registered is incompatible with an earlier schema for subject "orders-value"'
    )
    assert refused["compatibility"] == "BACKWARD"
    assert refused["problems"] == check["problems"]
    assert SubjectVersion.objects.count() == 1


def test_each_problem_is_at_its_field(api):
    bad_json = api.post(SCHEMAS, body('{"type": "record", "name": '), format="json")
    assert bad_json.status_code == 400
    assert list(bad_json.json()) == ["schema"]

    bad_avro = api.post(CHECK, body({"type": "record", "name": "R"}), format="json")
    assert bad_avro.status_code == 400 and list(bad_avro.json()) == ["schema"]

    bad_subject = api.post(SCHEMAS, body(V1, subject="a/b"), format="json")
    assert bad_subject.status_code == 400
    assert bad_subject.json() == {
        "subject": ["Invalid subject: it holds a / or a \\ (a subject is not a path)"]
    }

    bad_type = api.post(SCHEMAS, body(V1, schema_type="XML"), format="json")
    assert bad_type.status_code == 400 and list(bad_type.json()) == ["schema_type"]

    missing_ref = api.post(
        SCHEMAS,
        body(V1, references=[{"name": "m.Money", "subject": "money", "version": 1}]),
        format="json",
    )
    assert missing_ref.status_code == 400 and list(missing_ref.json()) == ["references"]

    bad_ref = api.post(
        SCHEMAS, body(V1, references=[{"name": "m.Money", "subject": "money"}]), format="json"
    )
    assert bad_ref.status_code == 400 and list(bad_ref.json()) == ["references[0].version"]

    empty = api.post(SCHEMAS, {}, format="json")
    assert sorted(empty.json()) == ["schema", "subject"]
    assert not SubjectVersion.objects.exists()


def test_json_schema_and_protobuf_are_registered_too(api):
    json_schema = {"type": "object", "properties": {"id": {"type": "string"}}}
    field = descriptor_pb2.FieldDescriptorProto
    file = descriptor_pb2.FileDescriptorProto(name="o.proto", package="shop", syntax="proto3")
    file.message_type.add(name="Order").field.append(
        field(name="id", number=1, type=field.TYPE_STRING, label=field.LABEL_OPTIONAL)
    )
    proto = base64.b64encode(file.SerializeToString()).decode()

    as_json = api.post(SCHEMAS, body(json_schema, "j-value", schema_type="JSON"), format="json")
    as_proto = api.post(SCHEMAS, body(proto, "p-value", schema_type="PROTOBUF"), format="json")

    assert as_json.status_code == 201 and as_json.json()["version"]["schema_type"] == "JSON"
    assert as_proto.status_code == 201 and as_proto.json()["version"]["schema_type"] == "PROTOBUF"
    # .proto text is not what the registry stores: the refusal says what it takes.
    text = 'syntax = "proto3";\nmessage Order { string id = 1; }\n'
    refused = api.post(CHECK, body(text, "p-value", schema_type="PROTOBUF"), format="json")
    assert refused.status_code == 400
    assert "base64 serialized FileDescriptorProto" in refused.json()["schema"][0]


@pytest.mark.parametrize(("roles", "allowed"), [((EDITOR,), True), ((VIEWER, OPERATOR), False)])
def test_registering_needs_the_editor_role_checking_does_not(django_user_model, roles, allowed):
    client = client_for(django_user_model, "bob", *roles)

    assert client.post(CHECK, body(V1), format="json").status_code == 200
    response = client.post(SCHEMAS, body(V1), format="json")

    if allowed:
        assert response.status_code == 201
    else:
        assert response.status_code == 403
        assert "editor role (console.add_subjectversion)" in response.json()["detail"]
        assert not SubjectVersion.objects.exists()


def test_a_registration_is_in_the_audit_trail_and_a_check_is_not(api, user):
    api.post(CHECK, body(V1), format="json")
    api.post(SCHEMAS, body(V1), format="json")
    api.post(SCHEMAS, body(BREAKING), format="json")

    events = list(AuditEvent.objects.order_by("id"))
    assert [(e.action, e.object_type, e.object_id, e.outcome) for e in events] == [
        ("schema.register", "subject", "orders-value", 201),
        ("schema.register", "subject", "orders-value", 409),
    ]
    assert events[0].user == user and events[0].via == "api"
    assert json.loads(events[0].changes["schema"]) == V1
