"""Events -> Kafka sink records (key, value, headers), on batch data."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import pytest
from pyspark.sql import DataFrame
from pyspark.testing import assertDataFrameEqual

from pipelines.kafka_options import kafka_sink_options
from pipelines.sinks import SINKS
from pipelines.sinks.kafka import events_to_kafka_records, write_kafka
from pipelines.sources.kafka import kafka_records_to_events
from pipelines.spec.configs import KafkaSinkConfig, KafkaSourceConfig
from tests.unit.pipelines.conftest import RECORD_TIME_TEXT

pytestmark = pytest.mark.spark

JSON_SINK = KafkaSinkConfig(bootstrap_servers="localhost:9092", topic="out")
CE_SINK = KafkaSinkConfig(bootstrap_servers="localhost:9092", topic="out", format="cloudevents")


@pytest.fixture
def events(kafka_records: Callable[..., Any]) -> DataFrame:
    head = {"specversion": "1.0", "source": "/s", "type": "t"}
    first = {**head, "id": "e-1", "x": 1}
    second = {**head, "id": "e-2", "time": "2024-06-01T08:15:30.12Z", "data": {"été": [1, None]}}
    records = kafka_records(
        [("ce", 0, n, json.dumps(event).encode()) for n, event in enumerate([first, second])]
    )
    config = KafkaSourceConfig(bootstrap_servers="h:1", topics=["ce"], format="cloudevents")
    return kafka_records_to_events(records, config)


def test_options_and_registry() -> None:
    # No "topic" option: it would override each record's topic column.
    assert kafka_sink_options(JSON_SINK) == {
        "kafka.bootstrap.servers": "localhost:9092",
        # Batched sends (Kafka 4's own linger.ms default): about a fifth less CPU per event.
        "kafka.linger.ms": "5",
        "kafka.batch.size": "262144",
    }
    assert SINKS["kafka"] is write_kafka


def test_a_sinks_own_properties_win_over_the_producer_defaults() -> None:
    sink = JSON_SINK.model_copy(update={"properties": {"kafka.linger.ms": "0"}})
    assert kafka_sink_options(sink)["kafka.linger.ms"] == "0"


def test_json_format_writes_data_keyed_by_event_id(events: DataFrame) -> None:
    records = events_to_kafka_records(events, JSON_SINK)

    assert records.columns == ["topic", "key", "value", "headers"]
    expected = events.sparkSession.createDataFrame(
        [
            ("out", b"e-1", None, [("content-type", b"application/json")]),
            ("out", b"e-2", '{"été":[1,null]}'.encode(), [("content-type", b"application/json")]),
        ],
        "topic string, key binary, value binary, headers array<struct<key: string, value: binary>>",
    )
    assertDataFrameEqual(records, expected)


def test_cloudevents_format_writes_the_whole_structured_event(events: DataFrame) -> None:
    rows = {row.key: row for row in events_to_kafka_records(events, CE_SINK).collect()}

    assert json.loads(rows[b"e-1"].value) == {
        "specversion": "1.0",
        "id": "e-1",
        "source": "/s",
        "type": "t",
        "x": 1,
    }
    assert json.loads(rows[b"e-2"].value) == {
        "specversion": "1.0",
        "id": "e-2",
        "source": "/s",
        "type": "t",
        "time": "2024-06-01T08:15:30.120Z",
        "data": {"été": [1, None]},
    }
    header = rows[b"e-2"].headers[0]
    assert (header.key, header.value) == (
        "content-type",
        b"application/cloudevents+json; charset=UTF-8",
    )


def test_json_round_trip_keeps_the_event(kafka_records: Callable[..., Any]) -> None:
    source = KafkaSourceConfig(bootstrap_servers="h:1", topics=["in"])
    events = kafka_records_to_events(kafka_records([("in", 4, 8, b'{"n": 1.5}')]), source)
    value = events_to_kafka_records(events, CE_SINK).first().value
    assert json.loads(value)["time"] == RECORD_TIME_TEXT
    assert json.loads(value)["id"] == "in/4/8"
    assert events_to_kafka_records(events, JSON_SINK).first().value == b'{"n":1.5}'


def test_a_kafka_to_kafka_channel_keeps_each_record_s_key(spark: Any) -> None:
    records = spark.createDataFrame(
        [(b"6", b'{"n": 1}', "in", 1, 4, None, 0), (None, b'{"n": 2}', "in", 1, 5, None, 0)],
        "key binary, value binary, topic string, partition int, offset long, "
        "timestamp timestamp, timestampType int",
    )
    source = KafkaSourceConfig(bootstrap_servers="h:1", topics=["in"])
    events = kafka_records_to_events(records, source)
    keys = [row.key for row in events_to_kafka_records(events, JSON_SINK).collect()]
    assert keys == [b"6", b"in/1/5"]  # a record without a key: the event id
    by_id = KafkaSinkConfig(bootstrap_servers="h:1", topic="out", key_field="id")
    keys = [row.key for row in events_to_kafka_records(events, by_id).collect()]
    assert keys == [b"in/1/4", b"in/1/5"]
    by_field = KafkaSinkConfig(bootstrap_servers="h:1", topic="out", key_field="data.n")
    keys = [row.key for row in events_to_kafka_records(events, by_field).collect()]
    assert keys == [b"1", b"2"]


BINARY_SINK = KafkaSinkConfig(
    bootstrap_servers="localhost:9092", topic="out", format="cloudevents-binary"
)


def _headers(row: Any) -> dict[str, bytes]:
    return {header.key: header.value for header in row.headers}


def test_a_runs_events_carry_its_marks_in_every_format(events: DataFrame) -> None:
    # The data-only format would drop the extensions with the rest of the event: a replayed
    # event gets them as headers; the CloudEvents formats carry them as extension attributes.
    from pipelines.runs import tag_events
    from pipelines.spec.runs import RunBounds

    replayed = tag_events(events, RunBounds(run_id="run-7", kind="redrive"))

    live = {row.key: _headers(row) for row in events_to_kafka_records(events, JSON_SINK).collect()}
    assert live[b"e-1"] == {"content-type": b"application/json"}
    as_json = {
        row.key: _headers(row) for row in events_to_kafka_records(replayed, JSON_SINK).collect()
    }
    assert as_json[b"e-1"] == {
        "content-type": b"application/json",
        "sluicereplay": b"run-7",
        "sluicerun": b"redrive",
    }
    structured = events_to_kafka_records(replayed, CE_SINK).collect()
    assert {json.loads(row.value)["sluicereplay"] for row in structured} == {"run-7"}
    assert {json.loads(row.value)["sluicerun"] for row in structured} == {"redrive"}
    binary = [_headers(row) for row in events_to_kafka_records(replayed, BINARY_SINK).collect()]
    assert {(h["ce_sluicereplay"], h["ce_sluicerun"]) for h in binary} == {(b"run-7", b"redrive")}
