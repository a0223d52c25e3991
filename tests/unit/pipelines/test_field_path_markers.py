"""The config fields holding a path into the event are marked in the plugin catalogue's JSON
Schemas (``x-sluice-field-path``), so that the builder suggests the known fields there."""

from __future__ import annotations

from typing import Any

from pipelines.spec.fieldpaths import FIELD_PATH_KEY
from pipelines.spec.plugins import plugins

EXPECTED = {
    ("sink", "kafka", "key_field"): "read",
    ("sink", "kafka", "topic_field"): "read",
    ("transform", "cloudevents", "subject_field"): "read",
    ("transform", "extract", "field"): "read",
    ("transform", "set_key", "field"): "read",
    ("transform", "route", "field"): "read",
    ("transform", "insert", "field"): "write",
    ("transform", "enrich", "input"): "jsonpath",
    ("transform", "enrich", "into"): "write",
}


def _text(node: dict[str, Any]) -> bool:
    branches = node.get("anyOf", [node])
    return [b.get("type") for b in branches if b.get("type") != "null"] == ["string"]


def test_the_field_path_fields_are_marked_and_are_texts() -> None:
    found = {}
    for plugin in plugins():
        for name, node in plugin.json_schema.get("properties", {}).items():
            if FIELD_PATH_KEY in node:
                found[(plugin.kind, plugin.type, name)] = node[FIELD_PATH_KEY]
                assert _text(node), (plugin.type, name, node)
    assert found == EXPECTED
