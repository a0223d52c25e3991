"""The driver adds up each micro-batch's per-stage counts into the status it reports."""

from __future__ import annotations

import json
from typing import Any

import pytest

from runtime_adapter.config import RuntimeConfig
from runtime_adapter.host.hosted import HostedConnector
from runtime_adapter.host.progress import RATE_WINDOW_SECONDS, StageTotals
from runtime_adapter.states import State
from tests.support.clock import ManualClock
from tests.support.reports import ReportingStore

SPEC = {
    "source": {"type": "generator", "config": {}},
    "transforms": [
        {"type": "filter", "config": {"pattern": {"type": ["order"]}}},
        {"type": "cast", "config": {"fields": {"data.qty": "long"}}},
    ],
    "sink": {"type": "preview", "config": {}},
}


def points() -> list[Any]:
    from pipelines.stage_metrics import stage_points

    return stage_points(SPEC)


def progress(batch: int, before: int, end: int, failed: list[int], rate: float = 0.0) -> dict:
    """A batch's progress: ``before`` rows reached the filter, ``end`` the error gate;
    ``failed`` per stage, source first."""
    observed = {
        "sluice.stages.before_1": {"rows": before},
        "sluice.stages": {"rows": end, **{f"failed_{n}": f for n, f in enumerate(failed)}},
    }
    return {
        "batchId": batch,
        "numInputRows": before,
        "inputRowsPerSecond": rate,
        "observedMetrics": observed,
    }


def counts(totals: StageTotals) -> list[tuple[int, int, int]]:
    return [(s["in"], s["out"], s["failed"]) for s in totals.stages()]


def test_batches_add_up_once_each_with_the_rate_over_the_window() -> None:
    clock = ManualClock()
    totals = StageTotals(clock=clock)
    totals.start(points(), "run-1")
    assert totals.stages() == []
    # 10 read, 1 unreadable; the filter drops 3; the cast fails 2; the sink fails none.
    clock.now += 1
    assert totals.fold(progress(0, 10, 7, [1, 0, 2, 0], rate=20.0))
    assert not totals.fold(progress(0, 10, 7, [1, 0, 2, 0]))  # polled again
    clock.now += 1
    assert totals.fold(progress(1, 4, 4, [0, 0, 0, 0], rate=8.0))
    assert counts(totals) == [(14, 13, 1), (13, 10, 0), (10, 8, 2), (8, 8, 0)]
    first = totals.stages()[0]
    assert {k: first[k] for k in ("stage", "index", "type")} == {
        "stage": "source",
        "index": None,
        "type": "generator",
    }
    assert [s["index"] for s in totals.stages()] == [None, 0, 1, None]
    # Over the 2 s since the query started (not a batch's own Spark rate): 14 in, 13 out.
    assert (first["in_per_second"], first["out_per_second"]) == (7.0, 6.5)
    # An idle trigger (no data, no metrics) keeps the totals; the rates fall as time passes
    # and are 0 once a whole window went by without an event.
    assert not totals.fold({"batchId": 2, "numInputRows": 0, "observedMetrics": {}})
    assert counts(totals)[0] == (14, 13, 1)
    clock.now += 10
    assert totals.stages()[0]["in_per_second"] == 1.17  # 14 in 12 s
    clock.now += RATE_WINDOW_SECONDS
    assert totals.stages()[0]["in_per_second"] == 0.0


@pytest.mark.parametrize("batch_seconds", [0.5, 1.0, 3.0])
def test_a_steady_flow_is_reported_at_its_rate(batch_seconds: float) -> None:
    """5 events/s (the demo's), in batches of any length: the source's rate within 5 %, and
    so are the stages after it (a filter keeping 3 of 5)."""
    clock = ManualClock()
    totals = StageTotals(clock=clock)
    totals.start(points(), "run-1")
    batch, carried, read, passed = 0, 0.0, 0, 0
    while clock.now < 1000 + 120:
        clock.now += batch_seconds
        carried += 5 * batch_seconds
        events = int(carried)
        carried -= events
        read += events
        kept = read * 3 // 5 - passed  # the filter keeps 3 in 5 over time
        passed += kept
        totals.fold(progress(batch, events, kept, [0, 0, 0, 0]))
        batch += 1
        if clock.now > 1000 + RATE_WINDOW_SECONDS:
            source, _filter, cast, _sink = totals.stages()
            assert source["in_per_second"] == pytest.approx(5.0, rel=0.05), clock.now
            assert cast["in_per_second"] == pytest.approx(3.0, rel=0.1), clock.now


def test_a_restarted_query_keeps_counting_from_the_totals() -> None:
    totals = StageTotals()
    totals.start(points(), "run-1")
    totals.fold(progress(5, 3, 3, [0, 0, 0, 0]))
    totals.start(points(), "run-2")  # resumed after a pause: batch ids may start lower
    assert totals.fold(progress(0, 2, 2, [0, 0, 0, 0]))
    assert counts(totals)[0] == (5, 5, 0)


