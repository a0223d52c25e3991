"""Fixtures of the pipelines tests: one local SparkSession, conformance vectors, Kafka rows."""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from tests.support.spark import local_spark

REPO_ROOT = Path(__file__).resolve().parents[3]
CONFORMANCE_FILE = Path(
    os.environ.get(
        "SLUICE_CONFORMANCE_FILE",
        REPO_ROOT.parent / "shared" / "conformance" / "event_patterns.json",
    )
)

KAFKA_SCHEMA = (
    "key binary, value binary, topic string, partition int, offset bigint, "
    "timestamp timestamp, timestampType int"
)
"""The schema of Spark's Kafka source (without headers)."""


def load_conformance() -> dict[str, Any]:
    """The conformance file; the test is skipped when it is not there."""
    if not CONFORMANCE_FILE.exists():
        pytest.skip(f"conformance vectors not found at {CONFORMANCE_FILE}")
    return json.loads(CONFORMANCE_FILE.read_text(encoding="utf-8"))


@pytest.fixture(scope="session")
def spark() -> Iterator[Any]:
    """The one local SparkSession of the test session (see tests.support.spark)."""
    session = local_spark()
    yield session
    session.stop()


KafkaRow = tuple[str, int, int, bytes | None]


@pytest.fixture
def kafka_records(spark: Any) -> Callable[..., Any]:
    """Build a batch DataFrame shaped like Spark's Kafka source from (topic, partition,
    offset, value) rows; every record has the same timestamp, ``RECORD_TIME``."""

    def build(rows: list[KafkaRow]) -> Any:
        data = [(None, value, topic, p, o, RECORD_TIME, 0) for topic, p, o, value in rows]
        return spark.createDataFrame(data, KAFKA_SCHEMA)

    return build


RECORD_TIME = datetime(2024, 6, 1, 8, 15, 30, 120000, tzinfo=UTC)
RECORD_TIME_TEXT = "2024-06-01T08:15:30.120Z"
