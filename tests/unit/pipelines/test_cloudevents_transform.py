"""The cloudevents transform (wrap, unwrap, set) on small event DataFrames."""

from __future__ import annotations

import json
import re
from datetime import UTC, datetime
from typing import Any

import pytest
from pyspark.sql import DataFrame

from pipelines.cloudevents import EVENT_COLUMNS
from pipelines.spec.configs.cloudevents import CloudEventsConfig
from pipelines.transforms import TRANSFORMS
from pipelines.transforms.cloudevents import transform_cloudevents
from tests.unit.pipelines.event_rows import events_frame, failures, json_forms

pytestmark = pytest.mark.spark

INNER = {
    "specversion": "1.0",
    "id": "inner-1",
    "source": "/shop",
    "type": "order.placed",
    "subject": "o-1",
    "time": "2024-06-02T10:00:00Z",
    "tenant": "acme",
    "data": {"total": 3},
}


def run(events: DataFrame, config: dict[str, Any]) -> list[dict[str, Any]]:
    result = transform_cloudevents(events, CloudEventsConfig.model_validate(config))
    assert tuple(result.columns) == EVENT_COLUMNS
    return json_forms(result)


def test_wrap_sets_type_source_and_subject(spark: Any) -> None:
    events = events_frame(spark, [{"data": {"order_id": 17}}])
    [form] = run(
        events,
        {
            "action": "wrap",
            "type": "order.placed",
            "source": "/shop",
            "subject_field": "data.order_id",
        },
    )
    assert (form["type"], form["source"], form["subject"]) == ("order.placed", "/shop", "17")
    assert form["id"] == "orders/0/0" and form["data"] == {"order_id": 17}


def test_set_static_field_and_removed_attributes(spark: Any) -> None:
    events = events_frame(
        spark,
        [
            {
                "data": {"order_id": "o-9", "at": "2024-01-02T03:04:05Z", "n": 5},
                "subject": "old",
                "extensions": {"gone": "x"},
            }
        ],
    )
    [form] = run(
        events,
        {
            "action": "set",
            "attributes": {
                "type": "order.placed",
                "id": {"field": "data.order_id"},
                "time": {"field": "data.at"},
                "subject": None,
                "gone": None,
                "tenant": "acme",
                "count": {"field": "data.n"},
                "dataschema": {"field": "data.missing"},
            },
        },
    )
    assert form["type"] == "order.placed" and form["id"] == "o-9"
    assert form["time"] == "2024-01-02T03:04:05Z"
    assert "subject" not in form and "gone" not in form and "dataschema" not in form
    assert form["tenant"] == "acme" and form["count"] == 5


def test_set_a_static_time(spark: Any) -> None:
    [form] = run(
        events_frame(spark, [{"data": {}}]),
        {"action": "set", "attributes": {"time": "2024-06-01T08:00:00+02:00"}},
    )
    assert form["time"] == "2024-06-01T06:00:00Z"


def test_set_a_required_attribute_from_a_missing_field_fails(spark: Any) -> None:
    events = events_frame(spark, [{"id": "e-1", "data": {}}])
    config = CloudEventsConfig.model_validate(
        {"action": "set", "attributes": {"type": {"field": "data.kind"}}}
    )
    [(error_class, message)] = failures(transform_cloudevents(events, config))
    assert error_class == "MissingField"
    assert re.search(r"cloudevents: .*type.*data.kind.*e-1", message)


def test_unwrap_lifts_the_inner_event(spark: Any) -> None:
    events = events_frame(spark, [{"data": INNER, "extensions": {"outer": 1}}])
    [form] = run(events, {"action": "unwrap"})
    assert form == INNER
    result = transform_cloudevents(events, CloudEventsConfig(action="unwrap"))
    row = result.select("time", "origin_offset").first()
    assert row is not None and row.origin_offset == 0
    assert row.time == datetime(2024, 6, 2, 10, tzinfo=UTC).astimezone().replace(tzinfo=None)


@pytest.mark.parametrize(
    ("data", "problem"),
    [
        ([1], "data is not a JSON object"),
        ({**INNER, "type": ""}, "data has no type attribute"),
        ({**INNER, "specversion": "0.3"}, "data is not a CloudEvents 1.0 event"),
        ({**INNER, "time": "soon"}, "time is not an RFC 3339 timestamp"),
    ],
)
def test_unwrap_fails_on_what_is_not_a_cloudevent(spark: Any, data: Any, problem: str) -> None:
    events = events_frame(spark, [{"id": "e-5", "data": data}])
    result = transform_cloudevents(events, CloudEventsConfig(action="unwrap"))
    [(error_class, message)] = failures(result)
    assert error_class == "InvalidCloudEvent"
    assert message == f"cloudevents: {problem} (field data, event e-5)"
    # The failed event keeps its columns, and the failure the event the stage received.
    [form] = json_forms(result)
    assert form["id"] == "e-5" and form["data"] == data
    assert json.loads(result.first().failure.event) == form


def test_registered() -> None:
    assert TRANSFORMS["cloudevents"] is transform_cloudevents


def test_event_json_without_extensions_is_the_variant_form_exactly(spark: Any) -> None:
    """event_json() writes events without extensions from a struct (fast), or with Sluice's
    Spark functions; the text must be byte for byte what the VARIANT form gives (with
    extensions too)."""
    from pyspark.sql import functions as F

    from pipelines import native
    from pipelines.cloudevents import event_json, event_variant

    tricky = [
        {"data": {"b": 1, "a": "\u2028 \x00 ✓", "nested": {"z": [1, None, {"k": "v"}]}}},
        {"data": {}},
        {"data": None},
        {},
        {"data": [1, 2.5, "x"]},
        {"data": "text"},
        {"data": {"big": 12345678901234567890, "tiny": 1e-300}},
        {"subject": "s", "dataschema": "https://x/s", "data": {"q": '"quoted"'}},
        {"time": datetime(1969, 12, 31, 23, 59, 59, 123456, tzinfo=UTC), "data": 1},
    ]
    events = events_frame(spark, tricky)
    zone = native.json_zone(events)
    assert zone is not None  # the test session has Sluice's Spark functions
    extended = events.withColumn(
        "extensions", F.expr("map('partitionkey', CAST('k\"1' AS VARIANT), 'n', parse_json('2'))")
    )
    # A value JSON has no literal for (a DATE), a NULL one (left out), names sorting before
    # and among the attributes, a nested value.
    unusual = events.withColumn(
        "extensions",
        F.expr(
            "map('aaa', CAST(DATE '2024-01-02' AS VARIANT), 'gone', CAST(NULL AS VARIANT), "
            "'sluicereplay', CAST('r-1' AS VARIANT), 'ttl', parse_json('{\"b\":[1,{\"a\":null}]}'))"
        ),
    )
    for frame in (events, extended, unusual):
        rows = frame.select(
            event_json().alias("fast"),
            event_json(zone).alias("native"),
            F.to_json(event_variant()).alias("slow"),
        )
        for row in rows.collect():
            assert row.fast == row.native == row.slow
