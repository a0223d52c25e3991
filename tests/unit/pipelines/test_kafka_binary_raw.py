"""Kafka binary-mode CloudEvents and raw records, both directions, and key / topic choice."""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from typing import Any

import pytest
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from pipelines.cloudevents import event_json
from pipelines.sinks.kafka import events_to_kafka_records, mark_bad_topics
from pipelines.sources.kafka import kafka_records_to_events
from pipelines.spec.configs import KafkaSinkConfig, KafkaSourceConfig
from tests.unit.pipelines.conftest import KAFKA_SCHEMA, RECORD_TIME
from tests.unit.pipelines.event_rows import failures

pytestmark = pytest.mark.spark

HEADERS_SCHEMA = f"{KAFKA_SCHEMA}, headers array<struct<key: string, value: binary>>"
BINARY = KafkaSourceConfig(bootstrap_servers="k:1", topics=["ce"], format="cloudevents-binary")
RAW = KafkaSourceConfig(bootstrap_servers="k:1", topics=["logs"], format="raw")
REQUIRED = [
    ("ce_specversion", b"1.0"),
    ("ce_id", b"e-1"),
    ("ce_source", b"/orders"),
    ("ce_type", b"order.created"),
]

Header = tuple[str, bytes | None]


@pytest.fixture
def records_with_headers(spark: SparkSession) -> Callable[..., DataFrame]:
    def build(rows: list[tuple[int, bytes | None, list[Header]]]) -> DataFrame:
        data = [(None, value, "ce", 0, o, RECORD_TIME, 0, headers) for o, value, headers in rows]
        return spark.createDataFrame(data, HEADERS_SCHEMA)

    return build


def as_json(events: DataFrame) -> list[dict[str, Any]]:
    return [json.loads(row.j) for row in events.select(event_json().alias("j")).collect()]


def test_binary_headers_become_attributes_and_extensions(
    records_with_headers: Callable[..., DataFrame],
) -> None:
    headers = [
        *REQUIRED,
        ("ce_time", b"2024-06-01T10:15:30.5+02:00"),
        ("ce_subject", b"o-1"),
        ("CE_TraceParent", b"00-abc-01"),
        ("content-type", b"application/json; charset=utf-8"),
        ("not-ce", b"ignored"),
    ]
    records = records_with_headers([(7, b'{"total": 12.5}', headers)])
    [event] = as_json(kafka_records_to_events(records, BINARY))
    assert event == {
        "specversion": "1.0",
        "id": "e-1",
        "source": "/orders",
        "type": "order.created",
        "time": "2024-06-01T08:15:30.500Z",
        "subject": "o-1",
        "datacontenttype": "application/json; charset=utf-8",
        "traceparent": "00-abc-01",
        "data": {"total": 12.5},
    }


def test_binary_values_by_content_type(records_with_headers: Callable[..., DataFrame]) -> None:
    rows = [
        (1, b"[1, 2]", REQUIRED),  # no content type: JSON
        (2, b"hello", [*REQUIRED, ("content-type", b"text/plain")]),
        (3, None, [*REQUIRED, ("ce_id", b"e-3")]),  # no data; the last header wins
        (4, b'{"a":1}', [*REQUIRED, ("content-type", b"application/vnd.x+json")]),
    ]
    events = as_json(kafka_records_to_events(records_with_headers(rows), BINARY))
    assert [event.get("data", "absent") for event in events] == [
        [1, 2],
        "hello",
        "absent",
        {"a": 1},
    ]
    assert events[2]["id"] == "e-3"


@pytest.mark.parametrize(
    ("headers", "value", "problem"),
    [
        (REQUIRED[1:], b"{}", "not a binary-mode CloudEvent: header 'ce_specversion' is missing"),
        ([*REQUIRED[:3]], b"{}", "not a binary-mode CloudEvent: header 'ce_type' is missing"),
        ([*REQUIRED, ("ce_specversion", b"0.3")], b"{}", "unsupported CloudEvents specversion"),
        ([*REQUIRED, ("ce_time", b"noon")], b"{}", "header 'ce_time' is not an RFC 3339"),
        (REQUIRED, b"{oops", "value is not valid JSON (content-type absent)"),
        (
            [*REQUIRED, ("content-type", b"text/json")],
            b"{oops",
            "value is not valid JSON (content-type text/json)",
        ),
    ],
)
def test_unusable_binary_records_fail_naming_the_record(
    records_with_headers: Callable[..., DataFrame],
    headers: list[Header],
    value: bytes,
    problem: str,
) -> None:
    events = kafka_records_to_events(records_with_headers([(42, value, headers)]), BINARY)
    [(_, message)] = failures(events)
    assert f"Kafka record topic=ce partition=0 offset=42: {problem}" in message


