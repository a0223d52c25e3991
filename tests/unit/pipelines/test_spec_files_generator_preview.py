"""Specs of the files / generator sources and files / preview sinks; the generator's template
language (no Spark)."""

from __future__ import annotations

from typing import Any

import pytest

from pipelines.spec import SpecError, validate_spec
from pipelines.spec.configs import (
    FilesSinkConfig,
    FilesSourceConfig,
    GeneratorSourceConfig,
    PreviewSinkConfig,
)
from pipelines.spec.generator_template import (
    DEFAULT_TEMPLATE,
    Placeholder,
    TemplateError,
    TemplateString,
    parse_template,
)

PREVIEW = {"type": "preview", "config": {}}


def spec(source: dict[str, Any], sink: dict[str, Any] = PREVIEW) -> dict[str, Any]:
    return {"source": source, "sink": sink}


def errors_of(data: Any) -> dict[str, list[str]]:
    with pytest.raises(SpecError) as raised:
        validate_spec(data)
    return raised.value.errors


def test_generator_and_preview_take_empty_configs() -> None:
    valid = validate_spec(spec({"type": "generator"}))

    assert valid.source.config == {
        "rate": 10,
        "type": "sluice.demo.order",
        "source": "sluice://generator",
        "template": DEFAULT_TEMPLATE,
    }
    assert valid.sink.config == {"max_events": 100}
    assert GeneratorSourceConfig().template == DEFAULT_TEMPLATE
    assert GeneratorSourceConfig().template is not GeneratorSourceConfig().template


def test_files_configs_defaults() -> None:
    source = {"type": "files", "config": {"path": "in"}}
    sink = {"type": "files", "config": {"path": "out"}}
    valid = validate_spec(spec(source, sink))

    assert valid.source.config == {
        "path": "in",
        "format": "jsonl",
        "file_pattern": None,
        "max_files_per_trigger": None,
        "csv_header": True,
        "csv_delimiter": ",",
    }
    assert valid.sink.config == {
        "path": "out",
        "format": "parquet",
        "content": "data",
        "retry": None,
    }
    assert FilesSourceConfig(path="in") == FilesSourceConfig.model_validate(valid.source.config)
    assert FilesSinkConfig(path="o", format="jsonl", content="cloudevents").content == (
        "cloudevents"
    )


def test_bad_generator_configs_are_reported_per_field() -> None:
    config = {"rate": 0, "type": "", "source": 5, "template": {"a": "{{pick:x}}"}, "x": 1}
    errors = errors_of(spec({"type": "generator", "config": config}))

    assert errors == {
        "source.config.rate": ["input should be greater than or equal to 1"],
        "source.config.type": ["must not be empty"],
        "source.config.source": ["must be a string"],
        "source.config.template": [
            "data.a: {{pick:x}}: unknown placeholder 'pick'; expected seq, number, choice or time"
        ],
        "source.config.x": ["unknown field; expected one of: rate, type, source, template"],
    }
    assert "source.config.rate" in errors_of(spec({"type": "generator", "config": {"rate": 1e9}}))


def test_bad_files_and_preview_configs_are_reported_per_field() -> None:
    source = {
        "type": "files",
        "config": {"format": "xml", "max_files_per_trigger": 0, "csv_delimiter": '"'},
    }
    sink = {"type": "files", "config": {"path": "", "format": "csv", "content": "all"}}
    assert errors_of(spec(source, sink)) == {
        "source.config.path": ["field required"],
        "source.config.format": ["must be 'jsonl', 'csv' or 'parquet'"],
        "source.config.max_files_per_trigger": ["input should be greater than or equal to 1"],
        "source.config.csv_delimiter": ["must be one character other than a quote or a line break"],
        "sink.config.path": ["must not be empty"],
        "sink.config.format": ["must be 'parquet' or 'jsonl'"],
        "sink.config.content": ["must be 'data' or 'cloudevents'"],
    }
    preview = {"type": "preview", "config": {"max_events": 5000}}
    assert errors_of(spec({"type": "generator"}, preview)) == {
        "sink.config.max_events": ["input should be less than or equal to 1000"]
    }
    assert PreviewSinkConfig(max_events=1).max_events == 1


def test_template_strings_split_into_text_and_placeholders() -> None:
    parsed = parse_template({"a": ["x-{{seq}}-{{number:1:5:2}}", "{{choice:p,q}}", 1, None]})

    text, choice, number, null = parsed["a"]
    assert text == TemplateString(
        ("x-", Placeholder("seq", salt=0), "-", Placeholder("number", 1, 1, 5, 2))
    )
    assert text.single is None
    assert choice.single == Placeholder("choice", salt=2, choices=("p", "q"))
    assert (number, null) == (1, None)
    assert parse_template("{{time}}").single == Placeholder("time", salt=0)
    assert parse_template("plain").parts == ("plain",)


@pytest.mark.parametrize(
    ("template", "message"),
    [
        ("{{seq:1}}", "data: {{seq:1}}: {{seq}} takes no arguments"),
        ({"n": "{{number:5}}"}, "data.n: {{number:5}}: number takes MIN:MAX"),
        ({"n": ["{{number:9:1}}"]}, "data.n[0]: {{number:9:1}}: number takes MIN:MAX"),
        ("{{number:1:2:7}}", "data: {{number:1:2:7}}: DECIMALS must be 0 to 6"),
        ("{{number:1:2e3}}", "number takes MIN:MAX"),
        ("{{number:0:10000000000000}}", "both within +-1000000000000"),
        ("{{choice:}}", "choice needs at least one option"),
        ("{{}}", "unknown placeholder ''"),
    ],
)
def test_bad_placeholders_name_where_they_are(template: Any, message: str) -> None:
    with pytest.raises(TemplateError) as raised:
        parse_template(template)
    assert str(raised.value).startswith(message) or message in str(raised.value)
