"""Preview sink: the newest events of each micro-batch handed to a publisher."""

from __future__ import annotations

import time
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from pyspark.sql import SparkSession

from pipelines.builder import build_stream
from pipelines.sinks import SINKS
from pipelines.sinks.preview import PreviewBuffer, newest_events, preview_buffer, write_preview
from pipelines.sources.generator import ticks_to_events
from pipelines.spec import validate_spec
from pipelines.spec.configs import GeneratorSourceConfig

START = datetime(2024, 6, 1, 8, 0, 0, tzinfo=UTC)


def test_buffer_keeps_the_newest_events() -> None:
    buffer = PreviewBuffer(3)
    buffer.publish([{"id": "1"}, {"id": "2"}])
    buffer.publish([{"id": "3"}, {"id": "4"}])

    assert [event["id"] for event in buffer.events()] == ["2", "3", "4"]
    assert buffer.max_events == 3
    assert preview_buffer("c", 3) is preview_buffer("c", 3)
    assert preview_buffer("c", 4).max_events == 4
    assert SINKS["preview"] is write_preview


@pytest.mark.spark
def test_newest_events_are_chosen_by_time_then_offset(spark: SparkSession) -> None:
    # seq 0..5; seq 5 is the oldest by time, seq 3 and 4 share the newest time
    times = [START + timedelta(seconds=s) for s in (1, 2, 3, 9, 9, 0)]
    ticks = spark.createDataFrame(
        list(zip(times, range(6), strict=True)), "timestamp timestamp, value bigint"
    )
    events = ticks_to_events(ticks, GeneratorSourceConfig(template={"n": "{{seq}}"}))

    newest = newest_events(events, 3)

    assert [event["id"] for event in newest] == ["generator/2", "generator/3", "generator/4"]
    assert newest[-1]["data"] == {"n": 4} and newest[-1]["time"] == "2024-06-01T08:00:09Z"
    assert newest_events(events.limit(0), 3) == []


@pytest.mark.spark
def test_a_generator_channel_feeds_the_publisher(spark: SparkSession, tmp_path: Path) -> None:
    spec = validate_spec(
        {
            "source": {"type": "generator", "config": {"rate": 50}},
            "sink": {"type": "preview", "config": {"max_events": 5}},
        }
    )
    published: list[list[dict[str, Any]]] = []
    writer = build_stream(
        spark,
        spec,
        channel="demo",
        checkpoint_dir=str(tmp_path / "checkpoint"),
        preview_publisher=published.append,
    )
    query = writer.start()
    try:
        deadline = time.monotonic() + 90
        while len(published) < 2 and time.monotonic() < deadline and query.isActive:
            time.sleep(0.5)
    finally:
        query.stop()

    assert len(published) >= 2, query.exception()
    assert all(1 <= len(batch) <= 5 for batch in published)
    seqs = [int(event["id"].removeprefix("generator/")) for batch in published for event in batch]
    assert seqs == sorted(seqs)  # oldest first, batch after batch
    assert published[0][0]["type"] == "sluice.demo.order"
    assert set(published[0][0]["data"]) >= {"order_id", "amount", "region"}


@pytest.mark.spark
def test_without_a_publisher_events_go_to_the_channel_buffer(
    spark: SparkSession, tmp_path: Path
) -> None:
    inbox = tmp_path / "in"
    inbox.mkdir()
    (inbox / "a.jsonl").write_text("".join(f'{{"n": {n}}}\n' for n in range(1, 8)))
    spec = validate_spec(
        {
            "source": {"type": "files", "config": {"path": str(inbox)}},
            "sink": {"type": "preview", "config": {"max_events": 5}},
        }
    )
    query = build_stream(spark, spec, channel="tail", checkpoint_dir=str(tmp_path / "cp")).start()
    try:
        query.processAllAvailable()
    finally:
        query.stop()

    kept = preview_buffer("tail", 5).events()
    assert [event["data"]["n"] for event in kept] == [3, 4, 5, 6, 7]
