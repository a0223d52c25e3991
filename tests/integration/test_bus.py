"""A bus on the real stack: one Kafka topic read once, rules to Kafka, files and JDBC targets.

Each target gets exactly the events its pattern matches; after a ``kill -9`` of the driver
mid-stream and a restart from the checkpoint the files and JDBC targets hold no duplicate
(Kafka targets are at least once, as a linear channel's); a Kafka-only bus writes each batch
in one Spark job; a rule edited while the query runs applies from the next batch; one
target down under ``tolerance: all`` does not stop the others.
"""

from __future__ import annotations

import json
import os
import signal
import socket
import sqlite3
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from pyspark.sql import SparkSession

from pipelines.bus import build_bus_stream
from pipelines.net import JDBC_ALLOW_ENV
from pipelines.spec import validate_spec
from tests.integration.test_kafka_plugins import consume, new_topic, produce
from tests.support.processes import REPO_ROOT
from tests.support.spark import local_spark

pytestmark = [pytest.mark.integration, pytest.mark.spark]

EVENTS = 40
KINDS = ("order", "refund", "ping")


@pytest.fixture(scope="module")
def spark() -> Iterator[SparkSession]:
    yield local_spark()


def event(n: int) -> dict[str, Any]:
    return {"n": n, "kind": KINDS[n % 3], "amount": n * 10}


def big_order(n: int) -> bool:
    return KINDS[n % 3] == "order" and n * 10 > 100


def kafka_sink(bootstrap: str, topic: str) -> dict[str, Any]:
    return {"type": "kafka", "config": {"bootstrap_servers": bootstrap, "topic": topic}}


def source(bootstrap: str, topic: str, per_trigger: int | None = None) -> dict[str, Any]:
    config: dict[str, Any] = {
        "bootstrap_servers": bootstrap,
        "topics": [topic],
        "starting_offsets": "earliest",
    }
    if per_trigger:
        config["max_events_per_trigger"] = per_trigger
    return {"type": "kafka", "config": config}


def ns_in(bootstrap: str, topic: str, count: int) -> list[int]:
    return sorted(json.loads(m.value())["n"] for m in consume(bootstrap, topic, count))


def ns_in_files(spark: SparkSession, path: Path) -> list[int]:
    return sorted(json.loads(row.value)["n"] for row in spark.read.text(str(path)).collect())


def ns_in_table(path: Path, table: str) -> list[int]:
    with sqlite3.connect(path) as connection:
        rows = connection.execute(f'SELECT data FROM "{table}"').fetchall()
    return sorted(json.loads(row[0])["data"]["n"] for row in rows)  # content: cloudevents


DRIVER = """
import json, sys
from tests.support.spark import local_spark
from pipelines.bus import build_bus_stream
from pipelines.spec import validate_spec
spec = validate_spec(json.loads(open(sys.argv[1]).read()))
writer, _ = build_bus_stream(local_spark(), spec, channel="bus-kill", checkpoint_dir=sys.argv[2])
writer.start().awaitTermination()
"""


