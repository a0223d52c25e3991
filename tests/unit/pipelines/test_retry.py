"""The sinks' retry policy: its config (validation, defaults, JSON Schema), its backoff
schedule, and :class:`pipelines.retry.RetriedWrite` on real Spark DataFrames (max event
age, dead letters with the attempts, strict failure)."""

from __future__ import annotations

import random
import time
from datetime import UTC, datetime
from typing import Any

import pytest
import tenacity
from pydantic import ValidationError
from pyspark.sql import DataFrame, SparkSession

from pipelines.retry import (
    TOO_OLD,
    RetriedWrite,
    RetriesExhausted,
    backoff_bound,
    backoff_wait,
    sink_dead_letters,
)
from pipelines.spec import SpecError, validate_spec
from pipelines.spec.configs.http_sink import HttpRetry
from pipelines.spec.configs.retry import SinkRetry
from pipelines.spec.live import retry_policy
from pipelines.spec.plugins import get_plugin
from tests.unit.pipelines.event_rows import events_frame

# -- the config ----------------------------------------------------------------------------


def spec_with_sink(sink: dict[str, Any]) -> dict[str, Any]:
    return {
        "source": {"type": "generator", "config": {}},
        "sink": sink,
    }


def test_unset_and_the_defaults_both_mean_one_attempt() -> None:
    policy = SinkRetry()
    assert (policy.attempts, policy.backoff_ms, policy.max_backoff_ms) == (1, 1000, 60_000)
    assert policy.max_event_age_seconds == 86_400
    spec = validate_spec(spec_with_sink({"type": "jdbc", "config": {"url": "sqlite:///a.db"}}))
    assert spec.the_sink.config["retry"] is None  # nothing set: today's behaviour
    assert retry_policy(spec.the_sink) is None
    # what the builder's form sends (every default filled in) is today's behaviour too
    config = {"url": "sqlite:///a.db", "retry": SinkRetry().model_dump()}
    spec = validate_spec(spec_with_sink({"type": "jdbc", "config": config}))
    assert retry_policy(spec.the_sink) is None


@pytest.mark.parametrize("sink_type", ["kafka", "jdbc", "files"])
def test_every_sink_takes_a_retry_policy(sink_type: str) -> None:
    config: dict[str, Any] = {
        "kafka": {"bootstrap_servers": "localhost:9092", "topic": "out"},
        "jdbc": {"url": "sqlite:///a.db"},
        "files": {"path": "outbox"},
    }[sink_type]
    retry = {
        "attempts": 5,
        "backoff_ms": 200,
        "max_backoff_ms": 2000,
        "max_event_age_seconds": None,
    }
    spec = validate_spec(spec_with_sink({"type": sink_type, "config": {**config, "retry": retry}}))
    assert spec.the_sink.config["retry"] == retry
    policy = retry_policy(spec.the_sink)
    assert policy is not None and policy.attempts == 5 and policy.max_event_age_seconds is None


@pytest.mark.parametrize(
    ("retry", "field", "text"),
    [
        ({"attempts": 0}, "attempts", "greater than or equal to 1"),
        ({"attempts": 186}, "attempts", "less than or equal to 185"),
        ({"attempts": "3"}, "attempts", "must be an integer"),
        ({"backoff_ms": 5000, "max_backoff_ms": 1000}, "max_backoff_ms", ">= backoff_ms (5000)"),
        ({"max_event_age_seconds": 0}, "max_event_age_seconds", "greater than or equal to 1"),
        ({"max_event_age_seconds": 90_000}, "max_event_age_seconds", "less than or equal"),
        ({"tries": 3}, "tries", "unknown field"),
    ],
)
def test_a_bad_policy_is_reported_at_its_field(
    retry: dict[str, Any], field: str, text: str
) -> None:
    sink = {"type": "jdbc", "config": {"url": "sqlite:///a.db", "retry": retry}}
    with pytest.raises(SpecError) as raised:
        validate_spec(spec_with_sink(sink))
    errors = raised.value.errors
    assert list(errors) == [f"sink.config.retry.{field}"], errors
    assert text in " ".join(errors[f"sink.config.retry.{field}"])


def test_the_dead_letter_target_takes_a_policy_too() -> None:
    spec = spec_with_sink({"type": "jdbc", "config": {"url": "sqlite:///a.db"}})
    dead_letter = {"type": "files", "config": {"path": "dlq", "retry": {"attempts": 0}}}
    spec["errors"] = {"tolerance": "all", "dead_letter": dead_letter}
    with pytest.raises(SpecError) as raised:
        validate_spec(spec)
    assert list(raised.value.errors) == ["errors.dead_letter.config.retry.attempts"]


