"""Every number the console shows, against the truth, on the real stack (issue 30).

Three channels side by side:

* a generator at a known rate (20 events/s) into Kafka: its events/s in the status, the
  channels list, ``/metrics`` and its stages' rates, within ±5 % of 20 once a window (30 s)
  has passed; its stage counts against the records its sink topic holds;
* a Kafka source with a known backlog: 150 records written while it is stopped show as a
  lag of 150 in the status, the list and ``/metrics`` (read from the broker's end offsets,
  not the last report); started, it reads them, its lag falls to 0; 30 written while it is
  paused show as 30; and once nothing flows its rates fall to 0 within two windows;
* a bus whose one rule matches every event and another half of them: the rules' counts
  against the events written, also over a restart (the new query counts from 0; the console
  adds what was counted before).

The figures read are what the pages show: the channel page and the list read the same API
fields (``events_per_second``, the tasks' ``lag``, ``stages``, ``rules``) that are checked here.
"""

from __future__ import annotations

import json
import time
import uuid

import pytest
from confluent_kafka import Consumer, TopicPartition
from prometheus_client.parser import text_string_to_metric_families

from tests.integration.conftest import Stack
from tests.integration.test_shared_drivers import Channels, channels, topics  # noqa: F401
from tests.integration.test_walking_skeleton import produce
from tests.support.processes import wait_until
from tests.support.specs import kafka_passthrough

pytestmark = [pytest.mark.integration, pytest.mark.spark]

RATE = 20
"""The generator's events per second."""
TOLERANCE = 0.05
WINDOW = 30.0
"""The rates' window (runtime_adapter.host.progress.RATE_WINDOW_SECONDS)."""


def metrics(stack: Stack) -> dict[tuple[str, str], float]:
    """``(metric, channel) → value`` of one ``/metrics`` scrape."""
    response = stack.session().get(f"{stack.base_url}/metrics", timeout=10)
    assert response.status_code == 200, response.text
    return {
        (sample.name, sample.labels.get("channel", "")): sample.value
        for family in text_string_to_metric_families(response.text)
        for sample in family.samples
        if "state" not in sample.labels
    }


def listed(stack: Stack, name: str) -> dict:
    """The channel's row of the channels list (``?expand=status``), as the list page reads it."""
    answer = stack.session().get(
        f"{stack.api}/channels/?expand=status&search={name}&limit=50", timeout=10
    )
    assert answer.status_code == 200, answer.text
    (row,) = [c for c in answer.json()["results"] if c["name"] == name]
    return row["status"]


def lag(status: dict) -> int | None:
    lags = [task["lag"] for task in status["tasks"] if task["lag"] is not None]
    return sum(lags) if lags else None


def stage(status: dict, name: str) -> dict:
    (found,) = [s for s in status["stages"] or [] if s["stage"] == name]
    return found


def records_in(bootstrap: str, topic: str) -> int:
    """How many records ``topic`` holds (end minus beginning offsets, every partition)."""
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": f"n-{uuid.uuid4().hex}"})
    try:
        partitions = consumer.list_topics(topic, timeout=10).topics[topic].partitions
        total = 0
        for partition in partitions:
            low, high = consumer.get_watermark_offsets(TopicPartition(topic, partition), 10)
            total += high - low
        return total
    finally:
        consumer.close()


def bus_events(start: int, stop: int) -> list[bytes]:
    return [json.dumps({"n": n, "even": n % 2 == 0}).encode() for n in range(start, stop)]


def near(value: float | None, expected: float, what: str) -> None:
    assert value is not None, f"{what}: not shown"
    assert abs(value - expected) <= TOLERANCE * expected, f"{what}: {value}, expected {expected}"


