"""Kafka source and sink, and the JDBC sink, on a real broker and a real PostgreSQL.

Each query runs with ``trigger(availableNow=True)``: it reads what the topics hold, writes it,
and stops by itself.
"""

from __future__ import annotations

import json
import sqlite3
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from confluent_kafka import Consumer, Producer
from confluent_kafka.admin import AdminClient, NewTopic
from pyspark.sql import DataFrame, SparkSession

from pipelines.cloudevents import event_json
from pipelines.net import JDBC_ALLOW_ENV
from pipelines.sinks.jdbc import upsert_rows, write_jdbc
from pipelines.sinks.kafka import write_kafka
from pipelines.sources.kafka import kafka_records_to_events, read_kafka
from pipelines.spec.configs import JdbcSinkConfig, KafkaSinkConfig, KafkaSourceConfig
from tests.support.spark import local_spark, run_available_now

pytestmark = [pytest.mark.integration, pytest.mark.spark]

Header = tuple[str, bytes]


@pytest.fixture(scope="module")
def spark() -> Iterator[SparkSession]:
    """The process's SparkSession (with the Kafka connector; shared with the unit tests)."""
    yield local_spark()


def new_topic(
    bootstrap: str, partitions: int = 1, prefix: str = "it", config: dict[str, str] | None = None
) -> str:
    name = f"{prefix}-{uuid.uuid4().hex[:8]}"
    admin = AdminClient({"bootstrap.servers": bootstrap})  # kept alive until the topic exists
    topic = NewTopic(name, num_partitions=partitions, replication_factor=1, config=config or {})
    futures = admin.create_topics([topic])
    futures[name].result(timeout=30)
    return name


def produce(bootstrap: str, topic: str, records: list[dict[str, Any]]) -> None:
    """Each record: ``value`` and optional ``key``, ``headers``, ``partition``, ``timestamp``."""
    producer = Producer({"bootstrap.servers": bootstrap})
    for record in records:
        producer.produce(topic, **record)
    assert producer.flush(30) == 0


def consume(bootstrap: str, topic: str, count: int, timeout: float = 30) -> list[Any]:
    consumer = Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": f"it-{uuid.uuid4().hex}",
            "auto.offset.reset": "earliest",
        }
    )
    consumer.subscribe([topic])
    messages: list[Any] = []
    deadline = time.monotonic() + timeout
    try:
        while len(messages) < count and time.monotonic() < deadline:
            message = consumer.poll(0.5)
            if message is not None and message.error() is None:
                messages.append(message)
    finally:
        consumer.close()
    assert len(messages) == count, f"read {len(messages)} of {count} records from {topic}"
    return sorted(messages, key=lambda m: (m.partition(), m.offset()))


def read_events(spark: SparkSession, config: KafkaSourceConfig, tmp_path: Path) -> list[Any]:
    """Run the source once over what the topics hold; the events' JSON forms, by offset."""
    name = f"events_{uuid.uuid4().hex[:8]}"
    events = kafka_records_to_events(read_kafka(spark, config), config)
    query = (
        events.select(event_json().alias("j"), "origin_partition", "origin_offset")
        .writeStream.format("memory")
        .queryName(name)
        .option("checkpointLocation", str(tmp_path / name))
        .trigger(availableNow=True)
        .start()
    )
    try:
        assert query.awaitTermination(120), "the query did not finish"
    finally:
        query.stop()
    rows = spark.table(name).orderBy("origin_partition", "origin_offset").collect()
    return [json.loads(row.j) for row in rows]


def stream(spark: SparkSession, config: KafkaSourceConfig) -> DataFrame:
    return kafka_records_to_events(read_kafka(spark, config), config)


BINARY_HEADERS: list[Header] = [
    ("ce_specversion", b"1.0"),
    ("ce_id", b"order-1"),
    ("ce_source", b"/shop"),
    ("ce_type", b"order.created"),
    ("ce_time", b"2024-06-01T08:00:00Z"),
    ("ce_traceparent", b"00-abc-01"),
    ("content-type", b"application/json"),
]


