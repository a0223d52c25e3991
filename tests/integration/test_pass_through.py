"""Pass-through channels (:mod:`pipelines.passthrough`) on a real broker: Kafka records copied
as they are (key, value, headers, timestamp), bad values under either error policy.

Each query runs with ``trigger(availableNow=True)``: it copies what the topic holds and stops.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from pyspark.errors import StreamingQueryException
from pyspark.sql import SparkSession

from pipelines.builder import build_stream
from pipelines.passthrough import passes_through
from pipelines.sinks.kafka import TIMESTAMP_HEADER
from pipelines.spec import validate_spec
from tests.integration.test_kafka_plugins import consume, new_topic, produce
from tests.support.spark import local_spark
from tests.support.specs import kafka_passthrough

pytestmark = [pytest.mark.integration, pytest.mark.spark]


@pytest.fixture(scope="module")
def spark() -> Iterator[SparkSession]:
    """The process's SparkSession (with the Kafka connector and Sluice's functions)."""
    yield local_spark()


OLD = 1_717_228_800_000  # 2024-06-01T08:00:00Z: a timestamp the copy must keep


def channel(bootstrap: str, source: str, sink: str, **more: Any) -> dict[str, Any]:
    return {**kafka_passthrough(bootstrap, source, sink, sink_format="json"), **more}


def run_channel(spark: SparkSession, spec: dict[str, Any], checkpoint: Path) -> Any:
    writer = build_stream(
        spark, validate_spec(spec), channel="copy", checkpoint_dir=str(checkpoint)
    )
    query = writer.trigger(availableNow=True).start()
    try:
        assert query.awaitTermination(120), "the query did not finish"
    finally:
        query.stop()
    return query


def test_a_channel_without_transforms_copies_records_as_they_are(
    spark: SparkSession, kafka_bootstrap: str, tmp_path: Path
) -> None:
    config = {"retention.ms": "-1"}  # the 2024 timestamps must not be deleted while we read
    source, sink = (
        new_topic(kafka_bootstrap, config=config),
        new_topic(kafka_bootstrap, config=config),
    )
    produce(
        kafka_bootstrap,
        source,
        [
            {"key": b"c-1", "value": b'{ "a" : 1,\n  "b": [1, 2.50] }', "timestamp": OLD},
            {"key": b"\xff\xfe", "value": b"[1,2]", "timestamp": OLD + 1},  # not UTF-8
            {"value": b'"text"', "headers": [("trace", b"t-1"), ("Content-Type", b"text/x+json")]},
            {"key": b"gone", "value": None},  # a tombstone: skipped, as by the event path
            {"value": b'{"n": 1e400}', "headers": [("trace", b"t-2")], "timestamp": OLD + 2},
        ],
    )
    spec = channel(kafka_bootstrap, source, sink)
    assert passes_through(spark, validate_spec(spec))
    query = run_channel(spark, spec, tmp_path / "copy")
    first, second, third, fourth = consume(kafka_bootstrap, sink, 4)

    assert first.value() == b'{ "a" : 1,\n  "b": [1, 2.50] }'  # the bytes, not rewritten
    assert first.key() == b"c-1"
    assert first.timestamp()[1] == OLD
    assert first.headers() == [("content-type", b"application/json")]
    assert second.key() == b"\xff\xfe"
    assert second.timestamp()[1] == OLD + 1
    assert third.key() == f"{source}/0/2".encode()  # no key: the event id, as before
    assert third.headers() == [("trace", b"t-1"), ("Content-Type", b"text/x+json")]
    assert fourth.value() == b'{"n": 1e400}'
    assert fourth.timestamp()[1] == OLD + 2
    assert fourth.headers() == [("trace", b"t-2"), ("content-type", b"application/json")]
    assert all(TIMESTAMP_HEADER not in dict(r.headers() or []) for r in (first, third))
    read = sum(p["numInputRows"] for p in query.recentProgress)
    written = sum(p["sink"]["numOutputRows"] for p in query.recentProgress)
    assert (read, written) == (5, 4)  # the tombstone is read, not written


def test_a_value_that_is_not_json_fails_the_copy_naming_the_record(
    spark: SparkSession, kafka_bootstrap: str, tmp_path: Path
) -> None:
    source, sink = new_topic(kafka_bootstrap), new_topic(kafka_bootstrap)
    produce(kafka_bootstrap, source, [{"value": b'{"a": 1}'}, {"value": b'{"a": '}])
    spec = channel(kafka_bootstrap, source, sink)
    with pytest.raises(StreamingQueryException) as failed:
        run_channel(spark, spec, tmp_path / "strict")
    message = str(failed.value)
    assert f"Kafka record topic={source} partition=0 offset=1: value is not valid JSON" in message
    assert "[InvalidJson]" in message and "source:" in message


def test_under_tolerance_all_bad_values_become_dead_letters_and_the_rest_is_copied(
    spark: SparkSession, kafka_bootstrap: str, tmp_path: Path
) -> None:
    source, sink, dead = (new_topic(kafka_bootstrap) for _ in range(3))
    values = [b'{"seq": 0}', b"not json", b'{"seq": 2}', b'{"a":1,"a":2}', b'{"seq": 4}']
    produce(kafka_bootstrap, source, [{"key": b"k", "value": v} for v in values])
    dead_letter = {
        "type": "kafka",
        "config": {"bootstrap_servers": kafka_bootstrap, "topic": dead, "format": "cloudevents"},
    }
    spec = channel(
        kafka_bootstrap, source, sink, errors={"tolerance": "all", "dead_letter": dead_letter}
    )
    assert passes_through(spark, validate_spec(spec))
    run_channel(spark, spec, tmp_path / "tolerant")

    copied = consume(kafka_bootstrap, sink, 3)
    assert [r.value() for r in copied] == [values[0], values[2], values[4]]
    assert all(r.key() == b"k" for r in copied)
    letters = [json.loads(r.value()) for r in consume(kafka_bootstrap, dead, 2)]
    by_offset = {letter["data"]["origin"]["offset"]: letter for letter in letters}
    assert sorted(by_offset) == [1, 3]
    for offset, letter in by_offset.items():
        assert letter["id"] == f"{source}/0/{offset}"
        assert letter["data"]["stage"] == "source"
        assert letter["data"]["error_class"] == "InvalidJson"
        assert letter["data"]["payload"] == values[offset].decode()
        assert f"offset={offset}: value is not valid JSON" in letter["data"]["message"]


def test_channels_that_need_the_event_take_the_event_path(
    spark: SparkSession, kafka_bootstrap: str
) -> None:
    base = channel(kafka_bootstrap, "in", "out")
    assert passes_through(spark, validate_spec(base))
    needing = [
        {**base, "transforms": [{"type": "filter", "config": {"pattern": {"data": {"a": [1]}}}}]},
        {
            **base,
            "sink": {**base["sink"], "config": {**base["sink"]["config"], "format": "cloudevents"}},
        },
        {
            **base,
            "sink": {**base["sink"], "config": {**base["sink"]["config"], "key_field": "data.a"}},
        },
        {
            **base,
            "source": {**base["source"], "config": {**base["source"]["config"], "format": "raw"}},
        },
    ]
    for spec in needing:
        assert not passes_through(spark, validate_spec(spec)), spec
