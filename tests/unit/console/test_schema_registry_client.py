"""The Confluent Schema Registry API (``/schema-registry/``) driven by confluent-kafka's own
``SchemaRegistryClient`` and its Avro, Protobuf and JSON Schema serializers, over HTTP
against a real local server (pytest-django's ``live_server``: the console on 127.0.0.1),
authenticated as those clients do: HTTP basic with a console user's name and password, or a
bearer token (a console API token)."""

from __future__ import annotations

import json

import pytest
from confluent_kafka.schema_registry import Schema, SchemaRegistryClient
from confluent_kafka.schema_registry.avro import AvroDeserializer, AvroSerializer
from confluent_kafka.schema_registry.error import SchemaRegistryError
from confluent_kafka.schema_registry.json_schema import JSONDeserializer, JSONSerializer
from confluent_kafka.schema_registry.protobuf import ProtobufDeserializer, ProtobufSerializer
from confluent_kafka.serialization import MessageField, SerializationContext
from google.protobuf import descriptor_pb2, descriptor_pool, message_factory
from rest_framework.authtoken.models import Token

from console.models import AuditEvent
from console.permissions import grant_role

pytestmark = pytest.mark.django_db(transaction=True)

PASSWORD = "s3cret-pass"

USER_V1 = {
    "type": "record",
    "name": "User",
    "namespace": "sluice.test",
    "fields": [{"name": "name", "type": "string"}],
}
USER_V2 = {  # a field added with a default: backward compatible
    **USER_V1,
    "fields": [*USER_V1["fields"], {"name": "age", "type": "int", "default": 0}],
}
USER_V3_BAD = {  # a field added without a default: not backward compatible
    **USER_V1,
    "fields": [*USER_V1["fields"], {"name": "email", "type": "string"}],
}


@pytest.fixture
def people(django_user_model):
    """An editor (registers, deletes), a viewer (reads) and a superuser (sets levels)."""
    editor = django_user_model.objects.create_user("ed", password=PASSWORD)
    grant_role(editor, "editor")
    viewer = django_user_model.objects.create_user("vi", password=PASSWORD)
    grant_role(viewer, "viewer")
    django_user_model.objects.create_superuser("root", password=PASSWORD)
    return editor


def basic(live_server, name: str = "ed") -> SchemaRegistryClient:
    return SchemaRegistryClient(
        {"url": f"{live_server.url}/schema-registry", "basic.auth.user.info": f"{name}:{PASSWORD}"}
    )


def bearer(live_server, user) -> SchemaRegistryClient:
    token, _ = Token.objects.get_or_create(user=user)
    return SchemaRegistryClient(
        {
            "url": f"{live_server.url}/schema-registry",
            "bearer.auth.credentials.source": "STATIC_TOKEN",
            "bearer.auth.token": token.key,
            "bearer.auth.logical.cluster": "lsrc-sluice",
            "bearer.auth.identity.pool.id": "pool-sluice",
        }
    )


def avro(schema: dict) -> Schema:
    return Schema(json.dumps(schema), "AVRO")