def test_raw_values_are_text_and_never_fail(kafka_records: Callable[..., Any]) -> None:
    records = kafka_records(
        [("logs", 0, 1, b"not json {"), ("logs", 0, 2, b'{"a": 1}'), ("logs", 0, 3, None)]
    )
    events = as_json(kafka_records_to_events(records, RAW))
    assert [(event["id"], event["data"]) for event in events] == [
        ("logs/0/1", "not json {"),
        ("logs/0/2", '{"a": 1}'),
    ]
    assert events[0]["datacontenttype"] == "text/plain; charset=utf-8"


def test_binary_round_trip_through_the_sink(records_with_headers: Callable[..., DataFrame]) -> None:
    headers = [*REQUIRED, ("ce_time", b"2024-06-01T08:15:30Z"), ("ce_retries", b"2")]
    rows = [(1, b'{"n": 1}', headers), (2, b"hi", [*REQUIRED, ("content-type", b"text/plain")])]
    events = kafka_records_to_events(records_with_headers(rows), BINARY)
    sink = KafkaSinkConfig(bootstrap_servers="k:1", topic="out", format="cloudevents-binary")
    out = events_to_kafka_records(events, sink).collect()

    assert [row.value for row in out] == [b'{"n":1}', b"hi"]
    assert {h.key: h.value for h in out[0].headers} == {
        "ce_specversion": b"1.0",
        "ce_id": b"e-1",
        "ce_source": b"/orders",
        "ce_type": b"order.created",
        "ce_time": b"2024-06-01T08:15:30Z",
        "ce_retries": b"2",
    }
    assert dict((h.key, h.value) for h in out[1].headers)["content-type"] == b"text/plain"
    # Read back what the sink wrote: the same events.
    again = [(n, row.value, [(h.key, h.value) for h in row.headers]) for n, row in enumerate(out)]
    reread = as_json(kafka_records_to_events(records_with_headers(again), BINARY))
    assert reread == as_json(events)


def sink_rows(events: DataFrame, **config: Any) -> list[tuple[str, bytes | None]]:
    sink = KafkaSinkConfig.model_validate({"bootstrap_servers": "k:1", "topic": "out", **config})
    return [(row.topic, row.key) for row in events_to_kafka_records(events, sink).collect()]


@pytest.fixture
def routed_events(kafka_records: Callable[..., Any]) -> DataFrame:
    source = KafkaSourceConfig(bootstrap_servers="k:1", topics=["in"])
    values = [b'{"customer": {"id": 7}, "region": "eu"}', b'{"customer": {}, "region": "us"}']
    records = kafka_records([("in", 0, n, value) for n, value in enumerate(values)])
    events = kafka_records_to_events(records, source)
    extensions = F.when(
        F.col("origin_offset") == 1,
        F.expr("map('partitionkey', CAST('pk' AS VARIANT), 'sluicetopic', CAST('t-x' AS VARIANT))"),
    ).otherwise(F.col("extensions"))
    return events.withColumn("extensions", extensions)


def test_key_and_topic_defaults_honour_partitionkey_and_sluicetopic(
    routed_events: DataFrame,
) -> None:
    assert sink_rows(routed_events) == [("out", b"in/0/0"), ("t-x", b"pk")]


def test_key_and_topic_from_fields_fall_back_when_absent(routed_events: DataFrame) -> None:
    rows = sink_rows(routed_events, key_field="data.customer.id", topic_field="data.region")
    assert rows == [("eu", b"7"), ("us", b"pk")]
    assert sink_rows(routed_events, key_field="data.customer")[0][1] == b'{"id":7}'


def test_an_illegal_topic_fails_naming_the_event(routed_events: DataFrame) -> None:
    sink = KafkaSinkConfig(bootstrap_servers="k:1", topic="out", topic_field="data.customer")
    marked = failures(mark_bad_topics(routed_events, sink))
    # data.customer is {"id":7} in one event, {} in the other: neither is a topic name.
    assert [error_class for error_class, _ in marked] == ["InvalidTopic", "InvalidTopic"]
    assert re.search(r"event in/0/0: \{.*\} is not a valid Kafka topic name", marked[0][1])
