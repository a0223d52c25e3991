"""The Confluent Schema Registry API's calls that confluent-kafka's client does not cover in
test_schema_registry_client.py: raw schemas, references, modes, config resets, error codes."""

from __future__ import annotations

import base64
import json

import pytest
from rest_framework.test import APIClient

pytestmark = pytest.mark.django_db

SR = "/schema-registry"
MEDIA = "application/vnd.schemaregistry.v1+json"
MONEY = {
    "type": "record",
    "name": "Money",
    "namespace": "m",
    "fields": [{"name": "c", "type": "long"}],
}
ORDER = {"type": "record", "name": "Order", "fields": [{"name": "price", "type": "m.Money"}]}


@pytest.fixture
def sr(django_user_model) -> APIClient:
    django_user_model.objects.create_superuser("root", password="pw-root-1")
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION="Basic cm9vdDpwdy1yb290LTE=")  # root:pw-root-1
    return client


def post(client: APIClient, url: str, body: dict):
    return client.post(f"{SR}{url}", data=json.dumps(body), content_type=MEDIA)


def test_references_are_stored_resolved_and_listed(sr: APIClient) -> None:
    money_id = post(sr, "/subjects/money/versions", {"schema": json.dumps(MONEY)}).json()["id"]
    unresolved = post(sr, "/subjects/orders/versions", {"schema": json.dumps(ORDER)})
    assert unresolved.status_code == 422 and unresolved.json()["error_code"] == 42201
    refs = [{"name": "m.Money", "subject": "money", "version": 1}]
    created = post(
        sr, "/subjects/orders/versions", {"schema": json.dumps(ORDER), "references": refs}
    )
    assert created.status_code == 200, created.json()
    order_id = created.json()["id"]
    assert created["Content-Type"].startswith(MEDIA)

    by_id = sr.get(f"{SR}/schemas/ids/{order_id}").json()
    assert by_id["references"] == refs and "schemaType" not in by_id  # AVRO: left out
    looked_up = post(sr, "/subjects/orders", {"schema": json.dumps(ORDER), "references": refs})
    assert looked_up.json()["version"] == 1 and looked_up.json()["id"] == order_id
    assert sr.get(f"{SR}/subjects/money/versions/1/referencedby").json() == [order_id]
    assert sr.get(f"{SR}/schemas/ids/{money_id}/schema").json() == MONEY
    assert sr.get(f"{SR}/subjects/orders/versions/latest/schema").json() == ORDER
    assert sr.get(f"{SR}/schemas/ids/{order_id}/versions").json() == [
        {"subject": "orders", "version": 1}
    ]


def test_confluent_error_codes(sr: APIClient) -> None:
    assert sr.get(f"{SR}/subjects/nope/versions").json()["error_code"] == 40401
    post(sr, "/subjects/s/versions", {"schema": '"string"'})
    assert sr.get(f"{SR}/subjects/s/versions/7").json()["error_code"] == 40402
    assert sr.get(f"{SR}/subjects/s/versions/zero").json()["error_code"] == 42202
    assert sr.get(f"{SR}/schemas/ids/999").json()["error_code"] == 40403
    missing = post(sr, "/subjects/s", {"schema": '"int"'})
    assert (missing.status_code, missing.json()["error_code"]) == (404, 40403)
    bad_level = sr.put(
        f"{SR}/config", data=json.dumps({"compatibility": "SIDEWAYS"}), content_type=MEDIA
    )
    assert bad_level.json()["error_code"] == 42203
    assert sr.get(f"{SR}/config/s").json()["error_code"] == 40408
    assert sr.get(f"{SR}/config/s?defaultToGlobal=true").json() == {
        "compatibilityLevel": "BACKWARD"
    }
    not_json = sr.post(f"{SR}/subjects/s/versions", data="{", content_type=MEDIA)
    assert not_json.status_code == 422 and set(not_json.json()) == {"error_code", "message"}
    assert sr.delete(f"{SR}/subjects/s?permanent=true").json()["error_code"] == 40405
    sr.delete(f"{SR}/subjects/s")
    assert sr.delete(f"{SR}/subjects/s").json()["error_code"] == 40404


