"""The filter transform on event DataFrames (patterns over the CloudEvents JSON form)."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import pytest
from pyspark.sql import DataFrame
from pyspark.testing import assertDataFrameEqual

from pipelines.query import apply_transforms
from pipelines.sources.kafka import kafka_records_to_events
from pipelines.spec import StageSpec
from pipelines.spec.configs import FilterConfig, KafkaSourceConfig
from pipelines.transforms import TRANSFORMS
from pipelines.transforms.filter import filter_events_by_pattern

pytestmark = pytest.mark.spark

ORDERS = [
    {"orderId": "o-1", "total": 1499.99, "currency": "EUR", "items": [{"sku": "a", "qty": 2}]},
    {"orderId": "o-2", "total": 50, "currency": "USD", "items": [{"sku": "b", "qty": 1}]},
    {"orderId": "o-3", "total": 3e2, "currency": "EUR", "coupon": "X", "items": []},
]


@pytest.fixture
def json_events(kafka_records: Callable[..., Any]) -> DataFrame:
    records = kafka_records(
        [("orders", 0, offset, json.dumps(order).encode()) for offset, order in enumerate(ORDERS)]
    )
    config = KafkaSourceConfig(bootstrap_servers="h:1", topics=["orders"])
    return kafka_records_to_events(records, config).cache()


@pytest.fixture
def structured_events(kafka_records: Callable[..., Any]) -> DataFrame:
    def event(n: int, **attributes: Any) -> tuple[str, int, int, bytes]:
        base = {"specversion": "1.0", "id": f"e-{n}", "source": "/shop", "type": "order.placed"}
        return ("ce", 0, n, json.dumps({**base, **attributes}).encode())

    records = kafka_records(
        [
            event(1, subject="order/o-1-vip", tenant="acme", data={"total": 1000}),
            event(2, subject="order/o-2", tenant="globex", time="2024-06-02T00:00:00Z"),
            event(3, type="order.cancelled", data=None),
        ]
    )
    config = KafkaSourceConfig(bootstrap_servers="h:1", topics=["ce"], format="cloudevents")
    return kafka_records_to_events(records, config).cache()


def kept_ids(events: DataFrame, pattern: dict[str, Any]) -> list[str]:
    filtered = filter_events_by_pattern(events, FilterConfig(pattern=pattern))
    assert filtered.columns == events.columns
    return sorted(row.id for row in filtered.select("id").collect())


@pytest.mark.parametrize(
    ("pattern", "expected"),
    [
        ({"data": {"total": [{"numeric": [">=", 300]}]}}, ["orders/0/0", "orders/0/2"]),
        ({"data": {"total": [300]}}, ["orders/0/2"]),
        ({"data": {"currency": ["EUR"], "coupon": [{"exists": False}]}}, ["orders/0/0"]),
        ({"data": {"items": {"sku": ["b"]}}}, ["orders/0/1"]),
        ({"data": {"items": {"sku": ["a"], "qty": [1]}}}, []),
        ({"source": ["kafka://orders"], "id": [{"suffix": "/1"}]}, ["orders/0/1"]),
        ({"time": [{"prefix": "2024-06-01T08:15"}]}, ["orders/0/0", "orders/0/1", "orders/0/2"]),
        (
            {"subject": [{"exists": False}], "type": ["sluice.kafka.record"]},
            ["orders/0/0", "orders/0/1", "orders/0/2"],
        ),
        (
            {"$or": [{"data": {"orderId": ["o-2"]}}, {"data": {"coupon": ["X"]}}]},
            ["orders/0/1", "orders/0/2"],
        ),
    ],
)
def test_filter_on_wrapped_json_events(
    json_events: DataFrame, pattern: dict[str, Any], expected: list[str]
) -> None:
    assert kept_ids(json_events, pattern) == expected


@pytest.mark.parametrize(
    ("pattern", "expected"),
    [
        ({"type": [{"prefix": "order."}], "subject": [{"suffix": "-vip"}]}, ["e-1"]),
        ({"tenant": ["acme", "globex"]}, ["e-1", "e-2"]),
        ({"tenant": [{"exists": False}]}, ["e-3"]),
        ({"time": ["2024-06-02T00:00:00Z"]}, ["e-2"]),
        ({"data": [None]}, ["e-3"]),
        # exists works on leaves only: an object-valued data counts as absent, as in event-ruler
        ({"data": [{"exists": False}]}, ["e-1", "e-2"]),
        ({"data": {"total": [1000]}}, ["e-1"]),
    ],
)
def test_filter_on_structured_cloudevents(
    structured_events: DataFrame, pattern: dict[str, Any], expected: list[str]
) -> None:
    assert kept_ids(structured_events, pattern) == expected


def test_transforms_chain_in_order(json_events: DataFrame) -> None:
    stages = [
        StageSpec(type="filter", config={"pattern": {"data": {"currency": ["EUR"]}}}),
        StageSpec(
            type="filter", config={"pattern": {"data": {"total": [{"numeric": ["<", 1000]}]}}}
        ),
    ]
    assert TRANSFORMS["filter"] is filter_events_by_pattern
    result = apply_transforms(json_events, stages)
    expected = json_events.filter("id = 'orders/0/2'")
    assertDataFrameEqual(result.drop("data", "extensions"), expected.drop("data", "extensions"))
