"""The plugin catalogue API lists the transform catalogue and validates its configs."""

from __future__ import annotations

import pytest

from pipelines.spec import get_plugin

pytestmark = pytest.mark.django_db

TRANSFORMS = [
    "filter",
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


def test_every_transform_is_listed_with_its_schema(api):
    body = api.get("/api/v1/plugins/", {"kind": "transform"}).json()
    listed = {item["type"]: item for item in body["results"]}
    assert set(TRANSFORMS) <= set(listed)
    for type_ in TRANSFORMS:
        plugin = get_plugin("transform", type_)
        assert listed[type_]["config_schema"] == plugin.config_model.model_json_schema()
        assert listed[type_]["title"] and listed[type_]["description"]


def test_an_input_transformer_template_error_is_answered_at_the_template(api):
    body = {"config": {"input_paths": {"a": "$.data.a"}, "template": "<a> <b>"}}
    response = api.post("/api/v1/plugins/transform/input_transformer/validate", body, format="json")
    assert response.status_code == 400
    assert response.json()["errors"]["config.template"] == [
        "placeholders without an input path: <b>"
    ]