class FakeProgress(dict):
    """Like PySpark's StreamingQueryProgress: ``batchId`` and ``json``."""

    def __init__(self, data: dict) -> None:
        super().__init__(data)
        self.batchId = data["batchId"]
        self.json = json.dumps(data)


class FakeJavaProgress:
    """Like the JVM's StreamingQueryProgress through Py4J: ``batchId()`` and ``json()``."""

    def __init__(self, data: dict) -> None:
        self.data = data

    def batchId(self) -> int:
        return self.data["batchId"]

    def json(self) -> str:
        return json.dumps(self.data)


class FakeJavaQuery:
    def __init__(self, reports: list[dict]) -> None:
        self.reports = reports
        self.read: list[int] = []

    def recentProgress(self) -> list[FakeJavaProgress]:
        return [Reading(r, self.read) for r in self.reports]


class Reading(FakeJavaProgress):
    """A report that notes when its JSON is read."""

    def __init__(self, data: dict, read: list[int]) -> None:
        super().__init__(data)
        self.read = read

    def json(self) -> str:
        self.read.append(self.data["batchId"])
        return super().json()


class FakeQuery:
    def __init__(self, reports: list[dict]) -> None:
        self.lastProgress = FakeProgress(reports[-1])
        self._jsq = FakeJavaQuery(reports)
        self.isActive = True


def test_the_status_carries_the_totals_with_batches_missed_between_polls() -> None:
    store = ReportingStore()
    driver = HostedConnector(
        store,  # type: ignore[arg-type]
        RuntimeConfig.from_env(),
        connector_id="c1",
        worker_id="w1",
        generation=1,
    )
    driver.stage_totals.start(points(), "run-1")
    driver.query = FakeQuery([progress(0, 5, 5, [0, 0, 0, 0])])
    driver.report(State.RUNNING, progress=driver.collect_progress())
    # Three batches ran before the next poll: the two the poll did not see come from
    # the query's recent progress.
    driver.query = FakeQuery(
        [progress(b, b, b, [0, 0, 0, 0]) for b in range(4)]
        + [{"batchId": 4, "numInputRows": 0}]  # an idle report in between is harmless
        + [progress(5, 5, 5, [1, 0, 0, 0])]
    )
    driver.report(State.RUNNING, progress=driver.collect_progress())
    # Only the reports after the last one counted crossed from the JVM, newest first.
    assert driver.query._jsq.read == [5, 4, 3, 2, 1]
    stages = store.reported[-1].stages
    # 5 + (1 + 2 + 3) + 5 read; one failed at the source.
    assert [(s["stage"], s["in"], s["out"], s["failed"]) for s in stages] == [
        ("source", 16, 15, 1),
        ("transform", 15, 15, 0),
        ("transform", 15, 15, 0),
        ("sink", 15, 15, 0),
    ]
    assert store.reported[0].stages[0]["in"] == 5


@pytest.mark.parametrize(
    ("value", "enabled"),
    [(None, True), ("true", True), ("1", True), ("false", False), ("0", False), ("f", False)],
)
def test_stage_counts_can_be_switched_off(monkeypatch, value, enabled) -> None:
    """Read once, by the settings class, as every other setting: ``f`` is false to the
    driver too (it was true to a driver that parsed the variable by itself)."""
    if value is None:
        monkeypatch.delenv("SLUICE_STAGE_COUNTS", raising=False)
    else:
        monkeypatch.setenv("SLUICE_STAGE_COUNTS", value)
    assert RuntimeConfig.from_env().stage_counts is enabled


def test_a_channel_counted_from_its_progress_alone() -> None:
    """kafka → filter → kafka under tolerance none has no observes: records read and the
    sink's rows written tell every stage's counts."""
    from pipelines.stage_metrics import stage_points

    spec = {
        "source": {"type": "kafka", "config": {"bootstrap_servers": "k:1", "topics": ["in"]}},
        "transforms": [{"type": "filter", "config": {"pattern": {"type": ["order"]}}}],
        "sink": {"type": "kafka", "config": {"bootstrap_servers": "k:1", "topic": "out"}},
    }
    totals = StageTotals()
    totals.start(stage_points(spec), "run-1")
    batch = {"batchId": 0, "numInputRows": 10, "observedMetrics": {}}
    assert totals.fold({**batch, "sink": {"numOutputRows": 4}})
    assert counts(totals) == [(10, 10, 0), (10, 4, 0), (4, 4, 0)]
    # An idle trigger announcing the next batch's id must not keep that batch from counting.
    assert not totals.fold({"batchId": 1, "numInputRows": 0, "sink": {"numOutputRows": 0}})
    assert totals.fold({"batchId": 1, "numInputRows": 5, "sink": {"numOutputRows": 5}})
    assert counts(totals) == [(15, 15, 0), (15, 9, 0), (9, 9, 0)]