def test_binary_cloudevents_in_and_out(
    spark: SparkSession, kafka_bootstrap: str, tmp_path: Path
) -> None:
    source_topic, sink_topic = new_topic(kafka_bootstrap), new_topic(kafka_bootstrap)
    produce(
        kafka_bootstrap,
        source_topic,
        [{"value": b'{"customer": "c-9", "total": 5}', "headers": BINARY_HEADERS}],
    )
    source = KafkaSourceConfig(
        bootstrap_servers=kafka_bootstrap,
        topics=[source_topic],
        starting_offsets="earliest",
        format="cloudevents-binary",
    )
    [event] = read_events(spark, source, tmp_path)
    assert event == {
        "specversion": "1.0",
        "id": "order-1",
        "source": "/shop",
        "type": "order.created",
        "time": "2024-06-01T08:00:00Z",
        "datacontenttype": "application/json",
        "traceparent": "00-abc-01",
        "data": {"customer": "c-9", "total": 5},
    }

    sink = KafkaSinkConfig(
        bootstrap_servers=kafka_bootstrap,
        topic=sink_topic,
        format="cloudevents-binary",
        key_field="data.customer",
    )
    run_available_now(write_kafka(stream(spark, source), sink), tmp_path / "sink")
    [record] = consume(kafka_bootstrap, sink_topic, 1)
    assert record.key() == b"c-9"
    assert json.loads(record.value()) == {"customer": "c-9", "total": 5}
    assert sorted(record.headers()) == sorted(BINARY_HEADERS)


def test_raw_records_and_structured_output(
    spark: SparkSession, kafka_bootstrap: str, tmp_path: Path
) -> None:
    source_topic, sink_topic = new_topic(kafka_bootstrap), new_topic(kafka_bootstrap)
    produce(kafka_bootstrap, source_topic, [{"value": b"GET /index.html 200"}, {"value": b"{"}])
    source = KafkaSourceConfig(
        bootstrap_servers=kafka_bootstrap,
        topics=[source_topic],
        starting_offsets="earliest",
        format="raw",
    )
    sink = KafkaSinkConfig(
        bootstrap_servers=kafka_bootstrap, topic=sink_topic, format="cloudevents"
    )
    run_available_now(write_kafka(stream(spark, source), sink), tmp_path / "sink")

    records = consume(kafka_bootstrap, sink_topic, 2)
    assert [record.key() for record in records] == [
        f"{source_topic}/0/0".encode(),
        f"{source_topic}/0/1".encode(),
    ]
    values = [json.loads(record.value()) for record in records]
    assert [value["data"] for value in values] == ["GET /index.html 200", "{"]
    assert values[0]["datacontenttype"] == "text/plain; charset=utf-8"


def test_starting_offsets_by_timestamp_and_explicit(
    spark: SparkSession, kafka_bootstrap: str, tmp_path: Path
) -> None:
    # Records from 2024 are past the default 7-day retention: without retention.ms=-1 the
    # broker's retention check (30 s after it starts, then every 5 minutes) deletes them while
    # the test reads, and "earliest" becomes the end of the log.
    topic = new_topic(kafka_bootstrap, partitions=2, config={"retention.ms": "-1"})
    base = 1_717_228_800_000  # 2024-06-01T08:00:00Z
    produce(
        kafka_bootstrap,
        topic,
        [
            {"value": json.dumps({"n": n}).encode(), "partition": n % 2, "timestamp": base + n}
            for n in range(6)
        ],
    )

    def numbers(starting_offsets: Any, **more: Any) -> list[int]:
        config = KafkaSourceConfig.model_validate(
            {
                "bootstrap_servers": kafka_bootstrap,
                "starting_offsets": starting_offsets,
                **({"topics": [topic]} if "topic_pattern" not in more else {}),
                **more,
            }
        )
        events = read_events(spark, config, tmp_path)
        return sorted(event["data"]["n"] for event in events)

    assert numbers({"timestamp": base + 3}) == [3, 4, 5]
    assert numbers({"timestamp": "2024-06-01T08:00:00.004Z"}) == [4, 5]
    assert numbers({"timestamp": base + 60_000}) == []  # after every record: latest, no error
    assert numbers({"offsets": {topic: {"0": 2, "1": -2}}}) == [1, 3, 4, 5]
    assert numbers("earliest", topic_pattern=f"{topic[:-2]}.*", max_events_per_trigger=2) == [
        0,
        1,
        2,
        3,
        4,
        5,
    ]


def test_max_events_per_trigger_bounds_each_micro_batch(
    spark: SparkSession, kafka_bootstrap: str, tmp_path: Path
) -> None:
    topic, out = new_topic(kafka_bootstrap), new_topic(kafka_bootstrap)
    produce(kafka_bootstrap, topic, [{"value": b"1"} for _ in range(5)])
    source = KafkaSourceConfig(
        bootstrap_servers=kafka_bootstrap,
        topics=[topic],
        starting_offsets="earliest",
        max_events_per_trigger=2,
    )
    sink = KafkaSinkConfig(bootstrap_servers=kafka_bootstrap, topic=out)
    query = run_available_now(write_kafka(stream(spark, source), sink), tmp_path / "sink")
    rows = [progress["numInputRows"] for progress in query.recentProgress]
    assert [n for n in rows if n] == [2, 2, 1]