def test_a_bus_routes_each_event_to_its_targets_and_survives_kill_9(
    spark: SparkSession, kafka_bootstrap: str, tmp_path: Path
) -> None:
    topic = new_topic(kafka_bootstrap, partitions=2)
    big, refunds = new_topic(kafka_bootstrap), new_topic(kafka_bootstrap)
    produce(
        kafka_bootstrap,
        topic,
        [{"value": json.dumps(event(n)).encode(), "partition": n % 2} for n in range(EVENTS)],
    )
    db = tmp_path / "bus.sqlite"
    rules = [
        {
            "name": "big-orders",
            "pattern": {"data": {"kind": ["order"], "amount": [{"numeric": [">", 100]}]}},
            "sinks": [kafka_sink(kafka_bootstrap, big)],
        },
        {
            "name": "refunds",
            "pattern": {"data": {"kind": ["refund"]}},
            "sinks": [
                kafka_sink(kafka_bootstrap, refunds),
                {"type": "files", "config": {"path": str(tmp_path / "refunds"), "format": "jsonl"}},
            ],
        },
        {
            "name": "everything",
            "sinks": [{"type": "jdbc", "config": {"url": f"sqlite:///{db}", "table": "all"}}],
        },
    ]
    spec = {"source": source(kafka_bootstrap, topic, per_trigger=1), "rules": rules}
    spec_file, checkpoint = tmp_path / "spec.json", tmp_path / "checkpoint"
    spec_file.write_text(json.dumps(spec))
    log = (tmp_path / "driver.log").open("w")
    driver = subprocess.Popen(
        [sys.executable, "-c", DRIVER, str(spec_file), str(checkpoint)],
        cwd=REPO_ROOT,
        stdout=log,
        stderr=subprocess.STDOUT,
        env=os.environ.copy(),
    )
    try:
        deadline = time.monotonic() + 180
        while len(list((checkpoint / "commits").glob("[0-9]*"))) < 1:
            assert driver.poll() is None, (tmp_path / "driver.log").read_text()[-3000:]
            assert time.monotonic() < deadline, "the driver committed no batch in 180 s"
            time.sleep(0.2)
    finally:
        driver.send_signal(signal.SIGKILL)  # mid-stream: later batches may be half written
        driver.wait(30)
    committed = len(list((checkpoint / "commits").glob("[0-9]*")))
    assert committed < EVENTS, "the driver was killed before the end of the stream"

    spec["runtime"] = {"mode": "available-now"}
    writer, _ = build_bus_stream(
        spark, validate_spec(spec), channel="bus-kill", checkpoint_dir=str(checkpoint)
    )
    query = writer.start()
    try:
        assert query.awaitTermination(180), "the restarted bus did not finish"
    finally:
        query.stop()

    wanted_big = [n for n in range(EVENTS) if big_order(n)]
    wanted_refunds = [n for n in range(EVENTS) if KINDS[n % 3] == "refund"]
    assert ns_in_files(spark, tmp_path / "refunds") == wanted_refunds  # exactly once
    assert ns_in_table(db, "all") == list(range(EVENTS))  # upserted: exactly once
    # Kafka targets: every event (at least once: a replayed batch may be written again)
    assert sorted(set(ns_in(kafka_bootstrap, big, len(wanted_big)))) == wanted_big
    assert sorted(set(ns_in(kafka_bootstrap, refunds, len(wanted_refunds)))) == wanted_refunds


def test_a_kafka_only_bus_writes_each_batch_in_one_job(
    spark: SparkSession, kafka_bootstrap: str, tmp_path: Path
) -> None:
    topic = new_topic(kafka_bootstrap, partitions=2)
    outs = [new_topic(kafka_bootstrap, prefix=f"r{i}") for i in range(5)]
    produce(
        kafka_bootstrap,
        topic,
        [{"value": json.dumps({"k": n % 5, "n": n}).encode()} for n in range(50)],
    )
    rules = [
        {
            "name": f"k{i}",
            "pattern": {"data": {"k": [i]}},
            "sinks": [kafka_sink(kafka_bootstrap, out)],
        }
        for i, out in enumerate(outs)
    ]
    spec = {
        "source": source(kafka_bootstrap, topic),
        "rules": rules,
        "runtime": {"mode": "available-now"},
    }
    writer, _ = build_bus_stream(
        spark, validate_spec(spec), channel="bus-kafka", checkpoint_dir=str(tmp_path / "c")
    )
    query = writer.start()
    try:
        assert query.awaitTermination(120)
    finally:
        query.stop()

    for i, out in enumerate(outs):
        assert ns_in(kafka_bootstrap, out, 10) == [n for n in range(50) if n % 5 == i]
    batches = [p for p in query.recentProgress if p["numInputRows"]]
    jobs = spark.sparkContext.statusTracker().getJobIdsForGroup(str(query.runId))
    assert len(jobs) == len(batches) == 1, f"{len(jobs)} jobs for {len(batches)} batch(es)"


