"""The input transformer (EventBridge input paths + template) on small event DataFrames."""

from __future__ import annotations

from typing import Any

import pytest
from pyspark.sql import DataFrame
from pyspark.testing import assertDataFrameEqual

from pipelines.cloudevents import EVENT_COLUMNS
from pipelines.spec.configs.input_transformer import InputTransformerConfig
from pipelines.transforms import TRANSFORMS
from pipelines.transforms.input_transformer import transform_input
from tests.unit.pipelines.event_rows import data_of, events_frame

pytestmark = pytest.mark.spark

PATHS = {
    "id": "$.data.order.id",
    "sku": "$.data.items[0].sku",
    "items": "$.data.items",
    "total": "$.data.total",
    "source": "$.source",
    "time": "$.time",
    "note": "$.data.note",
    "tenant": "$.tenant",
    "missing": "$.data.nope",
}
ORDER = {
    "order": {"id": "o-1"},
    "items": [{"sku": 'a"b', "qty": 2}],
    "total": 12.5,
    "note": "line 1\nline 2",
}


@pytest.fixture
def orders(spark: Any) -> DataFrame:
    return events_frame(spark, [{"data": ORDER, "extensions": {"tenant": "acme"}}])


def render(events: DataFrame, template: str) -> Any:
    config = InputTransformerConfig(input_paths=PATHS, template=template)
    result = transform_input(events, config)
    assert tuple(result.columns) == EVENT_COLUMNS
    return data_of(result)[0]


def test_json_template_inserts_values_as_json(orders: DataFrame) -> None:
    template = (
        '{"order": <id>, "first": <sku>, "items": <items>, "total": <total>, '
        '"from": <source>, "at": <time>, "tenant": <tenant>, "gone": <missing>}'
    )
    assert render(orders, template) == {
        "order": "o-1",
        "first": 'a"b',
        "items": ORDER["items"],
        "total": 12.5,
        "from": "kafka://orders",
        "at": "2024-06-01T08:15:30Z",
        "tenant": "acme",
        "gone": None,
    }


def test_placeholders_inside_json_strings_are_escaped_text(orders: DataFrame) -> None:
    template = '{"message": "<id>: <sku> x<total> <note> <items><missing>"}'
    expected = 'o-1: a"b x12.5 line 1\nline 2 [{"qty":2,"sku":"a\\"b"}]'
    assert render(orders, template) == {"message": expected}


def test_a_json_string_template_yields_a_string(orders: DataFrame) -> None:
    assert render(orders, '"<id> is from <source>"') == "o-1 is from kafka://orders"


def test_a_text_template_yields_a_string_with_plain_values(orders: DataFrame) -> None:
    rendered = render(orders, "Order <id> (<sku>) costs <total>; <missing>end")
    assert rendered == 'Order o-1 (a"b) costs 12.5; end'


def test_a_json_array_template(orders: DataFrame) -> None:
    assert render(orders, "[<total>, <id>, true]") == [12.5, "o-1", True]


def test_only_data_changes(orders: DataFrame) -> None:
    result = transform_input(orders, InputTransformerConfig(template='{"a": 1}'))
    assertDataFrameEqual(result.drop("data"), orders.drop("data"))
    assert TRANSFORMS["input_transformer"] is transform_input
