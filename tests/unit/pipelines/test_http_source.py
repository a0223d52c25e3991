"""The http source reads back what the console wrote to the ingest topic."""

from __future__ import annotations

import json
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any

import pytest

from pipelines.cloudevents import event_json
from pipelines.sources import SOURCES
from pipelines.sources.http import http_records_to_events, ingest_kafka_config
from pipelines.sources.kafka import kafka_source_options
from pipelines.spec import StageSpec, parse_stage_config

pytestmark = pytest.mark.spark

DEPLOYED = {"ingest_topic": "sluice.ingest.web", "bootstrap_servers": "kafka:9092"}


def config(**fields: Any) -> Any:
    return parse_stage_config("source", StageSpec(type="http", config=fields))


def test_it_reads_the_ingest_topic_from_the_start_as_structured_cloudevents() -> None:
    kafka = ingest_kafka_config(config(**DEPLOYED))

    assert kafka.format == "cloudevents"
    options = kafka_source_options(kafka)
    assert options["subscribe"] == "sluice.ingest.web"
    assert options["startingOffsets"] == "earliest"
    assert options["kafka.bootstrap.servers"] == "kafka:9092"
    assert SOURCES["http"].to_events is http_records_to_events


def test_without_the_fields_sluice_fills_in_it_says_so() -> None:
    assert config().ingest_topic is None
    with pytest.raises(ValueError, match="Sluice sets them when it starts the channel"):
        ingest_kafka_config(config())


def test_events_written_by_the_console_come_back_unchanged(
    kafka_records: Callable[..., Any],
) -> None:
    # Exactly what console.selectors.cloudevents.encode writes (time normalised to UTC).
    written = {
        "specversion": "1.0",
        "id": "bin-1",
        "source": "/shop/web",
        "type": "com.example.order",
        "subject": "order 42",
        "time": "2024-06-01T08:00:00.12Z",
        "traceparent": "00-abc-01",
        "datacontenttype": "application/json",
        "data": {"total": 3, "items": ["a"]},
    }
    value = json.dumps(written, separators=(",", ":")).encode()
    # Keyed by the event's id, as the console writes them: the key is not a partition key.
    records = kafka_records(
        [("sluice.ingest.web", 2, 7, value, b"bin-1"), ("sluice.ingest.web", 0, 1, None, b"x")]
    )

    events = http_records_to_events(records, config(**DEPLOYED))

    rows = events.select("id", "time", "origin_partition", event_json().alias("json")).collect()
    assert len(rows) == 1
    assert rows[0]["id"] == "bin-1" and rows[0]["origin_partition"] == 2
    assert rows[0]["time"].astimezone(UTC) == datetime(2024, 6, 1, 8, 0, 0, 120000, tzinfo=UTC)
    assert json.loads(rows[0]["json"]) == {**written, "time": "2024-06-01T08:00:00.120Z"}
