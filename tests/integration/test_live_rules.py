"""A rule added to a running bus, on the real stack (Kafka, Redis, Spark, Celery, the web API).

A bus routed batch by batch: the running query takes the new revision without a restart (the
same generation, the same query run), the new rule's events arrive, the other rule's are
neither lost nor repeated; a kill -9 of the driver afterwards brings the bus back on the new
revision. A bus compiled into its query: the new revision restarts the query from its
checkpoint, nothing is lost, the new rule's events arrive, per-rule counts come from the
query's progress.
"""

from __future__ import annotations

import json
import uuid
from typing import Any

import pytest

from runtime_adapter.base import ConnectorStatus
from runtime_adapter.store import RedisStore
from tests.integration.conftest import Stack
from tests.integration.test_walking_skeleton import consume_all, make_topic
from tests.support.orders import produce_range
from tests.support.processes import wait_until
from tests.support.stack import kill_driver

pytestmark = [pytest.mark.integration, pytest.mark.spark]


def kind_of(seq: int) -> str:
    """The kind of event ``seq`` (tests.support.orders.payload)."""
    return ("order", "refund", "quote")[seq % 3]


def rule(name: str, kind: str, kafka: str, topic: str) -> dict[str, Any]:
    return {
        "name": name,
        "pattern": {"data": {"kind": [kind]}},
        "sinks": [{"type": "kafka", "config": {"bootstrap_servers": kafka, "topic": topic}}],
    }


def bus_spec(
    kafka: str, source: str, *rules: dict[str, Any], compiled: bool = False
) -> dict[str, Any]:
    """A bus routed batch by batch (``tolerance: all``), or one compiled into its query
    (Kafka targets only, ``tolerance: none``: pipelines.spec.live.compiled_into_query)."""
    return {
        "errors": {"tolerance": "none" if compiled else "all"},
        "source": {
            "type": "kafka",
            "config": {
                "bootstrap_servers": kafka,
                "topics": [source],
                "starting_offsets": "earliest",
            },
        },
        "transforms": [{"type": "cast", "config": {"fields": {"data.amount": "long"}}}],
        "rules": list(rules),
        # A driver of its own: its kill -9 below touches no other test's channel.
        "runtime": {"isolation": "dedicated"},
    }


def seqs(values: list[bytes]) -> list[int]:
    return sorted(json.loads(value)["seq"] for value in values)


class Bus:
    """One bus channel made through the API, its status read from the API and the runtime."""

    def __init__(self, stack: Stack, spec: dict[str, Any]) -> None:
        self.stack = stack
        self.http = stack.session()
        self.name = f"live-rules-{uuid.uuid4().hex[:6]}"
        self.store = RedisStore.from_url(
            stack.redis_url, stack.env.get("SLUICE_REDIS_PREFIX", "sluice")
        )
        body = {"name": self.name, "spec": spec, "target_state": "RUNNING"}
        created = self.http.post(f"{stack.api}/channels/", json=body, timeout=10)
        assert created.status_code == 201, created.text

    def status(self) -> dict[str, Any]:
        return self.http.get(f"{self.stack.api}/channels/{self.name}/status", timeout=5).json()

    def runtime(self) -> ConnectorStatus:
        """The status its driver reported (revision, query run, per-rule counts)."""
        return self.store.statuses([self.name])[self.name]

    def until(self, check: Any, what: str, timeout: float = 180) -> ConnectorStatus:
        def reached() -> ConnectorStatus | None:
            status = self.store.statuses([self.name]).get(self.name)
            return status if status is not None and check(status) else None

        try:
            return wait_until(reached, timeout, interval=0.25, what=what)
        except TimeoutError:
            pytest.fail(f"{self.name}: {what} not seen: {self.status()}\n{self.stack.logs()}")

    def redeploy(self, spec: dict[str, Any]) -> None:
        """Save ``spec`` as a new revision and start it (deploys the latest revision)."""
        url = f"{self.stack.api}/channels/{self.name}"
        updated = self.http.put(f"{url}/", json={"name": self.name, "spec": spec}, timeout=10)
        assert updated.status_code == 200, updated.text
        started = self.http.post(f"{url}/start", timeout=10)
        assert started.status_code == 202, started.text

    def transitions(self) -> list[str]:
        url = f"{self.stack.api}/channels/{self.name}/lifecycle/?limit=200"
        return [event["to_state"] for event in self.http.get(url, timeout=5).json()["results"]]

    def remove(self) -> None:
        self.http.post(f"{self.stack.api}/channels/{self.name}/stop", timeout=10)
        self.http.delete(f"{self.stack.api}/channels/{self.name}/", timeout=10)


def read_up_to(bus: Bus, end: int) -> ConnectorStatus:
    """Wait until the bus's query read every event up to ``end`` (its tasks' offsets)."""

    def read_all(status: ConnectorStatus) -> bool:
        return sum(task.offset or 0 for task in status.tasks) >= end

    return bus.until(read_all, f"events up to {end} read")