def test_register_fetch_versions_compatibility_and_delete(live_server, people) -> None:
    client = basic(live_server)
    first = client.register_schema("users-value", avro(USER_V1))
    # The same schema (whitespace aside) in the same or another subject has the same id.
    assert client.register_schema("users-value", Schema(json.dumps(USER_V1, indent=2))) == first
    assert basic(live_server).register_schema("others-value", avro(USER_V1)) == first
    second = client.register_schema("users-value", avro(USER_V2))
    assert second != first

    assert client.get_subjects() == ["others-value", "users-value"]
    assert client.get_versions("users-value") == [1, 2]
    fetched = client.get_schema(first)
    assert json.loads(fetched.schema_str) == USER_V1 and fetched.schema_type == "AVRO"
    latest = client.get_latest_version("users-value")
    assert (latest.version, latest.schema_id) == (2, second)
    assert json.loads(client.get_version("users-value", 1).schema.schema_str) == USER_V1
    assert client.lookup_schema("users-value", avro(USER_V2)).version == 2
    assert sorted(client.get_subjects_by_schema_id(first)) == ["others-value", "users-value"]
    assert client.get_schema_types() == ["JSON", "PROTOBUF", "AVRO"]

    # BACKWARD (the default) refuses a field added without a default: 409.
    with pytest.raises(SchemaRegistryError) as refused:
        client.register_schema("users-value", avro(USER_V3_BAD))
    assert refused.value.http_status_code == 409
    assert "READER_FIELD_MISSING_DEFAULT_VALUE" in refused.value.error_message
    assert not client.test_compatibility("users-value", avro(USER_V3_BAD))
    assert client.test_compatibility("users-value", avro(USER_V2), version=1)

    # Levels are a superuser's: an editor is refused, root sets FORWARD, then NONE.
    with pytest.raises(SchemaRegistryError) as forbidden:
        client.set_compatibility("users-value", "FORWARD")
    assert forbidden.value.http_status_code == 403
    root = basic(live_server, "root")
    assert root.set_compatibility("users-value", "FORWARD") == {"compatibility": "FORWARD"}
    assert root.get_compatibility("users-value") == "FORWARD"
    # FORWARD: old readers must read new data; a field removed without a default breaks it.
    without_name = {**USER_V2, "fields": [USER_V2["fields"][1]]}
    with pytest.raises(SchemaRegistryError) as forward:
        client.register_schema("users-value", avro(without_name))
    assert forward.value.http_status_code == 409
    assert client.register_schema("users-value", avro(USER_V3_BAD)) > second  # forward-ok
    root.set_compatibility("users-value", "NONE")
    assert client.register_schema("users-value", avro(without_name))
    assert root.get_compatibility() == "BACKWARD"  # the global level is untouched

    # Invalid schema: 422 / 42201.
    with pytest.raises(SchemaRegistryError) as invalid:
        client.register_schema("users-value", Schema('{"type": "record"}', "AVRO"))
    assert (invalid.value.http_status_code, invalid.value.error_code) == (422, 42201)

    # Soft then permanent delete, as Confluent: a version, then the subject.
    assert client.delete_version("users-value", 4) == 4
    assert client.get_versions("users-value") == [1, 2, 3]
    with pytest.raises(SchemaRegistryError) as not_soft:
        client.delete_version("users-value", 3, permanent=True)
    assert not_soft.value.error_code == 40407
    assert client.delete_subject("users-value") == [1, 2, 3]
    with pytest.raises(SchemaRegistryError) as gone:
        client.get_versions("users-value")
    assert gone.value.error_code == 40401
    assert client.delete_subject("users-value", permanent=True) == [1, 2, 3, 4]
    assert client.get_subjects() == ["others-value"]
    assert json.loads(client.get_schema(second).schema_str) == USER_V2  # ids are kept

    actions = set(AuditEvent.objects.values_list("action", "via", "actor"))
    assert ("schema.register", "schema-registry", "ed") in actions
    assert ("schema.subject.delete", "schema-registry", "ed") in actions
    assert ("schema.config.set", "schema-registry", "root") in actions


def test_a_viewer_reads_but_cannot_register_and_strangers_are_refused(
    live_server, people, django_user_model
) -> None:
    basic(live_server).register_schema("seen-value", avro(USER_V1))
    viewer = basic(live_server, "vi")
    assert viewer.get_subjects() == ["seen-value"]
    with pytest.raises(SchemaRegistryError) as refused:
        viewer.register_schema("seen-value", avro(USER_V2))
    assert (refused.value.http_status_code, refused.value.error_code) == (403, 40301)
    assert "editor" in refused.value.error_message
    with pytest.raises(SchemaRegistryError) as no_delete:
        viewer.delete_subject("seen-value")
    assert no_delete.value.http_status_code == 403
    stranger = SchemaRegistryClient(
        {"url": f"{live_server.url}/schema-registry", "basic.auth.user.info": "vi:wrong"}
    )
    with pytest.raises(SchemaRegistryError) as unauthenticated:
        stranger.get_subjects()
    assert unauthenticated.value.http_status_code == 401
    assert bearer(live_server, django_user_model.objects.get(username="vi")).get_subjects() == [
        "seen-value"
    ]


