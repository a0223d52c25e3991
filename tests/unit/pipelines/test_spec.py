"""Channel spec validation, the plugin catalogue and stage configs (no Spark)."""

from __future__ import annotations

import copy
import subprocess
import sys
from typing import Any

import pytest

from pipelines.spec import (
    PLUGINS,
    ChannelSpec,
    SpecError,
    StageSpec,
    get_plugin,
    parse_stage_config,
    plugin_types,
    plugins,
    validate_spec,
)
from pipelines.spec.configs import (
    FilterConfig,
    HttpSourceConfig,
    KafkaSinkConfig,
    KafkaSourceConfig,
)
from pipelines.spec.plugins import UnknownPluginError

VALID: dict[str, Any] = {
    "source": {
        "type": "kafka",
        "config": {"bootstrap_servers": "localhost:9092", "topics": ["orders"]},
    },
    "transforms": [
        {"type": "filter", "config": {"pattern": {"data": {"amount": [{"numeric": [">", 100]}]}}}}
    ],
    "sink": {
        "type": "kafka",
        "config": {"bootstrap_servers": "localhost:9092", "topic": "big-orders"},
    },
}


def spec_with(**changes: Any) -> dict[str, Any]:
    spec = copy.deepcopy(VALID)
    spec.update(changes)
    return spec


def errors_of(data: Any) -> dict[str, list[str]]:
    with pytest.raises(SpecError) as raised:
        validate_spec(data)
    return raised.value.errors


def test_valid_spec_is_returned_with_defaults_filled() -> None:
    spec = validate_spec(VALID)

    assert isinstance(spec, ChannelSpec)
    assert spec.source.config == {
        "bootstrap_servers": "localhost:9092",
        "topic_pattern": None,
        "topics": ["orders"],
        "starting_offsets": "latest",
        "max_events_per_trigger": None,
        "format": "json",
        "schema_registry": None,
        "security": KafkaSourceConfig.model_fields["security"]
        .get_default(call_default_factory=True)
        .model_dump(),
        "properties": {},
    }
    assert spec.sink.config["format"] == "json"
    assert spec.transforms[0].config == VALID["transforms"][0]["config"]


def test_normalized_spec_validates_to_itself() -> None:
    once = validate_spec(VALID).model_dump()
    assert validate_spec(once).model_dump() == once


def test_transforms_are_optional() -> None:
    data = copy.deepcopy(VALID)
    del data["transforms"]
    assert validate_spec(data).transforms == []


def test_config_values_are_normalized() -> None:
    source = {
        "type": "kafka",
        "config": {"bootstrap_servers": "a:9092, b:9093", "topics": ["t", "t", "u"]},
    }
    spec = validate_spec(spec_with(source=source))
    assert spec.source.config["bootstrap_servers"] == "a:9092,b:9093"
    assert spec.source.config["topics"] == ["t", "u"]


def known(kind: str) -> str:
    return ", ".join(plugin_types(kind))


def test_unknown_types_name_the_known_ones() -> None:
    errors = errors_of(
        spec_with(
            source={"type": "kafak", "config": {}},
            transforms=[{"type": "filter", "config": {"pattern": {"a": ["b"]}}}, {"type": "map"}],
            sink={"type": "s3", "config": {}},
        )
    )
    assert errors == {
        "source.type": [f"unknown source type 'kafak'; expected one of: {known('source')}"],
        "transforms[1].type": [
            f"unknown transform type 'map'; expected one of: {known('transform')}"
        ],
        "sink.type": [f"unknown sink type 's3'; expected one of: {known('sink')}"],
    }


def test_missing_stages_and_fields_are_reported() -> None:
    assert errors_of({"transforms": []}) == {
        "source": ["field required"],
        "sink": ["field required (or rules, for a bus)"],
    }
    missing_topic = spec_with(sink={"type": "kafka", "config": {"bootstrap_servers": "h:1"}})
    assert errors_of(missing_topic) == {"sink.config.topic": ["field required"]}
    assert errors_of(spec_with(sink={"config": {}})) == {"sink.type": ["field required"]}


def test_wrong_types_are_reported_per_field() -> None:
    source = {
        "type": "kafka",
        "config": {
            "bootstrap_servers": 9092,
            "topics": "orders",
            "starting_offsets": "first",
            "format": "xml",
        },
    }
    assert errors_of(spec_with(source=source)) == {
        "source.config.bootstrap_servers": ["must be a string"],
        "source.config.topics": ["must be a list of strings"],
        "source.config.starting_offsets": [
            """must be 'earliest', 'latest', {"timestamp": epoch ms or RFC 3339} """
            """or {"offsets": {"topic": {"partition": offset}}}"""
        ],
        "source.config.format": [
            "must be 'json', 'cloudevents', 'cloudevents-binary', 'raw', 'avro', 'protobuf' "
            "or 'json-schema'"
        ],
    }