def test_a_rule_added_to_a_running_bus_applies_without_a_restart(stack: Stack) -> None:
    suffix = uuid.uuid4().hex[:6]
    source, orders, refunds = (f"lr-{n}-{suffix}" for n in ("in", "orders", "refunds"))
    make_topic(stack.kafka, source, 2)
    make_topic(stack.kafka, orders, 1)
    make_topic(stack.kafka, refunds, 1)
    first = [rule("orders", "order", stack.kafka, orders)]
    bus = Bus(stack, bus_spec(stack.kafka, source, *first))
    try:
        produce_range(stack.kafka, source, 0, 300)
        before = read_up_to(bus, 300)
        assert before.state == "RUNNING" and before.revision == 1, before
        assert before.progress is not None
        run_id = before.progress["runId"]

        # Revision 2 adds a rule, while events keep coming (300-599 around the change).
        second = [*first, rule("refunds", "refund", stack.kafka, refunds)]
        bus.redeploy(bus_spec(stack.kafka, source, *second))
        produce_range(stack.kafka, source, 300, 600)
        applied = bus.until(lambda s: s.revision == 2, "revision 2 running", timeout=60)
        produce_range(stack.kafka, source, 600, 900)
        after = read_up_to(bus, 900)

        # Taken by the running query: the same generation, the same query run.
        assert (applied.generation, after.generation) == (before.generation,) * 2
        assert after.progress is not None and after.progress["runId"] == run_id
        assert after.state == "RUNNING" and bus.status()["revision"] == 2
        assert set(bus.transitions()) <= {"UNASSIGNED", "RUNNING"}, bus.transitions()

        # The orders rule lost and repeated nothing across the change (no replay: no restart).
        expected_orders = [s for s in range(900) if kind_of(s) == "order"]
        assert seqs(consume_all(stack.kafka, orders, len(expected_orders), 120)) == expected_orders
        # The new rule delivers every refund read once it runs, and only refunds, each once.
        got = seqs(consume_all(stack.kafka, refunds, 100, 120))
        assert len(got) == len(set(got)), "a refund delivered twice"
        assert all(kind_of(s) == "refund" and s >= 300 for s in got), got
        assert set(range(601, 900, 3)) <= set(got), "a refund read after the change is missing"

        # Per-rule counts since the driver started, in the spec's order.
        counted = bus.until(
            lambda s: [r["matched"] for r in s.rules] == [len(expected_orders), len(got)],
            "per-rule counts",
            timeout=30,
        )
        assert [r["rule"] for r in counted.rules] == ["orders", "refunds"]
        assert [r["delivered"] for r in counted.rules] == [len(expected_orders), len(got)]
        assert counted.rules[1]["targets"][0]["sink"] == "rules[1].sinks[0]"

        # kill -9 of its driver: the restart policy brings it back, on revision 2.
        kill_driver(stack, bus.name)
        back = bus.until(
            lambda s: s.state == "RUNNING" and s.generation > before.generation,
            "running again after the driver's kill -9",
        )
        assert back.revision == 2
        produce_range(stack.kafka, source, 900, 1200)
        read_up_to(bus, 1200)
        later = [s for s in range(900, 1200) if kind_of(s) == "refund"]
        got = seqs(consume_all(stack.kafka, refunds, len(got) + len(later), 120))
        assert set(later) <= set(got), "a refund read after the driver's restart is missing"
    finally:
        bus.remove()


def test_a_rule_added_to_a_compiled_bus_restarts_it_from_its_checkpoint(stack: Stack) -> None:
    suffix = uuid.uuid4().hex[:6]
    source, orders, refunds = (f"cr-{n}-{suffix}" for n in ("in", "orders", "refunds"))
    make_topic(stack.kafka, source, 2)
    make_topic(stack.kafka, orders, 1)
    make_topic(stack.kafka, refunds, 1)
    first = [rule("orders", "order", stack.kafka, orders)]
    bus = Bus(stack, bus_spec(stack.kafka, source, *first, compiled=True))
    try:
        produce_range(stack.kafka, source, 0, 300)
        before = read_up_to(bus, 300)
        assert before.progress is not None
        run_id = before.progress["runId"]
        # no foreachBatch: Spark's Kafka sink is the query's own
        assert "Kafka" in str(before.progress["sink"]["description"]), before.progress["sink"]

        second = [*first, rule("refunds", "refund", stack.kafka, refunds)]
        bus.redeploy(bus_spec(stack.kafka, source, *second, compiled=True))
        produce_range(stack.kafka, source, 300, 600)
        bus.until(lambda s: s.revision == 2 and s.state == "RUNNING", "revision 2 running")
        produce_range(stack.kafka, source, 600, 900)
        after = read_up_to(bus, 900)

        # A new query run from the same checkpoint: nothing lost (a batch in progress at the
        # stop may be written again: at least once, as any restart of a Kafka write).
        assert after.progress is not None and after.progress["runId"] != run_id
        expected_orders = [s for s in range(900) if kind_of(s) == "order"]
        got_orders = seqs(consume_all(stack.kafka, orders, len(expected_orders), 120))
        assert sorted(set(got_orders)) == expected_orders
        got = seqs(consume_all(stack.kafka, refunds, 200, 120))
        assert all(kind_of(s) == "refund" for s in got), got
        assert set(range(301, 900, 3)) <= set(got), "a refund read after the change is missing"

        # Per-rule counts, read from the query's progress reports, in the spec's order.
        counted = bus.until(
            lambda s: (
                [r["rule"] for r in s.rules] == ["orders", "refunds"]
                and s.rules[0]["matched"] >= 100
                and s.rules[1]["matched"] >= 100
            ),
            "per-rule counts",
            timeout=30,
        )
        assert counted.rules[1]["targets"][0]["sink"] == "rules[1].sinks[0]"
    finally:
        bus.remove()
