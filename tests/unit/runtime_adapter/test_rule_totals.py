"""A bus's per-rule counts: each batch's counts (from its ``foreachBatch``) summed once per batch
id, rated over the last 30 s, listed in the spec's rule order, written with the connector's
status and read back by the adapter (``ConnectorStatus.rules``)."""

from __future__ import annotations

import threading
from typing import Any

from runtime_adapter.base import Deployment
from runtime_adapter.config import RuntimeConfig
from runtime_adapter.host.hosted import HostedConnector
from runtime_adapter.host.progress import RATE_WINDOW_SECONDS, RuleTotals, rule_layout
from runtime_adapter.spark import SparkRuntime
from runtime_adapter.states import State, TargetState
from tests.support.clock import ManualClock

LAYOUT = [("big", ["kafka", "files"]), ("all", ["jdbc"])]


def batch(big: tuple[int, int, int], every: tuple[int, int, int]) -> list[dict[str, Any]]:
    """One batch's counts: (matched, delivered, failed) of rule ``big`` (its files target
    failing what fails) and of rule ``all``."""
    return [
        {
            "rule": "big",
            "matched": big[0],
            "delivered": big[1],
            "failed": big[2],
            "targets": [
                {"sink": "rules[0].sinks[0]", "type": "kafka", "delivered": big[0], "failed": 0},
                {
                    "sink": "rules[0].sinks[1]",
                    "type": "files",
                    "delivered": big[1],
                    "failed": big[2],
                },
            ],
        },
        {
            "rule": "all",
            "matched": every[0],
            "delivered": every[1],
            "failed": every[2],
            "targets": [
                {"sink": "rules[1].sinks[0]", "type": "jdbc", "delivered": every[1], "failed": 0}
            ],
        },
    ]


def summary(rules: list[dict[str, Any]]) -> list[tuple[Any, ...]]:
    return [
        (
            rule["rule"],
            rule["matched"],
            rule["delivered"],
            rule["failed"],
            [(t["sink"], t["type"], t["delivered"], t["failed"]) for t in rule["targets"]],
        )
        for rule in rules
    ]


def test_batches_add_up_once_per_batch_id() -> None:
    totals = RuleTotals()
    assert totals.rules(LAYOUT) == []  # nothing until a batch was counted
    assert totals.fold(0, batch((4, 3, 1), (10, 10, 0)))
    assert not totals.fold(0, batch((4, 3, 1), (10, 10, 0)))  # replayed after a restart
    assert totals.fold(1, batch((2, 2, 0), (5, 5, 0)))
    assert not totals.fold(1, batch((9, 9, 0), (9, 9, 0)))  # replayed: not counted again
    assert summary(totals.rules(LAYOUT)) == [
        (
            "big",
            6,
            5,
            1,
            [("rules[0].sinks[0]", "kafka", 6, 0), ("rules[0].sinks[1]", "files", 5, 1)],
        ),
        ("all", 15, 15, 0, [("rules[1].sinks[0]", "jdbc", 15, 0)]),
    ]


def test_rates_are_over_the_last_window_and_fall_to_0_when_nothing_flows() -> None:
    clock = ManualClock()
    totals = RuleTotals(clock=clock)
    rates = lambda: [  # noqa: E731
        (r["matched_per_second"], r["delivered_per_second"]) for r in totals.rules(LAYOUT)
    ]
    # A batch a second for a minute: "big" matches 2 (1 delivered), "all" 5, each second.
    for batch_id in range(60):
        clock.now += 1
        totals.fold(batch_id, batch((2, 1, 1), (5, 5, 0)))
    assert rates() == [(2.0, 1.0), (5.0, 5.0)]
    # Nothing flows: half a window later, half the rate; a window later, 0.
    clock.now += RATE_WINDOW_SECONDS / 2
    assert rates() == [(1.0, 0.5), (2.5, 2.5)]
    clock.now += RATE_WINDOW_SECONDS / 2
    assert rates() == [(0.0, 0.0), (0.0, 0.0)]


