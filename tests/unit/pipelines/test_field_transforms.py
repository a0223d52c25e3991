"""Field-operation transforms (rename, drop, insert, mask, cast, flatten, extract, set_key,
route) on small event DataFrames."""

from __future__ import annotations

import re
from typing import Any

import pytest
from pyspark.sql import DataFrame
from pyspark.testing import assertDataFrameEqual

from pipelines.cloudevents import EVENT_COLUMNS
from pipelines.query import apply_transforms
from pipelines.spec import StageSpec
from pipelines.spec.configs.fields import (
    CastConfig,
    DropConfig,
    ExtractConfig,
    FlattenConfig,
    InsertConfig,
    MaskConfig,
    RenameConfig,
    RouteConfig,
    SetKeyConfig,
)
from pipelines.transforms import TRANSFORMS
from pipelines.transforms.fields import (
    cast_fields,
    drop_fields,
    extract_field,
    flatten_data,
    insert_field,
    mask_fields,
    rename_fields,
    route_by_field,
    set_partition_key,
)
from tests.unit.pipelines.event_rows import data_of, events_frame, failures, json_forms

pytestmark = pytest.mark.spark

ORDER = {
    "order": {"id": "o-1", "total": "12.50", "paid": True, "lines": [1, 2]},
    "customer": {"id": 42, "card": {"number": "4111", "cvc": 123}},
    "region": "eu-west",
    "note": None,
}


@pytest.fixture
def orders(spark: Any) -> DataFrame:
    return events_frame(spark, [{"data": ORDER}, {"data": {"region": "us", "x": 1}}])


def only_data(events: DataFrame) -> Any:
    assert tuple(events.columns) == EVENT_COLUMNS
    return data_of(events)


def test_rename_moves_values_between_levels(orders: DataFrame) -> None:
    config = RenameConfig(fields={"data.order.id": "data.order_id", "data.x": "data.y.z"})
    result = only_data(rename_fields(orders, config))
    assert result[0]["order_id"] == "o-1" and "id" not in result[0]["order"]
    assert result[1] == {"region": "us", "y": {"z": 1}}


def test_rename_keeps_everything_but_data(orders: DataFrame) -> None:
    renamed = rename_fields(orders, RenameConfig(fields={"data.region": "data.area"}))
    assertDataFrameEqual(renamed.drop("data"), orders.drop("data"))


def test_drop_removes_nested_and_top_level_fields(orders: DataFrame) -> None:
    config = DropConfig(fields=["data.customer.card", "data.note", "data.missing.deep"])
    result = only_data(drop_fields(orders, config))
    assert result[0]["customer"] == {"id": 42}
    assert "note" not in result[0]
    assert result[1] == {"region": "us", "x": 1}


@pytest.mark.parametrize(
    ("config", "expected"),
    [
        ({"field": "data.channel", "value": "web"}, "web"),
        ({"field": "data.meta.tags", "value": ["a", {"b": None}]}, ["a", {"b": None}]),
        ({"field": "data.meta.nothing", "value": None}, None),
        ({"field": "data.meta.topic", "from": "topic"}, "orders"),
        ({"field": "data.meta.offset", "from": "offset"}, 0),
        ({"field": "data.meta.id", "from": "id"}, "orders/0/0"),
        ({"field": "data.meta.time", "from": "time"}, "2024-06-01T08:15:30Z"),
        ({"field": "data.meta.ts", "from": "timestamp"}, "2024-06-01T08:15:30Z"),
    ],
)
def test_insert_static_and_metadata_values(
    orders: DataFrame, config: dict[str, Any], expected: Any
) -> None:
    inserted = insert_field(orders, InsertConfig.model_validate(config))
    result = only_data(inserted)[0]
    keys = config["field"].split(".")[1:]
    node = result
    for key in keys[:-1]:
        node = node[key]
    assert keys[-1] in node and node[keys[-1]] == expected
    assert result["order"] == ORDER["order"]


def test_insert_replaces_an_existing_value(orders: DataFrame) -> None:
    config = InsertConfig.model_validate({"field": "data.order.id", "value": 7})
    assert only_data(insert_field(orders, config))[0]["order"]["id"] == 7


def test_mask_keeps_json_types(orders: DataFrame) -> None:
    config = MaskConfig(
        fields=[
            "data.customer.card.number",
            "data.customer.card.cvc",
            "data.order.paid",
            "data.order.lines",
            "data.note",
            "data.absent",
        ],
        replacement="XXXX",
    )
    result = only_data(mask_fields(orders, config))[0]
    assert result["customer"]["card"] == {"number": "XXXX", "cvc": 0}
    assert result["order"]["paid"] is False and result["order"]["lines"] == []
    assert result["note"] is None and "absent" not in result


def test_cast_converts_values(orders: DataFrame) -> None:
    config = CastConfig(
        fields={
            "data.order.total": "double",
            "data.customer.id": "string",
            "data.order.paid": "long",
            "data.note": "boolean",
        }
    )
    result = only_data(cast_fields(orders, config))[0]
    assert result["order"]["total"] == 12.5
    assert result["customer"]["id"] == "42"
    assert result["order"]["paid"] == 1
    assert result["note"] is None


