"""Sink retries on the real stack: a channel from a real Kafka topic, built by the builder,
running in real Spark, writing to a real PostgreSQL or Kafka that goes away and comes back.

The server is taken away by a TCP forwarder in front of it (:class:`TcpProxy`): refused
connections and cut ones are what a client sees of a server that is down, and the shared
PostgreSQL / Kafka of the test session keeps serving the other tests.
"""

from __future__ import annotations

import json
import logging
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import pytest
from pyspark.sql import SparkSession
from pyspark.sql.streaming import StreamingQuery

from pipelines.builder import build_stream
from pipelines.net import JDBC_ALLOW_ENV
from pipelines.spec import validate_spec
from tests.integration.test_kafka_plugins import consume, new_topic, produce
from tests.support.spark import local_spark
from tests.support.tcp_proxy import TcpProxy

pytestmark = [pytest.mark.integration, pytest.mark.spark]

DOWN_SECONDS = 30


@pytest.fixture(scope="module")
def spark() -> Iterator[SparkSession]:
    """The process's SparkSession (with the Kafka connector; shared with the unit tests)."""
    yield local_spark()


def kafka_source(bootstrap: str, topic: str) -> dict[str, Any]:
    config = {"bootstrap_servers": bootstrap, "topics": [topic], "starting_offsets": "earliest"}
    return {"type": "kafka", "config": config}


def wait_for(condition: Any, seconds: float, what: str, query: StreamingQuery) -> None:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if query.exception() is not None:
            raise AssertionError(f"the query failed while waiting for {what}: {query.exception()}")
        if condition():
            return
        time.sleep(0.5)
    raise AssertionError(f"timed out after {seconds} s waiting for {what}")


def records(start: int, count: int) -> list[dict[str, Any]]:
    return [{"value": json.dumps({"n": n}).encode()} for n in range(start, start + count)]


def test_a_jdbc_sink_down_for_30_s_loses_nothing_and_duplicates_nothing(
    spark: SparkSession,
    kafka_bootstrap: str,
    postgres_url: str,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
) -> None:
    import psycopg

    monkeypatch.setenv(JDBC_ALLOW_ENV, "127.0.0.1")  # the throwaway server is on loopback
    topic = new_topic(kafka_bootstrap)
    table = f"retried_{uuid.uuid4().hex[:8]}"
    server = urlsplit(postgres_url)
    assert server.port is not None
    with TcpProxy(server.port) as proxy:
        url = f"postgresql://{server.username}@127.0.0.1:{proxy.port}{server.path}"
        retry = {
            "attempts": 60,
            "backoff_ms": 500,
            "max_backoff_ms": 4000,
            "max_event_age_seconds": 3600,
        }
        spec = validate_spec(
            {
                "source": kafka_source(kafka_bootstrap, topic),
                "sink": {"type": "jdbc", "config": {"url": url, "table": table, "retry": retry}},
                "errors": {"tolerance": "all"},  # given up on: dead letters (none expected)
                "runtime": {"interval_seconds": 1},
            }
        )
        dead_letters: list[int] = []
        retries: list[int] = []
        caplog.set_level(logging.WARNING, logger="sluice.retries")
        produce(kafka_bootstrap, topic, records(0, 100))
        query = build_stream(
            spark,
            spec,
            channel="retry-jdbc",
            checkpoint_dir=str(tmp_path / "checkpoint"),
            on_dead_letters=dead_letters.append,
            on_retries=retries.append,
        ).start()

        def rows() -> list[tuple[str, Any]]:
            with psycopg.connect(postgres_url, connect_timeout=5) as connection:
                exists = connection.execute("SELECT to_regclass(%s)", (table,)).fetchone()
                if exists is None or exists[0] is None:
                    return []
                return connection.execute(f"SELECT id, data FROM {table} ORDER BY id").fetchall()

        try:
            wait_for(lambda: len(rows()) == 100, 120, "the first 100 rows", query)
            proxy.down()  # PostgreSQL is unreachable for the channel from now on
            down_at = time.monotonic()
            produce(kafka_bootstrap, topic, records(100, 150))
            time.sleep(DOWN_SECONDS)
            assert len(rows()) == 100, "nothing can arrive while the database is away"
            assert retries, "the sink retried its write while the database was away"
            assert query.isActive and query.exception() is None
            proxy.up()
            wait_for(lambda: len(rows()) == 250, 120, "all 250 rows", query)
            back_after = time.monotonic() - down_at
            time.sleep(2)  # a late duplicate or dead letter would show up by now
            found = rows()
        finally:
            query.stop()

    expected = {f"{topic}/0/{n}" for n in range(250)}
    ids = [row[0] for row in found]
    assert len(ids) == 250 and set(ids) == expected  # nothing lost, nothing twice
    assert sorted(row[1]["data"]["n"] for row in found) == list(range(250))
    assert sum(dead_letters) == 0
    retried = [r for r in caplog.records if "write failed (attempt" in r.getMessage()]
    assert len(retried) == sum(retries) >= 3
    assert "jdbc sink write failed (attempt 1 of 60, channel retry-jdbc" in retried[0].getMessage()
    logging.getLogger(__name__).warning(
        "jdbc sink away %d s: %d retried writes, all 250 rows after %.1f s",
        DOWN_SECONDS,
        sum(retries),
        back_after,
    )