def test_every_number_the_console_shows_is_true(stack: Stack, channels: Channels) -> None:  # noqa: F811
    gen_out, k_in, k_out, bus_in, bus_all, bus_even = topics(
        stack, "num-gen-out", "num-k-in", "num-k-out", "num-bus-in", "num-bus-all", "num-bus-even"
    )
    kafka = stack.kafka
    generator = channels.create(
        "num-gen",
        {
            "source": {"type": "generator", "config": {"rate": RATE}},
            "transforms": [],
            "sink": {"type": "kafka", "config": {"bootstrap_servers": kafka, "topic": gen_out}},
        },
    )
    produce(kafka, k_in, [json.dumps({"n": n}).encode() for n in range(120)])
    backlog = channels.create("num-lag", kafka_passthrough(kafka, k_in, k_out))
    produce(kafka, bus_in, bus_events(0, 300))
    bus_source = kafka_passthrough(kafka, bus_in, bus_all)["source"]
    bus = channels.create(
        "num-bus",
        {
            "source": bus_source,
            "rules": [
                {
                    "name": "every",
                    "pattern": {"data": {"n": [{"exists": True}]}},
                    "sinks": [
                        {"type": "kafka", "config": {"bootstrap_servers": kafka, "topic": bus_all}}
                    ],
                },
                {
                    "name": "even",
                    "pattern": {"data": {"even": [True]}},
                    "sinks": [
                        {"type": "kafka", "config": {"bootstrap_servers": kafka, "topic": bus_even}}
                    ],
                },
            ],
        },
    )
    running_since = time.monotonic()
    channels.wait_state(generator, "RUNNING")

    # -- a known backlog, read while stopped -----------------------------------------------
    wait_until(lambda: records_in(kafka, k_out) >= 120, 120, what="the first 120 records read")
    channels.act(backlog, "stop")
    channels.wait_state(backlog, "STOPPED")
    produce(kafka, k_in, [json.dumps({"n": n}).encode() for n in range(120, 270)])
    try:
        stopped = wait_until(
            lambda: (s := channels.status(backlog)) and lag(s) == 150 and s,
            60,
            interval=1,
            what="a stopped channel's lag of 150 from the broker's end offsets",
        )
    except TimeoutError:
        pytest.fail(f"no lag of 150 while stopped: {channels.status(backlog)['tasks']}")
    assert stopped["events_per_second"] is None, "a stopped channel shows no rate"
    assert all(task["rows_per_second"] in (0, None) for task in stopped["tasks"]), stopped["tasks"]
    assert lag(listed(stack, backlog)) == 150
    assert metrics(stack)[("sluice_channel_lag", backlog)] == 150

    channels.act(backlog, "start")
    channels.wait_state(backlog, "RUNNING")
    wait_until(lambda: records_in(kafka, k_out) == 270, 120, what="the backlog read")
    wait_until(lambda: lag(channels.status(backlog)) == 0, 30, what="the lag back to 0")

    # Paused, its driver reads the end offsets itself (no batch reports them).
    channels.act(backlog, "pause")
    channels.wait_state(backlog, "PAUSED")
    produce(kafka, k_in, [json.dumps({"n": n}).encode() for n in range(270, 300)])
    wait_until(
        lambda: lag(channels.status(backlog)) == 30, 45, interval=1, what="a paused lag of 30"
    )
    assert metrics(stack)[("sluice_channel_lag", backlog)] == 30
    channels.act(backlog, "resume")
    wait_until(lambda: records_in(kafka, k_out) == 300, 120, what="the paused records read")
    wait_until(lambda: lag(channels.status(backlog)) == 0, 30, what="the lag back to 0")
    drained_at = time.monotonic()

    # -- the bus's rules against the events written ----------------------------------------
    def rules_counted() -> dict | None:
        status = channels.status(bus)
        rules = {rule["rule"]: rule for rule in status["rules"] or []}
        return status if rules.get("every", {}).get("matched") == 300 else None

    counted = wait_until(rules_counted, 120, interval=1, what="the bus's 300 events counted")
    rules = {rule["rule"]: rule for rule in counted["rules"]}
    assert rules["even"]["matched"] == 150, rules
    assert stage(counted, "source")["in"] == 300, counted["stages"]
    assert records_in(kafka, bus_even) == 150
    # A restart counts from 0 in its driver: the console carries what was counted before.
    channels.act(bus, "restart")
    produce(kafka, bus_in, bus_events(300, 400))

    def recounted() -> dict | None:
        status = channels.status(bus)
        rules = {rule["rule"]: rule for rule in status["rules"] or []}
        return status if rules.get("every", {}).get("matched") == 400 else None

    counted = wait_until(recounted, 120, interval=1, what="400 events counted over a restart")
    rules = {rule["rule"]: rule for rule in counted["rules"]}
    assert rules["even"]["matched"] == 200, rules
    assert stage(counted, "source")["in"] == 400, counted["stages"]

    # -- a generator at a known rate ---------------------------------------------------------
    time.sleep(max(0.0, running_since + WINDOW + 10 - time.monotonic()))
    status = channels.status(generator)
    near(status["events_per_second"], RATE, "the channel page's events/s")
    near(stage(status, "source")["in_per_second"], RATE, "the source stage's rate")
    near(stage(status, "sink")["out_per_second"], RATE, "the sink stage's rate")
    near(listed(stack, generator)["events_per_second"], RATE, "the list's events/s")
    near(metrics(stack)[("sluice_channel_events_per_second", generator)], RATE, "/metrics")

    channels.act(generator, "stop")
    channels.wait_state(generator, "STOPPED")
    stopped = channels.status(generator)
    assert stopped["events_per_second"] is None
    assert metrics(stack)[("sluice_channel_events_per_second", generator)] == 0
    # Its counts against what its sink topic holds: a batch the stop cut short may have
    # written records it never counted (Kafka's sink is at least once).
    written = records_in(kafka, gen_out)
    near(stage(stopped, "sink")["out"], written, "the sink's count against its topic")
    near(stage(stopped, "source")["in"], written, "the source's count against the sink topic")

    # -- nothing flows: 0 after two windows, not the last batch's rate ------------------------
    time.sleep(max(0.0, drained_at + 2 * WINDOW - time.monotonic()))
    idle = channels.status(backlog)
    assert idle["events_per_second"] == 0, idle
    assert stage(idle, "source")["in_per_second"] == 0, idle["stages"]
    assert all(task["rows_per_second"] == 0 for task in idle["tasks"]), idle["tasks"]
    assert listed(stack, backlog)["events_per_second"] == 0
    assert metrics(stack)[("sluice_channel_events_per_second", backlog)] == 0
