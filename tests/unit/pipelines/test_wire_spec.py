"""Spec validation of Kafka stages in a wire format: errors per field path, the registry URL
through its allow-list, registry credentials write-only and bound to the registry."""

from __future__ import annotations

from typing import Any

import pytest

from pipelines.spec import validate_spec
from pipelines.spec.channel import SpecError
from pipelines.spec.configs import KafkaSinkConfig
from pipelines.spec.plugins import get_plugin
from pipelines.spec.secrets import SECRET_MARKER, redact, secret_binding


def spec(source: dict[str, Any], sink: dict[str, Any]) -> dict[str, Any]:
    return {
        "source": {"type": "kafka", "config": {"bootstrap_servers": "h:1", **source}},
        "sink": {"type": "kafka", "config": {"bootstrap_servers": "h:1", "topic": "o", **sink}},
    }


def errors_of(body: dict[str, Any]) -> dict[str, list[str]]:
    with pytest.raises(SpecError) as caught:
        validate_spec(body)
    return caught.value.errors


def test_defaults_fill_in_sluices_registry_and_the_topic_subject() -> None:
    valid = validate_spec(spec({"topics": ["orders"], "format": "avro"}, {"format": "avro"}))
    config = valid.source.config
    assert config["schema_registry"] == {
        "url": None,
        "auth": {"type": "none"},
        "subject": None,
        "message": None,
    }


def test_bad_formats_and_subjects_are_errors_per_field() -> None:
    errors = errors_of(
        spec(
            {"topic_pattern": "orders-.*", "format": "avro"},
            {"format": "thrift", "schema_registry": {"subject": "x" * 300}},
        )
    )
    assert "subject: name the subject" in errors["source.config.schema_registry"][0]
    assert "sink.config.format" in errors
    assert "sink.config.schema_registry.subject" in errors
    errors = errors_of(spec({"topics": ["a"], "schema_registry": {"subject": "a-value"}}, {}))
    assert errors == {
        "source.config.schema_registry": [
            "is only for the avro, protobuf and json-schema formats, not json"
        ]
    }
    # All defaults (what the builder's form fills in for the optional object) says nothing.
    valid = validate_spec(
        spec({"topics": ["a"], "schema_registry": {"auth": {"type": "none"}}}, {})
    )
    assert valid.source.config["schema_registry"] is None


def test_protobuf_is_a_wire_format_and_its_message_is_for_sinks() -> None:
    valid = validate_spec(
        spec(
            {"topics": ["orders"], "format": "protobuf"},
            {"format": "protobuf", "schema_registry": {"message": "shop.Order.Line"}},
        )
    )
    assert valid.sink.config["schema_registry"]["message"] == "shop.Order.Line"
    assert valid.source.config["schema_registry"]["subject"] is None
    errors = errors_of(
        spec(
            {"topics": ["a"], "format": "protobuf", "schema_registry": {"message": "shop.A"}},
            {"format": "avro", "schema_registry": {"message": "shop.A"}},
        )
    )
    assert "message: is for a sink" in errors["source.config.schema_registry"][0]
    assert errors["sink.config.schema_registry"] == [
        "message: is only for the protobuf format, not avro"
    ]
    errors = errors_of(
        spec({"topics": ["a"]}, {"format": "protobuf", "schema_registry": {"message": "a..b"}})
    )
    assert "dotted identifiers" in errors["sink.config.schema_registry.message"][0]


def test_an_external_registry_passes_its_allow_list(monkeypatch: pytest.MonkeyPatch) -> None:
    registry = {"url": "http://127.0.0.1:8081", "subject": "orders-value"}
    errors = errors_of(spec({"topics": ["a"], "format": "avro", "schema_registry": registry}, {}))
    assert "SLUICE_SCHEMA_REGISTRY_ALLOW" in errors["source.config.schema_registry.url"][0]
    errors = errors_of(
        spec(
            {
                "topics": ["a"],
                "format": "avro",
                "schema_registry": {"auth": {"type": "bearer", "token": "t"}},
            },
            {},
        )
    )
    assert "auth is for an external registry" in errors["source.config.schema_registry"][0]
    monkeypatch.setenv("SLUICE_SCHEMA_REGISTRY_ALLOW", "127.0.0.1")
    validate_spec(spec({"topics": ["a"], "format": "avro", "schema_registry": registry}, {}))


def test_registry_credentials_are_write_only_and_bound_to_the_registry() -> None:
    auth = {"type": "basic", "username": "svc", "password": "hunter2"}
    sink = {
        "format": "avro",
        "schema_registry": {"url": "https://registry.example.com", "auth": auth},
    }
    body = spec({"topics": ["a"]}, sink)
    validate_spec(body)
    assert redact(body)["sink"]["config"]["schema_registry"]["auth"]["password"] == SECRET_MARKER
    binding = secret_binding(KafkaSinkConfig, body["sink"]["config"])
    moved = {**sink, "schema_registry": {**sink["schema_registry"], "url": "https://evil.example"}}
    assert secret_binding(KafkaSinkConfig, {**body["sink"]["config"], **moved}) != binding
    schema = get_plugin("sink", "kafka").json_schema
    assert "schema_registry" in schema["properties"]