def _round_trip(serializer, deserializer, value, topic: str):
    ctx = SerializationContext(topic, MessageField.VALUE)
    data = serializer(value, ctx)
    assert data[0] == 0  # Confluent's wire format: magic byte, then the schema id
    return deserializer(data, ctx), int.from_bytes(data[1:5], "big")


@pytest.mark.parametrize("auth", ["basic", "bearer"])
def test_avro_serializer_round_trip_with_auto_registration(live_server, people, auth) -> None:
    client = basic(live_server) if auth == "basic" else bearer(live_server, people)
    serializer = AvroSerializer(client, json.dumps(USER_V2), conf={"auto.register.schemas": True})
    # The deserializer learns the writer's schema from the registry by id.
    reader = basic(live_server) if auth == "basic" else bearer(live_server, people)
    value, schema_id = _round_trip(
        serializer, AvroDeserializer(reader), {"name": "ada", "age": 36}, "avro-in"
    )
    assert value == {"name": "ada", "age": 36}
    assert client.get_latest_version("avro-in-value").schema_id == schema_id


def _order_message_class():
    """A Protobuf message class built at run time (no protoc here), as generated code is."""
    proto = descriptor_pb2.FileDescriptorProto(name="sluice_order.proto", package="sluice.test")
    proto.syntax = "proto3"
    message = proto.message_type.add(name="Order")
    field = descriptor_pb2.FieldDescriptorProto
    message.field.add(name="id", number=1, type=field.TYPE_STRING, label=field.LABEL_OPTIONAL)
    message.field.add(name="amount", number=2, type=field.TYPE_INT64, label=field.LABEL_OPTIONAL)
    pool = descriptor_pool.Default()
    try:
        pool.FindFileByName(proto.name)
    except KeyError:
        pool.Add(proto)
    return message_factory.GetMessageClass(pool.FindMessageTypeByName("sluice.test.Order"))


@pytest.mark.parametrize("auth", ["basic", "bearer"])
def test_protobuf_serializer_round_trip_with_auto_registration(live_server, people, auth) -> None:
    client = basic(live_server) if auth == "basic" else bearer(live_server, people)
    order = _order_message_class()
    serializer = ProtobufSerializer(
        order, client, conf={"auto.register.schemas": True, "use.deprecated.format": False}
    )
    deserializer = ProtobufDeserializer(
        order, conf={"use.deprecated.format": False}, schema_registry_client=client
    )
    value, schema_id = _round_trip(serializer, deserializer, order(id="o-1", amount=420), "pb-in")
    assert (value.id, value.amount) == ("o-1", 420)
    stored = client.get_schema(schema_id)
    assert stored.schema_type == "PROTOBUF"
    # A field whose type changes incompatibly is refused (FIELD_SCALAR_KIND_CHANGED).
    changed = descriptor_pb2.FileDescriptorProto()
    changed.ParseFromString(order.DESCRIPTOR.file.serialized_pb)
    changed.message_type[0].field[1].type = descriptor_pb2.FieldDescriptorProto.TYPE_STRING
    import base64

    text = base64.b64encode(changed.SerializeToString()).decode()
    with pytest.raises(SchemaRegistryError) as refused:
        client.register_schema("pb-in-value", Schema(text, "PROTOBUF"))
    assert refused.value.http_status_code == 409
    assert "FIELD_SCALAR_KIND_CHANGED" in refused.value.error_message


ORDER_JSON = {
    "$schema": "http://json-schema.org/draft-07/schema#",
    "title": "Order",
    "type": "object",
    "properties": {"id": {"type": "string"}, "amount": {"type": "number"}},
    "required": ["id"],
    "additionalProperties": False,
}