def test_key_and_topic_from_fields_and_extensions(
    spark: SparkSession, kafka_bootstrap: str, tmp_path: Path
) -> None:
    source_topic = new_topic(kafka_bootstrap)
    eu, us, default = (new_topic(kafka_bootstrap, prefix=p) for p in ("eu", "us", "all"))
    produce(
        kafka_bootstrap,
        source_topic,
        [
            {"value": json.dumps({"to": eu, "customer": 1}).encode()},
            {"value": json.dumps({"to": us, "customer": 2}).encode()},
            {"value": json.dumps({"customer": 3}).encode()},
        ],
    )
    source = KafkaSourceConfig(
        bootstrap_servers=kafka_bootstrap, topics=[source_topic], starting_offsets="earliest"
    )
    sink = KafkaSinkConfig(
        bootstrap_servers=kafka_bootstrap,
        topic=default,
        topic_field="data.to",
        key_field="data.customer",
    )
    run_available_now(write_kafka(stream(spark, source), sink), tmp_path / "sink")

    assert [
        (r.key(), json.loads(r.value())["customer"]) for r in consume(kafka_bootstrap, eu, 1)
    ] == [(b"1", 1)]
    assert [r.key() for r in consume(kafka_bootstrap, us, 1)] == [b"2"]
    assert [r.key() for r in consume(kafka_bootstrap, default, 1)] == [b"3"]


# -- JDBC ----------------------------------------------------------------------------------

ROWS = [
    ("e-1", "/s", "t", "2024-06-01T08:15:30.120Z", None, '{"n": 1}'),
    ("e-2", "/s", "t", None, "sub", "null"),
    ("e-3", "/s", "t", None, None, None),
]


@pytest.fixture
def local_postgres_allowed(monkeypatch: pytest.MonkeyPatch) -> None:
    """The throwaway PostgreSQL listens on loopback, which the JDBC sink's guard refuses
    unless allowed."""
    monkeypatch.setenv(JDBC_ALLOW_ENV, "127.0.0.1")


@pytest.mark.usefixtures("local_postgres_allowed")
def test_jdbc_upsert_on_postgresql_is_idempotent(postgres_url: str) -> None:
    import psycopg

    table = f"events_{uuid.uuid4().hex[:8]}"
    config = JdbcSinkConfig(url=postgres_url, table=table, batch_size=2)
    assert upsert_rows(config, ROWS) == 3
    assert upsert_rows(config, ROWS) == 3  # the same micro-batch replayed
    upsert_rows(config, [("e-2", "/s2", "t2", None, None, '{"v": 2}')])
    with psycopg.connect(postgres_url) as connection:
        rows = connection.execute(
            f"SELECT id, source, type, time, subject, data FROM {table} ORDER BY id"
        ).fetchall()
    assert [(row[0], row[1], row[5]) for row in rows] == [
        ("e-1", "/s", {"n": 1}),
        ("e-2", "/s2", {"v": 2}),
        ("e-3", "/s", None),
    ]
    assert rows[0][3].isoformat() == "2024-06-01T08:15:30.120000+00:00"


@pytest.mark.usefixtures("local_postgres_allowed")
def test_jdbc_sink_streams_from_kafka_and_a_replay_writes_no_duplicate(
    spark: SparkSession, kafka_bootstrap: str, tmp_path: Path, postgres_url: str
) -> None:
    topic = new_topic(kafka_bootstrap)
    produce(kafka_bootstrap, topic, [{"value": json.dumps({"n": n}).encode()} for n in range(4)])
    source = KafkaSourceConfig(
        bootstrap_servers=kafka_bootstrap, topics=[topic], starting_offsets="earliest"
    )
    sqlite = JdbcSinkConfig(url=f"sqlite:///{tmp_path}/events.db", content="data")
    postgres = JdbcSinkConfig(url=postgres_url, table=f"t_{uuid.uuid4().hex[:8]}")
    for attempt in ("first", "replay"):  # a new checkpoint re-reads every record
        run_available_now(write_jdbc(stream(spark, source), sqlite), tmp_path / f"sqlite-{attempt}")
        run_available_now(write_jdbc(stream(spark, source), postgres), tmp_path / f"pg-{attempt}")

    with sqlite3.connect(tmp_path / "events.db") as connection:
        rows = connection.execute("SELECT id, data FROM events ORDER BY id").fetchall()
    assert rows == [
        (f"{topic}/0/{n}", json.dumps({"n": n}, separators=(",", ":"))) for n in range(4)
    ]

    import psycopg

    with psycopg.connect(postgres_url) as connection:
        found = connection.execute(f"SELECT id, data FROM {postgres.table} ORDER BY id").fetchall()
    assert [row[0] for row in found] == [f"{topic}/0/{n}" for n in range(4)]
    assert found[0][1]["id"] == f"{topic}/0/0" and found[0][1]["data"] == {"n": 0}
