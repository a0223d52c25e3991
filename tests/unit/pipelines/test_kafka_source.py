"""Kafka records -> CloudEvents (``format: json`` and ``format: cloudevents``), on batch data."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import pytest
from pyspark.errors import PySparkException
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.testing import assertDataFrameEqual

from pipelines.cloudevents import EVENT_COLUMNS, event_json, time_text
from pipelines.errors import fail_fast, failed_or
from pipelines.sources import SOURCES
from pipelines.sources.kafka import (
    FETCH_DEFAULTS,
    MICRO_BATCH_FETCH,
    kafka_records_to_events,
    kafka_source_options,
    read_kafka,
)
from pipelines.spec.configs import KafkaSourceConfig
from tests.unit.pipelines.conftest import RECORD_TIME, RECORD_TIME_TEXT
from tests.unit.pipelines.event_rows import failures

pytestmark = pytest.mark.spark

JSON_SOURCE = KafkaSourceConfig(bootstrap_servers="localhost:9092", topics=["orders", "refunds"])
CE_SOURCE = KafkaSourceConfig(
    bootstrap_servers="localhost:9092", topics=["ce"], format="cloudevents"
)


def readable(events: DataFrame) -> DataFrame:
    """Events with VARIANT columns rendered as JSON text, for comparisons."""
    return events.select(
        *(c for c in EVENT_COLUMNS if c not in ("data", "extensions", "origin_payload", "failure")),
        F.to_json("data").alias("data"),
        F.to_json(F.to_variant_object("extensions")).alias("extensions"),
    )


def test_source_options_and_registry() -> None:
    assert kafka_source_options(JSON_SOURCE) == {
        "kafka.bootstrap.servers": "localhost:9092",
        "kafka.default.api.timeout.ms": "15000",
        "kafka.request.timeout.ms": "10000",
        "subscribe": "orders,refunds",
        "startingOffsets": "latest",
        **FETCH_DEFAULTS,
        **MICRO_BATCH_FETCH,
    }
    assert SOURCES["kafka"].read is read_kafka
    assert SOURCES["kafka"].to_events is kafka_records_to_events


def test_plain_json_records_are_wrapped(
    spark: SparkSession, kafka_records: Callable[..., Any]
) -> None:
    records = kafka_records(
        [("orders", 0, 41, b'{"amount": 5, "tags": ["a"]}'), ("refunds", 3, 7, b"[1, null]")]
    )
    events = kafka_records_to_events(records, JSON_SOURCE)

    assert tuple(events.columns) == EVENT_COLUMNS
    expected = spark.createDataFrame(
        [
            ("orders/0/41", "kafka://orders", "orders", 0, 41, '{"amount":5,"tags":["a"]}'),
            ("refunds/3/7", "kafka://refunds", "refunds", 3, 7, "[1,null]"),
        ],
        "id string, source string, origin_topic string, origin_partition int, "
        "origin_offset bigint, data string",
    ).select(
        "id",
        "source",
        F.lit("1.0").alias("specversion"),
        F.lit("sluice.kafka.record").alias("type"),
        F.lit(None).cast("string").alias("subject"),
        F.lit(RECORD_TIME).alias("time"),
        F.lit("application/json").alias("datacontenttype"),
        F.lit(None).cast("string").alias("dataschema"),
        "origin_topic",
        "origin_partition",
        "origin_offset",
        F.lit(RECORD_TIME).alias("origin_timestamp"),
        "data",
        F.lit("{}").alias("extensions"),
    )
    assertDataFrameEqual(readable(events), expected)


def test_tombstones_are_skipped(kafka_records: Callable[..., Any]) -> None:
    records = kafka_records([("orders", 0, 1, None), ("orders", 0, 2, b'"kept"')])
    ids = [row.id for row in kafka_records_to_events(records, JSON_SOURCE).collect()]
    assert ids == ["orders/0/2"]


@pytest.mark.parametrize("value", [b'{"amount": ', b"", b"not json at all"])
def test_invalid_json_fails_the_event_naming_the_record(
    kafka_records: Callable[..., Any], value: bytes
) -> None:
    records = kafka_records([("orders", 0, 1, b"{}"), ("orders", 3, 42, value)])
    events = kafka_records_to_events(records, JSON_SOURCE)
    [(error_class, message)] = failures(events)
    assert error_class == "InvalidJson"
    assert "Kafka record topic=orders partition=3 offset=42: value is not valid JSON" in message
    assert f"(value starts with: {value.decode()[:20]}" in message
    failed = events.filter(F.col("failure").isNotNull()).first()
    assert failed.origin_payload == value.decode()
    assert failed.failure.event is None  # it never became an event
    # The error gate fails the query on it, even behind a filter on attributes only.
    with pytest.raises(PySparkException, match="offset=42: value is not valid JSON"):
        fail_fast(events.filter(failed_or(F.col("source") == "nowhere"))).collect()


def structured(**attributes: Any) -> bytes:
    event = {"specversion": "1.0", "id": "e-1", "source": "/orders", "type": "order.created"}
    return json.dumps({**event, **attributes}).encode()


def test_structured_cloudevents_are_read(kafka_records: Callable[..., Any]) -> None:
    value = structured(
        subject="o-1",
        time="2024-06-01T10:15:30.5+02:00",
        datacontenttype="application/json",
        traceparent="00-abc-01",
        retries=2,
        data={"total": 12.5},
    )
    events = kafka_records_to_events(kafka_records([("ce", 1, 9, value)]), CE_SOURCE)
    row = readable(events).withColumn("time_text", time_text("time")).first()

    assert (row.id, row.source, row.type, row.subject) == ("e-1", "/orders", "order.created", "o-1")
    assert row.time_text == "2024-06-01T08:15:30.500Z"
    assert (row.origin_topic, row.origin_partition, row.origin_offset) == ("ce", 1, 9)
    assert json.loads(row.data) == {"total": 12.5}
    assert json.loads(row.extensions) == {"traceparent": "00-abc-01", "retries": 2}


def test_event_json_is_the_structured_form(kafka_records: Callable[..., Any]) -> None:
    records = kafka_records([("ce", 0, 1, structured(traceparent="00-x", data=None))])
    ce_event = kafka_records_to_events(records, CE_SOURCE).select(event_json().alias("j")).first()
    assert json.loads(ce_event.j) == {
        "specversion": "1.0",
        "id": "e-1",
        "source": "/orders",
        "type": "order.created",
        "traceparent": "00-x",
        "data": None,
    }
    records = kafka_records([("orders", 2, 5, b'{"a": 1}')])
    json_event = kafka_records_to_events(records, JSON_SOURCE).select(event_json().alias("j"))
    assert json.loads(json_event.first().j) == {
        "specversion": "1.0",
        "id": "orders/2/5",
        "source": "kafka://orders",
        "type": "sluice.kafka.record",
        "time": RECORD_TIME_TEXT,
        "datacontenttype": "application/json",
        "data": {"a": 1},
    }


@pytest.mark.parametrize(
    ("value", "problem"),
    [
        (b"[1]", "value is not a CloudEvent: attribute 'specversion' is missing"),
        (structured(id=""), "value is not a CloudEvent: attribute 'id' is missing"),
        (structured(specversion="0.3"), "unsupported CloudEvents specversion 0.3"),
        (structured(time="yesterday"), "attribute 'time' is not an RFC 3339 timestamp: yesterday"),
        (structured(data_base64="AAE="), "data_base64 (binary data) is not supported yet"),
        (b"{oops", "value is not valid JSON"),
    ],
)
def test_unusable_cloudevents_fail(
    kafka_records: Callable[..., Any], value: bytes, problem: str
) -> None:
    events = kafka_records_to_events(kafka_records([("ce", 0, 3, value)]), CE_SOURCE)
    [(error_class, message)] = failures(events)
    assert message.startswith("Kafka record topic=ce partition=0 offset=3: ")
    assert problem in message
    expected = (
        "InvalidJson" if problem.startswith("value is not valid JSON") else "InvalidCloudEvent"
    )
    assert error_class == expected


@pytest.mark.parametrize(
    ("timestamp", "text"),
    [
        ("2024-06-01 08:15:30", "2024-06-01T08:15:30Z"),
        ("2024-06-01 08:15:30.12", "2024-06-01T08:15:30.120Z"),
        ("2024-06-01 08:15:30.000123", "2024-06-01T08:15:30.000123Z"),
        ("1969-12-31 23:59:59.5", "1969-12-31T23:59:59.500Z"),
    ],
)
def test_time_text_is_rfc3339_utc_in_any_session_zone(
    spark: SparkSession, timestamp: str, text: str
) -> None:
    frame = spark.createDataFrame([(timestamp,)], "t string")
    zone = spark.conf.get("spark.sql.session.timeZone")
    try:
        for session_zone in ("UTC", "America/New_York"):
            spark.conf.set("spark.sql.session.timeZone", "UTC")
            utc = frame.select(F.to_timestamp("t").alias("time")).collect()
            spark.conf.set("spark.sql.session.timeZone", session_zone)
            rendered = spark.createDataFrame(utc, "time timestamp").select(time_text("time"))
            assert rendered.first()[0] == text, session_zone
    finally:
        spark.conf.set("spark.sql.session.timeZone", zone)


def keyed_records(spark: SparkSession, rows: list[tuple[bytes | None, bytes, list]]) -> DataFrame:
    """Records on topic ``t`` with a key, a value and headers."""
    schema = (
        "key binary, value binary, topic string, partition int, offset long, "
        "timestamp timestamp, timestampType int, headers array<struct<key: string, value: binary>>"
    )
    data = [
        (key, value, "t", 0, offset, RECORD_TIME, 0, headers)
        for offset, (key, value, headers) in enumerate(rows)
    ]
    return spark.createDataFrame(data, schema)


@pytest.mark.parametrize("fmt", ["json", "raw", "cloudevents", "cloudevents-binary"])
def test_the_record_key_is_kept_as_the_partition_key(spark: SparkSession, fmt: str) -> None:
    binary = [("ce_specversion", b"1.0"), ("ce_id", b"e"), ("ce_source", b"/s"), ("ce_type", b"x")]
    headers = binary if fmt == "cloudevents-binary" else []
    value = structured(data={"n": 1}) if fmt == "cloudevents" else b'{"n": 1}'
    records = keyed_records(
        spark,
        [
            (b"6", value, headers),
            (None, value, headers),  # no key: none kept
            (b"\xff\xfe", value, headers),  # not UTF-8: not kept
            ("ключ-é".encode(), value, headers),
        ],
    )
    config = KafkaSourceConfig(bootstrap_servers="localhost:9092", topics=["t"], format=fmt)
    rows = readable(kafka_records_to_events(records, config)).collect()
    keys = [json.loads(row.extensions).get("partitionkey") for row in rows]
    assert keys == ["6", None, None, "ключ-é"]


def test_a_partition_key_the_event_names_wins_over_the_record_key(spark: SparkSession) -> None:
    records = keyed_records(spark, [(b"6", structured(partitionkey="own"), [])])
    config = KafkaSourceConfig(
        bootstrap_servers="localhost:9092", topics=["t"], format="cloudevents"
    )
    [row] = readable(kafka_records_to_events(records, config)).collect()
    assert json.loads(row.extensions) == {"partitionkey": "own"}