def test_a_rule_edited_while_running_applies_from_the_next_batch(
    spark: SparkSession, kafka_bootstrap: str, tmp_path: Path
) -> None:
    topic, out = new_topic(kafka_bootstrap), new_topic(kafka_bootstrap)
    rule = {
        "name": "picked",
        "pattern": {"data": {"k": ["a"]}},
        "sinks": [kafka_sink(kafka_bootstrap, out)],
    }
    # routed batch by batch (a Kafka-only bus under "none" is compiled into its query and
    # changes its rules by a restart: tests/integration/test_live_rules.py)
    spec = {
        "source": source(kafka_bootstrap, topic),
        "rules": [rule],
        "errors": {"tolerance": "all"},
    }
    counts: list[tuple[int, Any]] = []
    writer, router = build_bus_stream(
        spark,
        validate_spec(spec),
        channel="bus-edit",
        checkpoint_dir=str(tmp_path / "checkpoint"),
        on_rule_counts=lambda b, c: counts.append((b, c)),
    )
    query = writer.start()
    try:
        produce(kafka_bootstrap, topic, [{"value": json.dumps({"k": k}).encode()} for k in "ab"])
        query.processAllAvailable()
        before = query.lastProgress["batchId"]
        router.replace(
            validate_spec({**spec, "rules": [{**rule, "pattern": {"data": {"k": ["b"]}}}]})
        )
        produce(kafka_bootstrap, topic, [{"value": json.dumps({"k": k}).encode()} for k in "ab"])
        query.processAllAvailable()
    finally:
        query.stop()
    assert [json.loads(m.value())["k"] for m in consume(kafka_bootstrap, out, 2)] == ["a", "b"]
    edited = [b for b, c in counts if b > before and c[0]["delivered"]]
    assert edited and edited[0] <= before + 2


def closed_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def test_one_target_down_under_tolerance_all_the_others_keep_delivering(
    spark: SparkSession, kafka_bootstrap: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(JDBC_ALLOW_ENV, "127.0.0.1")
    topic, out, dlq = (new_topic(kafka_bootstrap) for _ in range(3))
    produce(kafka_bootstrap, topic, [{"value": json.dumps(event(n)).encode()} for n in range(12)])
    down = f"postgresql://127.0.0.1:{closed_port()}/nothing"
    rules = [
        {"name": "to-kafka", "sinks": [kafka_sink(kafka_bootstrap, out)]},
        {
            "name": "to-files",
            "sinks": [
                {"type": "files", "config": {"path": str(tmp_path / "f"), "format": "jsonl"}}
            ],
        },
        {
            "name": "to-postgres",
            "pattern": {"data": {"kind": ["order"]}},
            "sinks": [{"type": "jdbc", "config": {"url": down, "table": "t"}}],
        },
    ]
    spec = {
        "source": source(kafka_bootstrap, topic),
        "rules": rules,
        "errors": {
            "tolerance": "all",
            "dead_letter": {
                "type": "kafka",
                "config": {
                    "bootstrap_servers": kafka_bootstrap,
                    "topic": dlq,
                    "format": "cloudevents",
                },
            },
        },
        "runtime": {"mode": "available-now"},
    }
    writer, _ = build_bus_stream(
        spark, validate_spec(spec), channel="bus-down", checkpoint_dir=str(tmp_path / "c")
    )
    query = writer.start()
    try:
        assert query.awaitTermination(120)
    finally:
        query.stop()

    assert ns_in(kafka_bootstrap, out, 12) == list(range(12))
    assert ns_in_files(spark, tmp_path / "f") == list(range(12))
    letters = [json.loads(m.value()) for m in consume(kafka_bootstrap, dlq, 4)]
    assert sorted(letter["data"]["event"]["data"]["n"] for letter in letters) == [0, 3, 6, 9]
    assert {(letter["data"]["rule"], letter["data"]["target"]) for letter in letters} == {
        ("to-postgres", "rules[2].sinks[0]")
    }