def test_a_kafka_sink_whose_broker_is_unreachable_delivers_once_it_is_back(
    spark: SparkSession, kafka_bootstrap: str, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.WARNING, logger="sluice.retries")
    source, target = new_topic(kafka_bootstrap), new_topic(kafka_bootstrap)
    broker_port = int(kafka_bootstrap.rsplit(":", 1)[1])
    produce(kafka_bootstrap, source, records(0, 50))
    with TcpProxy(broker_port) as proxy:
        proxy.down()  # the sink's bootstrap address refuses connections at first
        sink_config = {
            "bootstrap_servers": f"127.0.0.1:{proxy.port}",
            "topic": target,
            "properties": {"kafka.max.block.ms": "2000"},  # give up on metadata in 2 s
            "retry": {"attempts": 30, "backoff_ms": 500, "max_backoff_ms": 2000},
        }
        spec = validate_spec(
            {
                "source": kafka_source(kafka_bootstrap, source),
                "sink": {"type": "kafka", "config": sink_config},
            }
        )  # errors.tolerance: none: without retries the first failure fails the query
        retries: list[int] = []
        query = build_stream(
            spark,
            spec,
            channel="retry-kafka",
            checkpoint_dir=str(tmp_path / "checkpoint"),
            on_retries=retries.append,
        ).start()
        try:
            wait_for(lambda: sum(retries) >= 2, 60, "two retried writes", query)
            proxy.up()
            query.processAllAvailable()
            assert query.exception() is None
        finally:
            query.stop()
    delivered = consume(kafka_bootstrap, target, 50)
    assert sorted(json.loads(m.value())["n"] for m in delivered) == list(range(50))
    first = next(r.getMessage() for r in caplog.records if "write failed" in r.getMessage())
    # named by the JVM's root cause, not py4j's "An error occurred while calling o123.save"
    assert "TimeoutException: " in first and "An error occurred" not in first, first


def test_a_bus_kafka_target_that_stays_away_gives_up_its_events_alone(
    spark: SparkSession, kafka_bootstrap: str, tmp_path: Path
) -> None:
    source, direct, away = (new_topic(kafka_bootstrap) for _ in range(3))
    broker_port = int(kafka_bootstrap.rsplit(":", 1)[1])
    produce(kafka_bootstrap, source, records(0, 20))
    with TcpProxy(broker_port) as proxy:
        proxy.down()  # and it stays down
        unreachable = {
            "bootstrap_servers": f"127.0.0.1:{proxy.port}",
            "topic": away,
            "properties": {"kafka.max.block.ms": "1500"},
            "retry": {"attempts": 2, "backoff_ms": 100, "max_backoff_ms": 200},
        }
        reachable = {"bootstrap_servers": kafka_bootstrap, "topic": direct}
        dlq = {"type": "files", "config": {"path": str(tmp_path / "dlq"), "format": "jsonl"}}
        spec = validate_spec(
            {
                "source": kafka_source(kafka_bootstrap, source),
                "rules": [
                    {"name": "away", "sinks": [{"type": "kafka", "config": unreachable}]},
                    {"name": "direct", "sinks": [{"type": "kafka", "config": reachable}]},
                ],
                "errors": {"tolerance": "all", "dead_letter": dlq},
            }
        )
        dead: list[int] = []
        retries: list[int] = []
        query = build_stream(
            spark,
            spec,
            channel="retry-bus",
            checkpoint_dir=str(tmp_path / "checkpoint"),
            on_dead_letters=dead.append,
            on_retries=retries.append,
        ).start()
        try:
            query.processAllAvailable()
            assert query.exception() is None
        finally:
            query.stop()
    delivered = consume(kafka_bootstrap, direct, 20)  # the other rule's target kept going
    assert sorted(json.loads(m.value())["n"] for m in delivered) == list(range(20))
    assert sum(dead) == 20 and sum(retries) == 1
    letters = [json.loads(r.value) for r in spark.read.text(str(tmp_path / "dlq")).collect()]
    assert {(d["rule"], d["target"], d["attempts"], d["error_class"]) for d in letters} == {
        ("away", "rules[0].sinks[0]", 2, "TimeoutException")
    }
    assert sorted(json.loads(d["payload"])["n"] for d in letters) == list(range(20))