def test_structural_errors() -> None:
    assert errors_of([VALID]) == {
        "": ["must be an object with source, transforms, sink, rules, errors, runtime"]
    }
    assert errors_of(spec_with(transforms={"type": "filter"})) == {
        "transforms": ["must be a list of stages"]
    }
    assert errors_of(spec_with(sink="kafka")) == {
        "sink": ['must be an object like {"type": ..., "config": {...}}']
    }
    assert errors_of(spec_with(sink={"type": "kafka", "config": []})) == {
        "sink.config": ["must be an object"]
    }


def test_unknown_fields_list_the_expected_ones() -> None:
    sink = {"type": "kafka", "config": {**VALID["sink"]["config"], "topics": ["x"]}}
    errors = errors_of(spec_with(sink=sink, name="x"))
    assert errors == {
        "name": [
            "unknown field; expected one of: source, transforms, sink, rules, errors, runtime"
        ],
        "sink.config.topics": [
            "unknown field; expected one of: bootstrap_servers, topic, format, schema_registry, "
            "key_field, topic_field, security, properties, retry"
        ],
    }


def test_malformed_pattern_reports_each_problem_with_its_location() -> None:
    pattern = {"source": "aws.ec2", "detail": {"name": [{"contains": "x"}], "n": []}}
    transforms = [VALID["transforms"][0], {"type": "filter", "config": {"pattern": pattern}}]
    errors = errors_of(spec_with(transforms=transforms))

    messages = errors["transforms[1].config.pattern"]
    assert list(errors) == ["transforms[1].config.pattern"]
    assert len(messages) == 3
    assert messages[0].startswith("source: must be an object or an array of match values")
    assert messages[1].startswith("detail.name[0].contains: unknown operator 'contains'")
    assert messages[2].startswith("detail.n: empty arrays are not allowed")


def test_every_error_of_every_stage_is_collected() -> None:
    data = {
        "source": {"type": "kafka", "config": {"bootstrap_servers": "no port", "topics": []}},
        "transforms": [
            {"type": "filter", "config": {}},
            {"type": "filter", "config": {"pattern": []}},
        ],
        "sink": {"type": "kafka", "config": {"bootstrap_servers": "h:1", "topic": "bad topic"}},
    }
    errors = errors_of(data)
    assert set(errors) == {
        "source.config.bootstrap_servers",
        "source.config.topics",
        "transforms[0].config.pattern",
        "transforms[1].config.pattern",
        "sink.config.topic",
    }
    assert errors["source.config.topics"] == ["must name at least one topic"]
    assert errors["transforms[0].config.pattern"] == ["field required"]
    assert errors["transforms[1].config.pattern"] == [
        "a pattern must be a JSON object, got an array"
    ]
    assert "not a valid Kafka topic name" in errors["sink.config.topic"][0]


def test_spec_error_message_summarizes_every_error() -> None:
    error = SpecError({"sink.type": ["unknown"], "": ["bad"]})
    assert str(error) == "invalid channel spec: sink.type: unknown; spec: bad"
    assert isinstance(error, ValueError)


def test_parse_stage_config_returns_the_typed_model() -> None:
    config = parse_stage_config("source", StageSpec(**VALID["source"]))
    assert isinstance(config, KafkaSourceConfig)
    assert config.topics == ["orders"]


def test_parse_stage_config_errors_are_relative_to_the_stage() -> None:
    with pytest.raises(SpecError) as raised:
        parse_stage_config("sink", StageSpec(type="kafka", config={"topic": "t"}))
    assert raised.value.errors == {"config.bootstrap_servers": ["field required"]}
    with pytest.raises(SpecError) as raised:
        parse_stage_config("transform", StageSpec(type="nope"))
    assert raised.value.errors == {
        "type": [f"unknown transform type 'nope'; expected one of: {known('transform')}"]
    }


def test_catalogue_lists_each_kind() -> None:
    assert {"kafka", "http"} <= set(plugin_types("source"))
    assert "filter" in plugin_types("transform")
    assert "kafka" in plugin_types("sink")
    models = [p.config_model for p in plugins()]
    assert {KafkaSourceConfig, HttpSourceConfig, FilterConfig, KafkaSinkConfig} <= set(models)
    assert get_plugin("sink", "kafka") is PLUGINS[("sink", "kafka")]
    with pytest.raises(UnknownPluginError, match="unknown sink type 'x'; expected one of: kafka"):
        get_plugin("sink", "x")


@pytest.mark.parametrize("plugin", plugins(), ids=lambda p: f"{p.kind}-{p.type}")
def test_every_config_field_has_a_title_and_description(plugin: Any) -> None:
    description = plugin.describe()
    schema = description["json_schema"]

    assert (
        description["kind"] == plugin.kind and description["title"] and description["description"]
    )
    assert schema["type"] == "object" and schema["additionalProperties"] is False
    for name, field in schema["properties"].items():
        assert field.get("title") and field.get("description"), name


def test_spec_package_never_loads_pyspark() -> None:
    code = (
        "import sys, pipelines.spec, pipelines.spec.patterns;"
        "pipelines.spec.validate_spec(" + repr(VALID) + ");"
        "sys.exit(1 if 'pyspark' in sys.modules else 0)"
    )
    assert subprocess.run([sys.executable, "-c", code], check=False).returncode == 0
