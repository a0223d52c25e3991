"""Spec validation of the transform catalogue's configs (no Spark): shapes and error paths."""

from __future__ import annotations

from typing import Any

import pytest

from pipelines.spec import SpecError, StageSpec, parse_stage_config, plugin_types, validate_spec
from pipelines.spec.configs.cloudevents import CloudEventsConfig, FromField
from pipelines.spec.configs.fields import InsertConfig
from pipelines.spec.configs.input_transformer import InputTransformerConfig
from pipelines.spec.configs.sql import SqlConfig
from pipelines.spec.fieldpaths import parse_json_path
from pipelines.spec.input_template import Placeholder, parse_template

CATALOGUE = [
    "rename",
    "drop",
    "insert",
    "mask",
    "cast",
    "flatten",
    "extract",
    "set_key",
    "route",
    "input_transformer",
    "sql",
    "cloudevents",
]


def errors(type_: str, config: dict[str, Any]) -> dict[str, list[str]]:
    with pytest.raises(SpecError) as raised:
        parse_stage_config("transform", StageSpec(type=type_, config=config))
    return raised.value.errors


def test_every_transform_is_in_the_catalogue() -> None:
    assert set(CATALOGUE) <= set(plugin_types("transform"))


@pytest.mark.parametrize(
    ("type_", "config"),
    [
        ("rename", {"fields": {"data.a": "data.b.c"}}),
        ("drop", {"fields": ["data.secret"]}),
        ("insert", {"field": "data.x", "value": {"any": ["json", 1]}}),
        ("insert", {"field": "data.x", "from": "offset"}),
        ("mask", {"fields": ["data.card"], "replacement": "#"}),
        ("cast", {"fields": {"data.amount": "double", "data.n": "long"}}),
        ("flatten", {}),
        ("extract", {"field": "data.order"}),
        ("set_key", {"field": "data.customer_id"}),
        ("route", {"field": "data.region", "prefix": "orders-"}),
        ("input_transformer", {"input_paths": {"id": "$.data.id"}, "template": '{"i": <id>}'}),
        ("sql", {"expressions": ["data:amount::double AS amount", "subject"]}),
        ("cloudevents", {"action": "unwrap"}),
        ("cloudevents", {"action": "wrap", "type": "t", "subject_field": "data.id"}),
        ("cloudevents", {"action": "set", "attributes": {"type": "t", "x1": {"field": "id"}}}),
    ],
)
def test_valid_configs_normalize_to_themselves(type_: str, config: dict[str, Any]) -> None:
    parsed = parse_stage_config("transform", StageSpec(type=type_, config=config))
    again = parse_stage_config(
        "transform", StageSpec(type=type_, config=parsed.model_dump(mode="json"))
    )
    assert again == parsed