def test_config_mode_types_and_verbose_compatibility(sr: APIClient) -> None:
    assert sr.get(f"{SR}/mode").json() == {"mode": "READWRITE"}
    refused = sr.put(f"{SR}/mode", data=json.dumps({"mode": "READONLY"}), content_type=MEDIA)
    assert refused.status_code == 422
    assert sr.get(f"{SR}/schemas/types").json() == ["JSON", "PROTOBUF", "AVRO"]
    put = sr.put(f"{SR}/config", data=json.dumps({"compatibility": "full"}), content_type=MEDIA)
    assert put.json() == {"compatibility": "FULL"}
    assert sr.delete(f"{SR}/config").json() == {"compatibilityLevel": "FULL"}
    assert sr.get(f"{SR}/config").json() == {"compatibilityLevel": "BACKWARD"}

    v1 = {"type": "record", "name": "R", "fields": [{"name": "a", "type": "int"}]}
    post(sr, "/subjects/r/versions", {"schema": json.dumps(v1)})
    v2 = {**v1, "fields": [*v1["fields"], {"name": "b", "type": "int"}]}
    verbose = post(
        sr, "/compatibility/subjects/r/versions/latest?verbose=true", {"schema": json.dumps(v2)}
    )
    assert verbose.json()["is_compatible"] is False
    assert "READER_FIELD_MISSING_DEFAULT_VALUE" in verbose.json()["messages"][0]
    fresh = post(sr, "/compatibility/subjects/new-one/versions", {"schema": json.dumps(v2)})
    assert fresh.json() == {"is_compatible": True}
    sr.put(f"{SR}/config/r", data=json.dumps({"compatibility": "NONE"}), content_type=MEDIA)
    assert post(sr, "/compatibility/subjects/r/versions/1", {"schema": json.dumps(v2)}).json() == {
        "is_compatible": True
    }
    assert sr.delete(f"{SR}/config/r").json() == {"compatibilityLevel": "NONE"}


def test_the_consoles_own_api_lists_subjects_versions_and_diffs(sr: APIClient, api) -> None:
    v1 = {"type": "record", "name": "R", "fields": [{"name": "a", "type": "int"}]}
    v2 = {**v1, "fields": [*v1["fields"], {"name": "b", "type": "int", "default": 1}]}
    post(sr, "/subjects/r-value/versions", {"schema": json.dumps(v1)})
    post(sr, "/subjects/r-value/versions", {"schema": json.dumps(v2)})

    listed = api.get("/api/v1/schemas/").json()
    assert listed["count"] == 1
    (row,) = listed["results"]
    assert (row["name"], row["latest_version"], row["versions"]) == ("r-value", 2, 2)
    assert (row["compatibility"], row["compatibility_set"]) == ("BACKWARD", "")
    assert api.get("/api/v1/schemas/r-value/").json()["schema_type"] == "AVRO"
    versions = api.get("/api/v1/schemas/r-value/versions").json()
    assert [v["version"] for v in versions] == [1, 2] and json.loads(versions[0]["schema"]) == v1

    diff = api.get("/api/v1/schemas/r-value/diff").json()
    assert (diff["from_version"]["version"], diff["to_version"]["version"]) == (1, 2)
    assert '+      "name": "b",' in diff["diff"]
    assert diff["backward"] == []  # b has a default
    assert diff["forward"] == []
    sr.put(f"{SR}/config/r-value", data=json.dumps({"compatibility": "NONE"}), content_type=MEDIA)
    v3 = {**v1, "fields": [*v1["fields"], {"name": "c", "type": "string"}]}
    post(sr, "/subjects/r-value/versions", {"schema": json.dumps(v3)})
    later = api.get("/api/v1/schemas/r-value/diff?from=1&to=latest").json()
    assert later["to_version"]["version"] == 3
    assert later["backward"][0].startswith("READER_FIELD_MISSING_DEFAULT_VALUE")
    assert api.get("/api/v1/schemas/r-value/").json()["compatibility_set"] == "NONE"
    assert api.get("/api/v1/schemas/nope/versions").status_code == 404
    assert api.get("/api/v1/schemas/r-value/diff?from=9").status_code == 404
    assert api.get("/api/v1/schemas/r-value/diff?from=x").status_code == 400


