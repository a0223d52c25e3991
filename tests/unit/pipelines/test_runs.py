"""Bounded runs (replays, redrives): their bounds, progress, and what they do to records
and events (on batch data; the real stack runs them in tests/integration/test_replay.py)."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from typing import Any

import pytest
from pyspark.sql import SparkSession
from pyspark.sql import functions as F

from pipelines.runs import bound_records, run_batch_limit, tag_events
from pipelines.sources.kafka import kafka_records_to_events
from pipelines.spec.configs import KafkaSourceConfig
from pipelines.spec.runs import RunBounds, run_progress

SOURCE = KafkaSourceConfig(bootstrap_servers="localhost:9092", topics=["orders"])
HEADERS_SCHEMA = (
    "key binary, value binary, topic string, partition int, offset bigint, "
    "timestamp timestamp, timestampType int, headers array<struct<key:string,value:binary>>"
)
WHEN = datetime(2026, 1, 2, 3, 4, 5, tzinfo=UTC)


def bounds(**kwargs: Any) -> RunBounds:
    values: dict[str, Any] = {
        "run_id": "r1",
        "kind": "replay",
        "start_offsets": {"orders": {"0": 2, "1": 5, "2": 9}},
        "end_offsets": {"orders": {"0": 4, "1": 5, "2": 12}},
    }
    return RunBounds(**{**values, **kwargs})


def test_bounds_partitions_expected_and_starting_offsets() -> None:
    run = bounds()
    # Partition 1 is empty ([5, 5)): not read, but named in startingOffsets (at its end).
    assert run.partitions() == [("orders", 0, 2, 4), ("orders", 2, 9, 12)]
    assert run.expected() == 5
    assert json.loads(run.starting_offsets_json()) == {"orders": {"0": 2, "1": 5, "2": 9}}
    assert RunBounds.from_json(json.loads(json.dumps(run.to_json()))) == run


def test_bounds_refuse_an_unknown_kind() -> None:
    with pytest.raises(ValueError, match="run kind"):
        bounds(kind="backfill")


def test_progress_counts_offsets_done_within_each_partition() -> None:
    run = bounds()
    assert run_progress(run, {}) == (0, 5)
    # Partition 0 done (its position past the end counts its window only), 2 one in.
    assert run_progress(run, {("orders", 0): 100, ("orders", 2): 10}) == (3, 5)
    assert run_progress(run, {("orders", 0): 4, ("orders", 2): 12}) == (5, 5)
    # A position before the start (not read yet) counts nothing.
    assert run_progress(run, {("orders", 2): 3}) == (0, 5)


@pytest.mark.spark
def test_a_run_reads_its_window_in_steps_so_its_progress_moves() -> None:
    # One batch of the whole window said "0 of 300 read" until it was all done.
    assert run_batch_limit(300) == 100
    assert run_batch_limit(50_000) == 5_000
    assert run_batch_limit(40) == 40  # never more than the window
    assert run_batch_limit(0) == 1
    assert run_batch_limit(50_000, configured=1_000) == 1_000  # nor the source's own limit


def test_a_run_has_reached_its_end_when_every_read_partition_has() -> None:
    run = bounds()
    assert not run.reached({})
    assert not run.reached({("orders", 0): 4})  # partition 2 not yet
    assert not run.reached({("orders", 0): 4, ("orders", 2): 11})
    # Partition 1 ([5, 5)) is never read: it needs no position; past the end is the end.
    assert run.reached({("orders", 0): 4, ("orders", 2): 12})
    assert run.reached({("orders", 0): 40, ("orders", 2): 99, ("other", 0): 1})


def test_bound_records_keep_exactly_the_window(spark: SparkSession) -> None:
    rows = [
        (None, b"{}", topic, partition, offset, WHEN, 0, [])
        for topic in ("orders", "other")
        for partition in (0, 1, 2)
        for offset in range(14)
    ]
    records = spark.createDataFrame(rows, HEADERS_SCHEMA)
    kept = bound_records(records, bounds()).select("topic", "partition", "offset").collect()
    assert sorted(tuple(row) for row in kept) == [
        ("orders", 0, 2),
        ("orders", 0, 3),
        ("orders", 2, 9),
        ("orders", 2, 10),
        ("orders", 2, 11),
    ]


@pytest.mark.spark
def test_a_redrive_takes_back_the_origin_of_its_records(spark: SparkSession) -> None:
    origin = [
        ("sluice-origin-topic", b"orders"),
        ("sluice-origin-partition", b"3"),
        ("sluice-origin-offset", b"41"),
        ("sluice-origin-timestamp", b"2025-05-06T07:08:09.500Z"),
    ]
    rows = [
        (None, b'{"n": 1}', "sluice-redrive.c", 0, 7, WHEN, 0, origin),
        (None, b'{"n": 2}', "sluice-redrive.c", 0, 8, WHEN, 0, []),  # no origin: its own
        (None, b'{"n": 3}', "sluice-redrive.c", 0, 9, WHEN, 0, origin),  # past the end
    ]
    records = spark.createDataFrame(rows, HEADERS_SCHEMA)
    run = RunBounds(
        run_id="r2",
        kind="redrive",
        start_offsets={"sluice-redrive.c": {"0": 7}},
        end_offsets={"sluice-redrive.c": {"0": 9}},
    )
    events = kafka_records_to_events(bound_records(records, run), SOURCE)
    tagged = tag_events(events, run)
    got = tagged.select(
        "id",
        F.date_format("time", "yyyy-MM-dd'T'HH:mm:ss.SSS").alias("time"),
        F.to_json(F.to_variant_object("extensions")).alias("extensions"),
    ).collect()
    assert [row.id for row in got] == ["orders/3/41", "sluice-redrive.c/0/8"]
    assert got[0].time == "2025-05-06T07:08:09.500"
    assert json.loads(got[0].extensions) == {"sluicereplay": "r2", "sluicerun": "redrive"}


@pytest.mark.spark
def test_tags_replace_extensions_of_the_same_name(spark: SparkSession) -> None:
    ce = KafkaSourceConfig(
        bootstrap_servers="localhost:9092", topics=["orders"], format="cloudevents"
    )
    value = json.dumps(
        {
            "specversion": "1.0",
            "id": "e1",
            "source": "s",
            "type": "t",
            "sluicerun": "forged",
            "region": "eu",
        }
    ).encode()
    records = spark.createDataFrame([(None, value, "orders", 0, 0, WHEN, 0, [])], HEADERS_SCHEMA)
    events = tag_events(kafka_records_to_events(records, ce), bounds())
    row = events.select(F.to_json(F.to_variant_object("extensions")).alias("x")).first()
    assert row is not None
    assert json.loads(row.x) == {"region": "eu", "sluicereplay": "r1", "sluicerun": "replay"}
