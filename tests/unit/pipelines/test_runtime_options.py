"""The spec's ``runtime`` block: isolation, execution mode, interval, and the refusal of a mode
the channel's stages cannot run in, at the field that prevents it."""

from __future__ import annotations

from typing import Any

import pytest

from pipelines.query import with_trigger
from pipelines.spec import SpecError, validate_spec
from pipelines.spec.channel import RuntimeOptions

KAFKA = {"bootstrap_servers": "127.0.0.1:9092", "topics": ["orders"]}
KAFKA_SINK = {"bootstrap_servers": "127.0.0.1:9092", "topic": "out"}


def spec(**parts: Any) -> dict[str, Any]:
    return {
        "source": {"type": "kafka", "config": KAFKA},
        "transforms": [{"type": "filter", "config": {"pattern": {"type": ["order"]}}}],
        "sink": {"type": "kafka", "config": KAFKA_SINK},
        **parts,
    }


def errors(data: dict[str, Any]) -> dict[str, list[str]]:
    with pytest.raises(SpecError) as failed:
        validate_spec(data)
    return failed.value.errors


def test_a_spec_without_runtime_runs_shared_in_micro_batches():
    runtime = validate_spec(spec()).runtime
    assert (runtime.isolation, runtime.mode, runtime.interval_seconds) == (
        "shared",
        "micro-batch",
        None,
    )


@pytest.mark.parametrize(
    "options",
    [
        {"isolation": "dedicated"},
        {"mode": "micro-batch", "interval_seconds": 5},
        {"mode": "available-now"},
        {"mode": "real-time", "interval_seconds": 30},
    ],
)
def test_kafka_to_kafka_runs_in_every_mode(options):
    assert validate_spec(spec(runtime=options)).runtime == RuntimeOptions(**options)


def test_unknown_values_are_field_errors():
    found = errors(spec(runtime={"isolation": "own", "mode": "fast", "speed": 1}))
    assert set(found) == {"runtime.isolation", "runtime.mode", "runtime.speed"}
    assert found["runtime.mode"] == ["must be 'micro-batch', 'real-time' or 'available-now'"]
    assert errors(spec(runtime="fast")) == {
        "runtime": ['must be an object like {"isolation": "shared", ...}']
    }
    assert "runtime.interval_seconds" in errors(spec(runtime={"interval_seconds": 0}))


def test_available_now_needs_a_source_with_an_end_and_no_interval():
    found = errors(
        spec(source={"type": "generator", "config": {}}, runtime={"mode": "available-now"})
    )
    assert found == {
        "source.type": [
            "a generator source has no end for available-now to reach "
            "(available-now reads files, http, kafka)"
        ]
    }
    found = errors(spec(runtime={"mode": "available-now", "interval_seconds": 5}))
    assert found == {"runtime.interval_seconds": ["available-now runs without an interval"]}


def test_real_time_refuses_each_stage_it_cannot_run_at_its_place():
    data = spec(
        source={"type": "generator", "config": {}},
        sink={"type": "preview", "config": {}},
        errors={"tolerance": "all", "dead_letter": {"type": "kafka", "config": KAFKA_SINK}},
        runtime={"mode": "real-time", "interval_seconds": 1},
    )
    found = errors(data)
    assert set(found) == {
        "source.type",
        "sink.type",
        "errors.tolerance",
        "runtime.interval_seconds",
    }
    assert found["source.type"][0].startswith("real-time mode runs stateless Kafka to Kafka")
    assert "at most every 5 s" in found["runtime.interval_seconds"][0]


class FakeWriter:
    def __init__(self) -> None:
        self.calls: list[tuple[str, Any]] = []

    def trigger(self, **kwargs: Any) -> FakeWriter:
        self.calls.append(("trigger", kwargs))
        return self

    def outputMode(self, mode: str) -> FakeWriter:
        self.calls.append(("outputMode", mode))
        return self


@pytest.mark.parametrize(
    ("options", "calls"),
    [
        ({}, []),
        ({"interval_seconds": 2.5}, [("trigger", {"processingTime": "2500 milliseconds"})]),
        ({"mode": "available-now"}, [("trigger", {"availableNow": True})]),
        (
            {"mode": "real-time"},
            [("outputMode", "update"), ("trigger", {"realTime": "300000 milliseconds"})],
        ),
    ],
)
def test_each_mode_gets_its_trigger(options, calls):
    writer = FakeWriter()
    with_trigger(writer, RuntimeOptions(**options))  # type: ignore[arg-type]
    assert writer.calls == calls
