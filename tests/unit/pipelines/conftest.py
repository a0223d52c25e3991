"""Fixtures of the pipelines tests: one local SparkSession, conformance vectors, Kafka rows."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from datetime import UTC, datetime
from typing import Any

import pytest

from tests.support.spark import local_spark

KAFKA_SCHEMA = (
    "key binary, value binary, topic string, partition int, offset bigint, "
    "timestamp timestamp, timestampType int"
)
"""The schema of Spark's Kafka source (without headers)."""


@pytest.fixture(scope="session")
def spark() -> Iterator[Any]:
    """The one local SparkSession of the test session (see tests.support.spark)."""
    session = local_spark()
    yield session
    session.stop()


KafkaRow = tuple[str, int, int, bytes | None] | tuple[str, int, int, bytes | None, bytes | None]
"""(topic, partition, offset, value) or (…, value, key)."""


@pytest.fixture
def kafka_records(spark: Any) -> Callable[..., Any]:
    """Build a batch DataFrame shaped like Spark's Kafka source from (topic, partition,
    offset, value[, key]) rows; every record has the same timestamp, ``RECORD_TIME``."""

    def build(rows: list[KafkaRow]) -> Any:
        data = [
            (row[4] if len(row) > 4 else None, row[3], row[0], row[1], row[2], RECORD_TIME, 0)
            for row in rows
        ]
        return spark.createDataFrame(data, KAFKA_SCHEMA)

    return build


RECORD_TIME = datetime(2024, 6, 1, 8, 15, 30, 120000, tzinfo=UTC)
RECORD_TIME_TEXT = "2024-06-01T08:15:30.120Z"