@pytest.mark.parametrize("auth", ["basic", "bearer"])
def test_json_serializer_round_trip_with_auto_registration(live_server, people, auth) -> None:
    client = basic(live_server) if auth == "basic" else bearer(live_server, people)
    serializer = JSONSerializer(
        json.dumps(ORDER_JSON), client, conf={"auto.register.schemas": True}
    )
    deserializer = JSONDeserializer(None, schema_registry_client=client)
    value, schema_id = _round_trip(serializer, deserializer, {"id": "o-1", "amount": 4.2}, "js-in")
    assert value == {"id": "o-1", "amount": 4.2}
    assert json.loads(client.get_schema(schema_id).schema_str) == ORDER_JSON
    # A required property added to the closed model: not backward compatible.
    stricter = {
        **ORDER_JSON,
        "properties": {**ORDER_JSON["properties"], "note": {"type": "string"}},
    }
    stricter["required"] = ["id", "note"]
    with pytest.raises(SchemaRegistryError) as refused:
        client.register_schema("js-in-value", Schema(json.dumps(stricter), "JSON"))
    assert refused.value.http_status_code == 409
    # An optional property added to the closed model is.
    looser = {**stricter, "required": ["id"]}
    assert client.register_schema("js-in-value", Schema(json.dumps(looser), "JSON")) != schema_id


def test_each_team_s_registry_through_confluent_s_client_and_a_service_account(
    live_server, monkeypatch
) -> None:
    """A team's registry URL is a Confluent registry of its own: the client and serializers
    work unchanged, logged in with a service account's name and token (basic auth); another
    team's subjects, ids and registry are not there; a driver reads its team's."""
    from console.models import Team
    from console.services import service_accounts
    from pipelines.registry_client import RegistryClient
    from pipelines.spec.configs.schema_registry import SchemaRegistryConfig

    def login(team: str, account: str) -> str:
        issued = service_accounts.issue(
            Team.objects.get_or_create(name=team)[0], name=account, role="editor", expires_in_days=1
        )
        return f"svc.{team}.{account}:{issued.token}"

    def team_client(team: str, user_info: str) -> SchemaRegistryClient:
        return SchemaRegistryClient(
            {
                "url": f"{live_server.url}/schema-registry/teams/{team}",
                "basic.auth.user.info": user_info,
            }
        )

    a_login = login("a", "ci")
    a, b = team_client("a", a_login), team_client("b", login("b", "ci"))
    serializer = AvroSerializer(a, json.dumps(USER_V2), conf={"auto.register.schemas": True})
    value, a_id = _round_trip(serializer, AvroDeserializer(a), {"name": "ada", "age": 36}, "t")
    assert value == {"name": "ada", "age": 36}
    b_id = b.register_schema("t-value", avro(USER_V1))  # the same subject name in team b

    assert a_id != b_id
    assert a.get_subjects() == ["t-value"] and b.get_subjects() == ["t-value"]
    assert a.get_latest_version("t-value").schema_id == a_id
    assert b.get_latest_version("t-value").schema_id == b_id
    with pytest.raises(SchemaRegistryError) as unseen:
        a.get_schema(b_id)  # b's id: not in a's registry
    assert (unseen.value.http_status_code, unseen.value.error_code) == (404, 40403)
    with pytest.raises(SchemaRegistryError) as elsewhere:
        team_client("b", a_login).get_subjects()  # a's account at b's URL: no such registry
    assert elsewhere.value.http_status_code == 404
    # the legacy URL is the account's one team's registry
    legacy = SchemaRegistryClient(
        {"url": f"{live_server.url}/schema-registry", "basic.auth.user.info": a_login}
    )
    assert legacy.get_latest_version("t-value").schema_id == a_id

    # A driver of team b's channel: b's subject, through b's registry URL.
    monkeypatch.setenv("SLUICE_SCHEMA_REGISTRY_URL", f"{live_server.url}/schema-registry")
    found = RegistryClient(SchemaRegistryConfig(team="b")).subject("t-value")
    assert [(v.version, v.id) for v in found.versions] == [(1, b_id)]