def test_a_rules_change_keeps_the_counts_of_the_rules_it_keeps() -> None:
    totals = RuleTotals()
    totals.fold(0, batch((4, 4, 0), (10, 10, 0)))
    # Rule "new" added first, "big" dropped, "all" moved and given a second target; its jdbc
    # target, now sink 1, is another sink: counted from 0.
    layout = [("new", ["kafka"]), ("all", ["kafka", "jdbc"])]
    assert summary(totals.rules(layout)) == [
        ("new", 0, 0, 0, [("rules[0].sinks[0]", "kafka", 0, 0)]),
        (
            "all",
            10,
            10,
            0,
            [("rules[1].sinks[0]", "kafka", 0, 0), ("rules[1].sinks[1]", "jdbc", 0, 0)],
        ),
    ]
    totals.fold(
        1,
        [
            {"rule": "new", "matched": 3, "delivered": 3, "failed": 0, "targets": []},
            {
                "rule": "all",
                "matched": 5,
                "delivered": 5,
                "failed": 0,
                "targets": [
                    {"sink": "rules[1].sinks[0]", "type": "kafka", "delivered": 5, "failed": 0},
                    {"sink": "rules[1].sinks[1]", "type": "jdbc", "delivered": 5, "failed": 0},
                ],
            },
        ],
    )
    assert summary(totals.rules(layout)) == [
        ("new", 3, 3, 0, [("rules[0].sinks[0]", "kafka", 0, 0)]),
        (
            "all",
            15,
            15,
            0,
            [("rules[1].sinks[0]", "kafka", 5, 0), ("rules[1].sinks[1]", "jdbc", 5, 0)],
        ),
    ]


def test_counts_from_spark_s_thread_while_the_status_is_read() -> None:
    totals = RuleTotals()
    layout = [("big", ["kafka", "files"]), ("all", ["jdbc"])]

    def batches() -> None:
        for batch_id in range(2000):
            totals.fold(batch_id, batch((1, 1, 0), (2, 2, 0)))

    folding = threading.Thread(target=batches)
    folding.start()
    while folding.is_alive():
        for rule in totals.rules(layout):  # never a half-folded batch
            assert rule["matched"] == rule["delivered"]
    folding.join()
    assert [rule["matched"] for rule in totals.rules(layout)] == [2000, 4000]


def test_the_layout_is_the_spec_s_rules_in_order() -> None:
    from pipelines.spec import validate_spec

    kafka = {"type": "kafka", "config": {"bootstrap_servers": "k:9092", "topic": "t"}}
    bus = validate_spec(
        {
            "source": {"type": "generator", "config": {}},
            "rules": [
                {
                    "name": "b",
                    "sinks": [kafka, {"type": "http", "config": {"url": "https://example.com/in"}}],
                },
                {"name": "a", "enabled": False, "sinks": [kafka]},
            ],
        }
    )
    assert rule_layout(bus) == [("b", ["kafka", "http"]), ("a", ["kafka"])]
    linear = validate_spec({"source": {"type": "generator", "config": {}}, "sink": kafka})
    assert rule_layout(linear) == []


def test_the_status_carries_the_rules_and_the_adapter_reads_them(runtime: SparkRuntime) -> None:
    runtime.deploy(Deployment("bus", "bus", 3, {}, TargetState.RUNNING, worker_id="w1"))
    hosted = HostedConnector(
        runtime.store,
        RuntimeConfig.from_env(),
        connector_id="bus",
        worker_id="w1",
        generation=0,
    )
    hosted.revision = 3
    hosted.layout = LAYOUT
    hosted.count_rules(0, batch((4, 3, 1), (10, 10, 0)))
    hosted.count_rules(1, batch((2, 2, 0), (5, 5, 0)))
    hosted.count_dead_letters(1)  # the failed one went to the dead-letter target
    assert hosted.report(State.RUNNING)
    status = runtime.status(["bus"])["bus"]
    assert (status.state, status.revision, status.dead_letters) == (State.RUNNING, 3, 1)
    assert summary(status.rules) == summary(hosted.rule_totals.rules(LAYOUT))
    assert status.rules[0]["rule"] == "big" and status.rules[0]["matched"] == 6
    # Over the time since the connector started counting (at least 1 s): at most 15/s.
    assert 0 < status.rules[1]["matched_per_second"] <= 15.0
    # Nothing new: not written again; a new batch is news.
    assert hosted.reporter.reported is not None
    before = hosted.reporter.reported
    hosted.report(State.RUNNING)
    assert hosted.reporter.reported == before
    hosted.count_rules(2, batch((1, 1, 0), (1, 1, 0)))
    hosted.report(State.RUNNING)
    assert runtime.status(["bus"])["bus"].rules[1]["matched"] == 16
