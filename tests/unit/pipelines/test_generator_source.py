"""Generator source: rate ticks -> CloudEvents with data from a template."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from typing import Any

import pytest
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from pipelines.cloudevents import EVENT_COLUMNS, event_json
from pipelines.sources import SOURCES
from pipelines.sources.generator import read_generator, template_sql, ticks_to_events
from pipelines.spec.configs import GeneratorSourceConfig

pytestmark = pytest.mark.spark

TICK_TIME = datetime(2024, 6, 1, 8, 15, 30, tzinfo=UTC)


def ticks(spark: SparkSession, count: int) -> DataFrame:
    """A batch DataFrame shaped like Spark's rate source."""
    return spark.createDataFrame(
        [(TICK_TIME, seq) for seq in range(count)], "timestamp timestamp, value bigint"
    )


def generated(spark: SparkSession, count: int, **config: Any) -> list[dict[str, Any]]:
    events = ticks_to_events(ticks(spark, count), GeneratorSourceConfig(**config))
    rows = events.orderBy("origin_offset").select(event_json().alias("e")).collect()
    return [json.loads(row.e) for row in rows]


def test_registry_and_reader(spark: SparkSession) -> None:
    assert SOURCES["generator"].read is read_generator
    assert SOURCES["generator"].to_events is ticks_to_events
    stream = read_generator(spark, GeneratorSourceConfig(rate=3))
    assert stream.isStreaming and stream.columns == ["timestamp", "value"]


def test_default_config_generates_demo_orders(spark: SparkSession) -> None:
    events = ticks_to_events(ticks(spark, 200), GeneratorSourceConfig())
    assert tuple(events.columns) == EVENT_COLUMNS
    rows = [json.loads(row.e) for row in events.select(event_json().alias("e")).collect()]
    first = next(event for event in rows if event["id"] == "generator/0")

    assert {key: first[key] for key in first if key != "data"} == {
        "id": "generator/0",
        "source": "sluice://generator",
        "specversion": "1.0",
        "type": "sluice.demo.order",
        "time": "2024-06-01T08:15:30Z",
        "datacontenttype": "application/json",
    }
    orders = [event["data"] for event in rows]
    assert sorted(order["order_id"] for order in orders) == list(range(200))
    assert {order["region"] for order in orders} == {"eu-west", "us-east", "ap-south"}
    assert {order["status"] for order in orders} == {"created", "paid", "shipped"}
    assert {order["items"] for order in orders} == {1, 2, 3, 4, 5}
    assert all(5 <= order["amount"] <= 500 for order in orders)
    assert any(order["amount"] != int(order["amount"]) for order in orders)
    assert all(round(order["amount"], 2) == order["amount"] for order in orders)
    assert {order["currency"] for order in orders} == {"EUR"}
    customers = {order["customer"] for order in orders}
    assert all(c.startswith("customer-") and 1 <= int(c[9:]) <= 50 for c in customers)


def test_the_same_seq_gives_the_same_event(spark: SparkSession) -> None:
    assert generated(spark, 30) == generated(spark, 30)
    twins = {"a": "{{number:0:9}}", "b": "{{number:0:9}}"}
    picks = [event["data"] for event in generated(spark, 30, template=twins)]
    assert any(pick["a"] != pick["b"] for pick in picks)  # each placeholder picks on its own


def test_template_values_keep_their_types_and_text_is_escaped(spark: SparkSession) -> None:
    template = {
        "seq": "{{seq}}",
        "label": 'say "hi"\\{{seq}} \u00e9',
        "pick": '{{choice:a"b,c}}',
        "n": "{{number:-2:2}}",
        "d": "{{number:0:1:3}}",
        "when": "{{time}}",
        "nested": [{"k": None, "b": True, "f": 1.5}, "{{choice:only}}"],
        'weird key "\u00fc"': 0,
    }
    events = generated(spark, 40, template=template, type="t", source="/s", rate=1)
    data = [event["data"] for event in events]

    assert [d["seq"] for d in data] == list(range(40))
    assert data[3]["label"] == 'say "hi"\\3 \u00e9'
    assert {d["pick"] for d in data} == {'a"b', "c"}
    assert {d["n"] for d in data} == {-2, -1, 0, 1, 2}
    assert all(0 <= d["d"] <= 1 for d in data)
    assert {d["when"] for d in data} == {"2024-06-01T08:15:30Z"}
    assert data[0]["nested"] == [{"k": None, "b": True, "f": 1.5}, "only"]
    assert data[0]['weird key "\u00fc"'] == 0
    assert (events[0]["type"], events[0]["source"]) == ("t", "/s")


def test_a_template_without_placeholders_is_constant(spark: SparkSession) -> None:
    for template in ({}, [], "x", 3, None):
        value = spark.range(1).select(
            F.to_json(F.expr(template_sql(template, seq="id", time="current_timestamp()")))
        )
        assert json.loads(value.first()[0]) == template