@pytest.mark.parametrize(
    ("type_", "config", "path", "message"),
    [
        ("rename", {"fields": {"subject": "data.s"}}, "config.fields", "inside data"),
        ("rename", {"fields": {}}, "config.fields", "must not be empty"),
        ("drop", {"fields": ["data..x"]}, "config.fields", "dotted field path"),
        ("insert", {"field": "data.x"}, "config", "either value"),
        ("insert", {"field": "data.x", "value": 1, "from": "topic"}, "config", "not both"),
        ("insert", {"field": "data.x", "from": "key"}, "config.from", "must be"),
        ("cast", {"fields": {"data.a": "int"}}, "config.fields.data.a", "must be"),
        ("flatten", {"delimiter": ""}, "config.delimiter", "must not be empty"),
        ("extract", {"field": "Data.x"}, "config.field", "must start with data"),
        ("set_key", {"field": "subject.x"}, "config.field", "only data has fields"),
        ("route", {"field": "data.r", "suffix": "x"}, "config.suffix", "unknown field"),
        ("route", {"field": "data.r", "prefix": "a/b"}, "config.prefix", "pattern"),
        (
            "input_transformer",
            {"input_paths": {"a": "$.data.a"}, "template": "<a> <b> <c>"},
            "config.template",
            "placeholders without an input path: <b>, <c>",
        ),
        (
            "input_transformer",
            {"input_paths": {"a": "data.a"}, "template": "<a>"},
            "config.input_paths",
            "must start with $",
        ),
        (
            "input_transformer",
            {"input_paths": {"a b": "$.a"}, "template": "x"},
            "config.input_paths",
            "names are",
        ),
        ("sql", {"expressions": ["1 AS a; DROP TABLE t"]}, "config.expressions[0]", "';'"),
        ("sql", {"expressions": ["id", "(SELECT 1) AS b"]}, "config.expressions[1]", "SELECT"),
        ("sql", {"expressions": ["data:amount::double * 2"]}, "config.expressions[0]", "AS <name>"),
        (
            "sql",
            {"expressions": ["amount * 2 AS a"]},
            "config.expressions[0]",
            "not an event column",
        ),
        (
            "sql",
            {"expressions": ["id", "reflect('java.lang.System', 'getenv', 'HOME') AS h"]},
            "config.expressions[1]",
            "reflect is not an allowed function",
        ),
        ("sql", {"expressions": ["'x AS y"]}, "config.expressions[0]", "unterminated"),
        ("sql", {"expressions": ["f(a AS b"]}, "config.expressions[0]", "parentheses"),
        ("sql", {"expressions": ["1 AS a", "2 AS a"]}, "config.expressions", "named a"),
        ("sql", {"expressions": []}, "config.expressions", "must not be empty"),
        ("cloudevents", {"action": "set"}, "config", "needs attributes"),
        ("cloudevents", {"action": "unwrap", "type": "t"}, "config", "cannot be used"),
        ("cloudevents", {"action": "zip"}, "config.action", "must be"),
        (
            "cloudevents",
            {"action": "set", "attributes": {"id": None}},
            "config.attributes",
            "cannot be removed",
        ),
        (
            "cloudevents",
            {"action": "set", "attributes": {"Bad-Name": "x"}},
            "config.attributes",
            "extension name",
        ),
        (
            "cloudevents",
            {"action": "set", "attributes": {"time": "noon"}},
            "config.attributes",
            "RFC 3339",
        ),
        (
            "cloudevents",
            {"action": "set", "attributes": {"subject": {"field": "x.y"}}},
            "config.attributes",
            "only data has fields",
        ),
    ],
)
def test_invalid_configs_name_the_field(
    type_: str, config: dict[str, Any], path: str, message: str
) -> None:
    found = errors(type_, config)
    assert path in found, found
    assert any(message in text for text in found[path]), found


def test_errors_are_located_in_the_spec() -> None:
    spec = {
        "source": {"type": "kafka", "config": {}},
        "transforms": [
            {"type": "drop", "config": {"fields": ["data.x"]}},
            {"type": "input_transformer", "config": {"template": "<nope>"}},
        ],
        "sink": {"type": "kafka", "config": {}},
    }
    with pytest.raises(SpecError) as raised:
        validate_spec(spec)
    assert raised.value.errors["transforms[1].config.template"] == [
        "placeholders without an input path: <nope>"
    ]
    assert not any(path.startswith("transforms[0]") for path in raised.value.errors)


def test_insert_from_is_spelled_from_in_schema_and_dump() -> None:
    config = InsertConfig.model_validate({"field": "data.t", "from": "topic"})
    assert config.model_dump(mode="json")["from"] == "topic"
    assert "from" in InsertConfig.model_json_schema()["properties"]


def test_template_parsing() -> None:
    template = parse_template('{"a": <a>, "b": "x <b> \\" <c>"}')
    assert template.is_json
    assert [p for p in template.pieces if isinstance(p, Placeholder)] == [
        Placeholder("a", False),
        Placeholder("b", True),
        Placeholder("c", True),
    ]
    assert not parse_template("Hello <name>!").is_json
    assert parse_template("a < b").pieces == ("a < b",)


def test_json_paths() -> None:
    assert parse_json_path("$.data.items[0]['a b'].c") == ("data", "items", 0, "a b", "c")
    for bad in ("data.x", "$", "$[0]", "$..x", "$.a[-1]"):
        with pytest.raises(ValueError):
            parse_json_path(bad)


def test_wrap_is_set_of_type_source_and_subject() -> None:
    config = CloudEventsConfig(action="wrap", source="/s", subject_field="data.id")
    assert config.attribute_values() == {"source": "/s", "subject": FromField(field="data.id")}


def test_configs_have_titles() -> None:
    for model in (InputTransformerConfig, SqlConfig, CloudEventsConfig, InsertConfig):
        schema = model.model_json_schema()
        assert schema["title"] and schema["additionalProperties"] is False