def test_the_json_schema_of_each_sink_has_the_policy_for_the_builder_form() -> None:
    for sink_type in ("kafka", "jdbc", "files"):
        schema = get_plugin("sink", sink_type).json_schema
        retry = schema["properties"]["retry"]
        assert retry["title"] == "Retry policy" and retry["default"] is None
        policy = schema["$defs"]["SinkRetry"]["properties"]
        assert set(policy) == {"attempts", "backoff_ms", "max_backoff_ms", "max_event_age_seconds"}
        assert policy["attempts"]["maximum"] == 185
    http = get_plugin("sink", "http").json_schema["$defs"]["HttpRetry"]["properties"]
    assert {"attempts", "backoff_ms", "max_backoff_ms", "max_event_age_seconds"} <= set(http)


def test_the_http_retry_takes_the_shared_millisecond_spelling() -> None:
    retry = HttpRetry.model_validate({"backoff_ms": 250, "max_backoff_ms": 4000})
    assert (retry.backoff_initial_seconds, retry.backoff_max_seconds) == (0.25, 4.0)
    assert HttpRetry.model_validate({"max_event_age_seconds": None}).max_event_age_seconds is None
    with pytest.raises(ValidationError, match="backoff_ms and backoff_initial_seconds disagree"):
        HttpRetry.model_validate({"backoff_ms": 250, "backoff_initial_seconds": 1.0})
    old = HttpRetry.model_validate({"backoff_initial_seconds": 2.0})  # today's spelling
    assert old.backoff_initial_seconds == 2.0 and old.backoff_ms is None


# -- the backoff schedule -------------------------------------------------------------------


def test_the_backoff_bound_doubles_up_to_its_cap() -> None:
    policy = SinkRetry(attempts=10, backoff_ms=500, max_backoff_ms=5000)
    bounds = [backoff_bound(policy, n) for n in range(1, 8)]
    assert bounds == [0.5, 1.0, 2.0, 4.0, 5.0, 5.0, 5.0]


def test_waits_are_full_jitter_under_the_bound() -> None:
    policy = SinkRetry(attempts=10, backoff_ms=500, max_backoff_ms=5000)
    wait = backoff_wait(policy)
    random.seed(7)
    for retry in range(1, 8):
        state = tenacity.RetryCallState(tenacity.Retrying(), fn=None, args=(), kwargs={})
        state.attempt_number = retry
        draws = [wait(state) for _ in range(400)]
        bound = backoff_bound(policy, retry)
        assert all(0 <= draw <= bound for draw in draws)
        assert max(draws) > 0.9 * bound and min(draws) < 0.1 * bound  # spread over all of it


# -- RetriedWrite on real DataFrames --------------------------------------------------------


class FlakyWrite:
    """A write that raises ``error`` on its first ``failures`` calls; records what it got."""

    def __init__(self, failures: int, error: Exception | None = None) -> None:
        self.failures = failures
        self.error = error or ConnectionError("connection refused")
        self.calls: list[list[str]] = []

    def __call__(self, events: DataFrame) -> None:
        self.calls.append(sorted(row.id for row in events.select("id").collect()))
        if len(self.calls) <= self.failures:
            raise self.error


def retried(
    write: FlakyWrite, policy: SinkRetry, *, tolerant: bool, now: float | None = None
) -> tuple[RetriedWrite, list[float], list[int]]:
    sleeps: list[float] = []
    counted: list[int] = []
    runner = RetriedWrite(
        write=write,
        policy=policy,
        what="jdbc sink",
        tolerant=tolerant,
        dead_letters=sink_dead_letters("sink"),
        on_retry=counted.append,
        sleep=sleeps.append,
        clock=(lambda: now) if now is not None else time.time,
    )
    return runner, sleeps, counted


@pytest.mark.spark
def test_a_write_that_heals_is_retried_and_loses_nothing(spark: SparkSession) -> None:
    events = events_frame(spark, [{"data": {"n": n}} for n in range(3)])
    write = FlakyWrite(failures=2)
    policy = SinkRetry(attempts=4, backoff_ms=100, max_backoff_ms=1000, max_event_age_seconds=None)
    runner, sleeps, counted = retried(write, policy, tolerant=True)
    assert runner(events) is None
    assert runner.attempts == 3 and counted == [1, 1]
    assert write.calls == [["orders/0/0", "orders/0/1", "orders/0/2"]] * 3
    assert len(sleeps) == 2 and sleeps[0] <= 0.1 and sleeps[1] <= 0.2


