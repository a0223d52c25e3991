"""JDBC sink on SQLite: rows from events, upsert idempotency, one transaction per call.

The same checks run against a real PostgreSQL in tests/integration/test_kafka_plugins.py.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from pipelines.sinks import SINKS
from pipelines.sinks.jdbc import events_to_rows, upsert_rows, write_jdbc
from pipelines.sources.kafka import kafka_records_to_events
from pipelines.spec.configs import JdbcSinkConfig, KafkaSourceConfig
from tests.unit.pipelines.conftest import RECORD_TIME_TEXT

ROWS = [
    ("e-1", "/s", "t", "2024-06-01T08:15:30Z", None, '{"n":1}'),
    ("e-2", "/s", "t", None, "sub", "null"),
    ("e-3", "/s", "t", None, None, None),
]


def table(path: Path, name: str = "events") -> list[tuple[Any, ...]]:
    with sqlite3.connect(path) as connection:
        query = f'SELECT id, source, type, time, subject, data FROM "{name}" ORDER BY id'
        return connection.execute(query).fetchall()


def test_upsert_creates_the_table_and_is_idempotent(tmp_path: Path) -> None:
    config = JdbcSinkConfig(url=f"sqlite:///{tmp_path}/db/events.db", batch_size=2)
    assert upsert_rows(config, ROWS) == 3
    assert upsert_rows(config, ROWS) == 3  # a replayed micro-batch
    assert table(tmp_path / "db" / "events.db") == ROWS

    changed = [("e-2", "/s2", "t2", None, None, '{"v":2}')]
    upsert_rows(config, changed)
    assert table(tmp_path / "db" / "events.db")[1] == changed[0]


def test_a_failed_batch_commits_nothing(tmp_path: Path) -> None:
    config = JdbcSinkConfig(url=f"sqlite:///{tmp_path}/e.db", table="audit", batch_size=1)
    upsert_rows(config, ROWS[:1])
    bad = [ROWS[1], ("e-9", None, "t", None, None, None)]  # source is NOT NULL
    with pytest.raises(sqlite3.IntegrityError):
        upsert_rows(config, bad)
    assert [row[0] for row in table(tmp_path / "e.db", "audit")] == ["e-1"]


@pytest.mark.spark
def test_rows_from_events(kafka_records: Callable[..., Any]) -> None:
    source = KafkaSourceConfig(bootstrap_servers="k:1", topics=["in"])
    events = kafka_records_to_events(kafka_records([("in", 1, 2, b'{"a": [1]}')]), source)
    data_only = JdbcSinkConfig(url="sqlite:///x.db", content="data")
    [row] = events_to_rows(events, data_only).collect()
    assert tuple(row) == (
        "in/1/2",
        "kafka://in",
        "sluice.kafka.record",
        RECORD_TIME_TEXT,
        None,
        '{"a":[1]}',
    )
    [whole] = events_to_rows(events, JdbcSinkConfig(url="sqlite:///x.db")).collect()
    assert json.loads(whole.data)["id"] == "in/1/2"
    assert json.loads(whole.data)["data"] == {"a": [1]}
    assert SINKS["jdbc"] is write_jdbc