def test_cast_failure_names_stage_field_and_event(spark: Any) -> None:
    events = events_frame(spark, [{"data": {"amount": "lots"}}, {"data": {"amount": "2.5"}}])
    result = cast_fields(events, CastConfig(fields={"data.amount": "double"}))
    [(error_class, message)] = failures(result)
    assert error_class == "CastError"
    assert re.search(r"cast: cannot cast .*data.amount.*orders/0/0", message)
    assert data_of(result) == [{"amount": "lots"}, {"amount": 2.5}]


def test_flatten_joins_nested_keys(orders: DataFrame) -> None:
    result = only_data(flatten_data(orders, FlattenConfig(delimiter="_")))[0]
    assert result == {
        "order_id": "o-1",
        "order_total": "12.50",
        "order_paid": True,
        "order_lines": [1, 2],
        "customer_id": 42,
        "customer_card_number": "4111",
        "customer_card_cvc": 123,
        "region": "eu-west",
        "note": None,
    }


def test_extract_makes_a_sub_value_the_data(orders: DataFrame) -> None:
    result = only_data(extract_field(orders, ExtractConfig(field="data.order")))
    assert result == [ORDER["order"], None]


def test_set_key_and_route_set_extensions(orders: DataFrame) -> None:
    keyed = set_partition_key(orders, SetKeyConfig(field="data.region"))
    routed = route_by_field(keyed, RouteConfig(field="data.region", prefix="orders-"))
    forms = json_forms(routed)
    assert [form["partitionkey"] for form in forms] == ["eu-west", "us"]
    assert [form["sluicetopic"] for form in forms] == ["orders-eu-west", "orders-us"]


def test_set_key_from_an_attribute_and_a_number(orders: DataFrame) -> None:
    by_source = json_forms(set_partition_key(orders, SetKeyConfig(field="source")))
    assert by_source[0]["partitionkey"] == "kafka://orders"
    by_number = set_partition_key(orders.limit(1), SetKeyConfig(field="data.customer.id"))
    assert json_forms(by_number)[0]["partitionkey"] == "42"


def test_route_fails_on_a_missing_value(orders: DataFrame) -> None:
    marked = failures(route_by_field(orders, RouteConfig(field="data.order.id")))
    assert [error_class for error_class, _ in marked] == ["MissingField"]
    assert re.search(r"route: the event has no value.*orders/0/1", marked[0][1])


@pytest.mark.parametrize("data", [[1, 2], "text", None])
def test_edits_fail_on_data_that_is_not_an_object(spark: Any, data: Any) -> None:
    events = events_frame(spark, [{"id": "e-9", "data": data}])
    result = drop_fields(events, DropConfig(fields=["data.a"]))
    [(error_class, message)] = failures(result)
    assert error_class == "NotAnObject"
    assert re.search(r"drop: data is not a JSON object.*data.a.*e-9", message)
    assert data_of(result) == [data]


def test_edits_fail_on_events_without_data(spark: Any) -> None:
    events = events_frame(spark, [{"id": "e-0"}])
    [(_, message)] = failures(mask_fields(events, MaskConfig(fields=["data.a"])))
    assert re.search(r"mask: data is not a JSON object.*e-0", message)


def test_field_transforms_are_registered() -> None:
    assert TRANSFORMS["rename"] is rename_fields
    assert TRANSFORMS["drop"] is drop_fields
    assert TRANSFORMS["insert"] is insert_field
    assert TRANSFORMS["mask"] is mask_fields
    assert TRANSFORMS["cast"] is cast_fields
    assert TRANSFORMS["flatten"] is flatten_data
    assert TRANSFORMS["extract"] is extract_field
    assert TRANSFORMS["set_key"] is set_partition_key
    assert TRANSFORMS["route"] is route_by_field


def test_a_chain_of_catalogue_transforms_through_the_builder(orders: DataFrame) -> None:
    stages = [
        {"type": "drop", "config": {"fields": ["data.customer.card"]}},
        {"type": "rename", "config": {"fields": {"data.customer.id": "data.customer_id"}}},
        {"type": "cast", "config": {"fields": {"data.customer_id": "string"}}},
        {"type": "set_key", "config": {"field": "data.customer_id"}},
        {
            "type": "input_transformer",
            "config": {
                "input_paths": {"c": "$.data.customer_id", "r": "$.data.region"},
                "template": '{"customer": <c>, "text": "<c> in <r>"}',
            },
        },
        {"type": "sql", "config": {"expressions": ["data:customer::string AS c", "id"]}},
    ]
    result = apply_transforms(orders.limit(1), [StageSpec.model_validate(s) for s in stages])
    [form] = json_forms(result)
    assert form["data"] == {"c": "42", "id": "orders/0/0"}
    assert form["partitionkey"] == "42"