@pytest.mark.spark
def test_after_the_attempts_the_events_are_dead_letters_with_the_last_error(
    spark: SparkSession,
) -> None:
    events = events_frame(spark, [{"data": {"n": n}} for n in range(2)])
    write = FlakyWrite(failures=99, error=OSError("server closed the connection"))
    policy = SinkRetry(attempts=3, backoff_ms=1, max_backoff_ms=1, max_event_age_seconds=None)
    runner, sleeps, counted = retried(write, policy, tolerant=True)
    dead = runner(events)
    assert dead is not None and len(write.calls) == 3 and counted == [1, 1] and len(sleeps) == 2
    rows = sorted(dead.collect(), key=lambda row: row.event_id)
    assert [row.event_id for row in rows] == ["orders/0/0", "orders/0/1"]
    assert {(row.stage, row.error_class, row.attempts) for row in rows} == {("sink", "OSError", 3)}
    assert rows[0].message == (
        "jdbc sink: write failed after 3 attempt(s): OSError: server closed the connection"
    )
    assert rows[0].origin_topic == "orders" and rows[0].origin_offset == 0
    assert '"id":"orders/0/0"' in rows[0].event


@pytest.mark.spark
def test_a_strict_channel_fails_with_the_last_error_after_the_attempts(
    spark: SparkSession,
) -> None:
    events = events_frame(spark, [{"data": {"n": 1}}])
    write = FlakyWrite(failures=99)
    policy = SinkRetry(attempts=2, backoff_ms=1, max_backoff_ms=1, max_event_age_seconds=None)
    runner, _, _ = retried(write, policy, tolerant=False)
    with pytest.raises(RetriesExhausted, match="after 2 attempt") as raised:
        runner(events)
    assert isinstance(raised.value.__cause__, ConnectionError) and raised.value.attempts == 2


@pytest.mark.spark
def test_events_past_their_max_age_are_not_retried(spark: SparkSession) -> None:
    now = datetime(2024, 6, 1, 12, 0, tzinfo=UTC).timestamp()
    events = events_frame(
        spark,
        [
            {"data": {"n": 0}, "origin_timestamp": datetime(2024, 6, 1, 11, 0, tzinfo=UTC)},
            {"data": {"n": 1}, "origin_timestamp": datetime(2024, 6, 1, 11, 59, tzinfo=UTC)},
        ],
    )
    write = FlakyWrite(failures=1)
    policy = SinkRetry(attempts=3, backoff_ms=1, max_backoff_ms=1, max_event_age_seconds=600)
    runner, _, _ = retried(write, policy, tolerant=True, now=now)
    dead = runner(events)
    assert write.calls == [["orders/0/0", "orders/0/1"], ["orders/0/1"]]  # the old one dropped
    assert dead is not None
    (row,) = dead.collect()
    assert (row.event_id, row.error_class, row.attempts) == ("orders/0/0", TOO_OLD, 1)
    assert "older than max_event_age_seconds=600 after 1 attempt(s)" in row.message
    assert "ConnectionError: connection refused" in row.message

    strict, _, _ = retried(FlakyWrite(failures=1), policy, tolerant=False, now=now)
    with pytest.raises(RetriesExhausted, match="older than max_event_age_seconds"):
        strict(events)


@pytest.mark.spark
def test_a_refused_address_or_a_bad_setting_is_not_retried(spark: SparkSession) -> None:
    events = events_frame(spark, [{"data": {"n": 1}}])
    write = FlakyWrite(failures=99, error=ValueError("jdbc sink: url is not allowed"))
    policy = SinkRetry(attempts=5, backoff_ms=1, max_backoff_ms=1)
    runner, sleeps, _ = retried(write, policy, tolerant=False)
    with pytest.raises(RetriesExhausted, match="after 1 attempt"):
        runner(events)
    assert len(write.calls) == 1 and sleeps == []


def test_real_time_mode_refuses_a_retried_sink_at_its_attempts() -> None:
    sink = {"bootstrap_servers": "localhost:9092", "topic": "out"}
    spec = {
        "source": {
            "type": "kafka",
            "config": {"bootstrap_servers": "localhost:9092", "topics": ["in"]},
        },
        "sink": {"type": "kafka", "config": {**sink, "retry": {"attempts": 3}}},
        "runtime": {"mode": "real-time"},
    }
    with pytest.raises(SpecError) as raised:
        validate_spec(spec)
    assert list(raised.value.errors) == ["sink.config.retry.attempts"]
    spec["sink"]["config"]["retry"] = {"attempts": 1}
    validate_spec(spec)  # no retry: fine