def test_a_subjects_shape_is_the_json_schema_of_its_payload(sr: APIClient, api) -> None:
    money_id = post(sr, "/subjects/money/versions", {"schema": json.dumps(MONEY)}).json()["id"]
    refs = [{"name": "m.Money", "subject": "money", "version": 1}]
    post(sr, "/subjects/orders/versions", {"schema": json.dumps(ORDER), "references": refs})

    shape = api.get("/api/v1/schemas/money/shape").json()
    assert (shape["subject"], shape["version"], shape["id"]) == ("money", 1, money_id)
    assert shape["schema_type"] == "AVRO" and shape["messages"] == [] and shape["message"] == ""
    assert shape["schema"]["properties"] == {"c": {"type": "integer"}}
    # a reference's record is expanded in place
    order = api.get("/api/v1/schemas/orders/shape?version=1").json()["schema"]
    assert order["properties"]["price"]["properties"] == {"c": {"type": "integer"}}

    assert api.get("/api/v1/schemas/nope/shape").status_code == 404
    assert api.get("/api/v1/schemas/money/shape?version=7").status_code == 404
    bad_version = api.get("/api/v1/schemas/money/shape?version=x")
    assert bad_version.status_code == 400 and "version" in bad_version.json()
    post(sr, "/subjects/js/versions", {"schema": '{"type": "object"}', "schemaType": "JSON"})
    assert api.get("/api/v1/schemas/js/shape").json()["schema"] == {"type": "object"}


def test_a_protobuf_subjects_shape_is_of_a_message(sr: APIClient, api) -> None:
    from google.protobuf import descriptor_pb2

    field = descriptor_pb2.FieldDescriptorProto
    proto = descriptor_pb2.FileDescriptorProto(name="o.proto", package="shop", syntax="proto3")
    for message, name in (("Order", "sku"), ("Refund", "reason")):
        proto.message_type.add(name=message).field.append(
            field(name=name, number=1, type=field.TYPE_STRING, label=field.LABEL_OPTIONAL)
        )
    text = base64.b64encode(proto.SerializeToString()).decode()
    post(sr, "/subjects/p-value/versions", {"schema": text, "schemaType": "PROTOBUF"})

    first = api.get("/api/v1/schemas/p-value/shape").json()
    assert first["messages"] == ["shop.Order", "shop.Refund"] and first["message"] == "shop.Order"
    assert first["schema"]["properties"] == {"sku": {"type": "string"}}
    refund = api.get("/api/v1/schemas/p-value/shape?message=shop.Refund").json()
    assert refund["schema"]["properties"] == {"reason": {"type": "string"}}
    unknown = api.get("/api/v1/schemas/p-value/shape?message=shop.Nope")
    assert unknown.status_code == 400 and "shop.Nope" in unknown.json()["message"][0]


@pytest.mark.parametrize(
    "name",
    ["a\x00b", "tab\there", "x" * 256, "../etc/passwd", "a/../b", "a\\b", "__GLOBAL", "..", "\x85"],
)
def test_a_subject_name_confluent_would_refuse_is_a_42208_and_creates_nothing(
    sr: APIClient, name: str
) -> None:
    """Issue 29 (finding 9): a NUL byte, ``../`` segments and 303 characters were taken."""
    from urllib.parse import quote

    path = quote(name, safe="")
    registered = post(sr, f"/subjects/{path}/versions", {"schema": '"string"'})
    assert registered.status_code == 422, registered.content
    assert registered.json()["error_code"] == 42208
    assert "Invalid subject" in registered.json()["message"]
    configured = sr.put(
        f"{SR}/config/{path}", data=json.dumps({"compatibility": "NONE"}), content_type=MEDIA
    )
    assert configured.json().get("error_code") == 42208, configured.content
    assert sr.get(f"{SR}/subjects").json() == []


def test_subject_names_as_confluent_takes_them_are_taken(sr: APIClient) -> None:
    from urllib.parse import quote

    for name in ["orders-value", "com.acme.Order", ":.ctx:orders-value", "x" * 255, "ü names"]:
        answer = post(sr, f"/subjects/{quote(name, safe='')}/versions", {"schema": '"string"'})
        assert answer.status_code == 200, (name, answer.content)


@pytest.mark.parametrize(
    ("schema_type", "text"),
    [
        ("AVRO", '{"type": "array", "items": ' * 3000 + '"string"' + "}" * 3000),
        ("JSON", '{"items": ' * 3000 + "{}" + "}" * 3000),
        ("AVRO", "[" * 3000 + "]" * 3000),
    ],
)
def test_a_schema_nested_3000_deep_is_a_42201_naming_where(
    sr: APIClient, api, schema_type: str, text: str
) -> None:
    """Issue 29 (finding 7): it exhausted Python's recursion, a 500."""
    answer = post(sr, "/subjects/deep/versions", {"schema": text, "schemaType": schema_type})
    assert answer.status_code == 422, answer.content
    assert answer.json()["error_code"] == 42201
    assert "nest deeper than 256 levels" in answer.json()["message"]
    lookup = post(sr, "/subjects/deep", {"schema": text, "schemaType": schema_type})
    assert lookup.status_code == 422, lookup.content
