"""The runtime's store lost under running channels: nothing stops, nothing is lost.

A stack of its own (web, Celery worker and beat, one runtime worker) on a Redis of its own,
two channels reading one Kafka topic: Kafka → filter → Kafka and Kafka → filter → files
(exactly once). Then, while events keep coming:

1. Redis away for 60 s (the process stopped, its data kept): both channels deliver what is
   produced DURING the outage, and run on afterwards in the same driver, never restarted;
   meanwhile the console shows them NOT_REPORTING (their state is unknown) and refuses a
   change with a 503;
2. Redis restarted empty (a new, empty data folder: a lost volume): the console re-sends its
   desired state within a pass, the channels deliver throughout and are not restarted;
3. their driver frozen (SIGSTOP): shown NOT_REPORTING no later than twice the report
   interval after their last report, RUNNING again once it is thawed.

At the end a check by event id: none lost in Kafka (duplicates counted), none lost and none
twice in the files sink.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import time
import uuid
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path

import pytest
import requests

from tests.integration.test_walking_skeleton import consume_all, make_topic
from tests.support.orders import PATTERN, produce_range, selected
from tests.support.processes import Service, free_port, start_redis, wait_until
from tests.support.spark import local_spark
from tests.support.stack import Stack, driver_pids, running_stack

pytestmark = [pytest.mark.faults, pytest.mark.spark]

OUTAGE_SECONDS = 60
STATUS_INTERVAL = 10.0
"""The runtime's ``SLUICE_STATUS_INTERVAL`` (its default)."""
BATCH = 4_000
CHANNELS = ("outage-kafka", "outage-files")


class OwnRedis:
    """A Redis of this module's own that can be stopped, started and emptied."""

    def __init__(self, data_dir: Path, log_dir: Path) -> None:
        self.port, self.data_dir, self.log_dir = free_port(), data_dir, log_dir
        self.service: Service | None = None
        self.url = ""
        self.start()

    def start(self) -> None:
        self.service, self.url = start_redis(self.data_dir, self.log_dir, self.port)

    def stop(self) -> None:
        if self.service is not None:
            self.service.stop()
            self.service = None

    def start_empty(self) -> None:
        """Start again on a new, empty data folder (what a lost volume looks like)."""
        self.stop()
        shutil.rmtree(self.data_dir)
        self.start()


@dataclass(frozen=True)
class World:
    stack: Stack
    redis: OwnRedis
    outbox: Path
    source: str
    sink: str


@pytest.fixture(scope="module")
def world(
    kafka_bootstrap: str, tmp_path_factory: pytest.TempPathFactory, artifacts_dir: Path
) -> Iterator[World]:
    logs = artifacts_dir / "store-outage"
    redis = OwnRedis(tmp_path_factory.mktemp("outage-redis"), logs)
    outbox = tmp_path_factory.mktemp("outage-files") / "outbox"
    try:
        with running_stack(
            redis_url=redis.url,
            kafka=kafka_bootstrap,
            var=tmp_path_factory.mktemp("outage-var"),
            log_dir=logs,
            extra_env={"SPARK_MASTER": "local[1]", "SLUICE_SHARED_DRIVER_MEMORY": "768m"},
        ) as stack:
            suffix = uuid.uuid4().hex[:6]
            source, sink = f"outage-in-{suffix}", f"outage-out-{suffix}"
            make_topic(stack.kafka, source, 2)
            make_topic(stack.kafka, sink, 2)
            create_channels(stack, source, sink, outbox)
            yield World(stack, redis, outbox, source, sink)
            for name in CHANNELS:
                stack.session().post(f"{stack.api}/channels/{name}/stop", timeout=10)
    finally:
        redis.stop()


def create_channels(stack: Stack, source: str, sink: str, outbox: Path) -> None:
    sinks = {
        CHANNELS[0]: {"type": "kafka", "config": {"bootstrap_servers": stack.kafka, "topic": sink}},
        CHANNELS[1]: {"type": "files", "config": {"path": str(outbox), "format": "jsonl"}},
    }
    for name, sink_stage in sinks.items():
        spec = {
            "source": {
                "type": "kafka",
                "config": {
                    "bootstrap_servers": stack.kafka,
                    "topics": [source],
                    "starting_offsets": "earliest",
                },
            },
            "transforms": [{"type": "filter", "config": {"pattern": PATTERN}}],
            "sink": sink_stage,
        }
        body = {"name": name, "spec": spec, "target_state": "RUNNING"}
        created = stack.session().post(f"{stack.api}/channels/", json=body, timeout=10)
        assert created.status_code == 201, created.text


def status(stack: Stack, name: str) -> dict:
    return stack.session().get(f"{stack.api}/channels/{name}/status", timeout=5).json()


def files_seqs(outbox: Path) -> Counter:
    """The events the files sink committed (what ``_spark_metadata`` lists), by sequence."""
    if not (outbox / "_spark_metadata").is_dir():
        return Counter()
    rows = local_spark().read.text(str(outbox)).collect()
    return Counter(json.loads(row.value)["seq"] for row in rows)


def wait_delivered(world: World, upto: int, timeout: float) -> float:
    """Wait until every selected event below ``upto`` is in both sinks; the seconds taken."""
    started = time.monotonic()
    expected = {seq for seq in range(upto) if selected(seq)}
    values = consume_all(world.stack.kafka, world.sink, len(expected), timeout)
    in_kafka = {json.loads(value)["seq"] for value in values}
    assert expected <= in_kafka, f"{len(expected - in_kafka)} events not in the Kafka sink"
    left = max(timeout - (time.monotonic() - started), 5)
    wait_until(
        lambda: expected <= set(files_seqs(world.outbox)), left, interval=2, what="the files"
    )
    return time.monotonic() - started


def drivers_and_failures(stack: Stack) -> tuple[dict[str, str], list[str]]:
    """Each channel's driver, and every FAILED or RESTARTING transition it ever had."""
    drivers, bad = {}, []
    for name in CHANNELS:
        drivers[name] = status(stack, name)["driver_id"]
        events = (
            stack.session()
            .get(f"{stack.api}/channels/{name}/lifecycle/?limit=500", timeout=5)
            .json()["results"]
        )
        bad += [
            f"{name}: {e['to_state']} {e['reason']}"
            for e in events
            if e["to_state"] in ("FAILED", "RESTARTING")
        ]
    return drivers, bad


def all_running(stack: Stack, timeout: float = 180) -> None:
    wait_until(
        lambda: all(status(stack, name)["state"] == "RUNNING" for name in CHANNELS),
        timeout,
        interval=1,
        what="both channels RUNNING",
    )


def test_a_60_second_redis_outage_stops_no_channel(world: World) -> None:
    stack, redis, source = world.stack, world.redis, world.source
    produce_range(stack.kafka, source, 0, BATCH)
    all_running(stack)
    wait_delivered(world, BATCH, 180)
    before, failures = drivers_and_failures(stack)
    assert not failures, failures

    redis.stop()
    down_at = time.monotonic()
    produce_range(stack.kafka, source, BATCH, 2 * BATCH)
    took = wait_delivered(world, 2 * BATCH, OUTAGE_SECONDS - 15)
    # The console still answers what it knows, and refuses a change with a clear error.
    assert status(stack, CHANNELS[0])["name"] == CHANNELS[0]
    refused = stack.session().post(f"{stack.api}/channels/{CHANNELS[0]}/restart", timeout=30)
    assert refused.status_code == 503, refused.text
    assert "runtime" in refused.json()["detail"].lower(), refused.text
    # No status can be read or written now: past twice their report interval the channels'
    # state is unknown, and says so (judged by the read itself, no control-loop pass runs).
    time.sleep(max(2 * STATUS_INTERVAL + 3 - (time.monotonic() - down_at), 0))
    for name in CHANNELS:
        shown = status(stack, name)
        assert shown["state"] == "NOT_REPORTING", shown
        assert shown["reported_state"] == "RUNNING" and shown["not_reporting_since"], shown
    assert time.monotonic() - down_at < OUTAGE_SECONDS, "delivered while Redis was away"
    time.sleep(max(OUTAGE_SECONDS - (time.monotonic() - down_at), 0))
    redis.start()

    produce_range(stack.kafka, source, 2 * BATCH, 3 * BATCH)
    wait_delivered(world, 3 * BATCH, 120)
    all_running(stack, 60)
    after, failures = drivers_and_failures(stack)
    assert after == before and not failures, (before, after, failures)
    print(f"\nRedis away {OUTAGE_SECONDS} s: events produced in it delivered in {took:.1f} s")


def test_redis_restarted_empty_is_repopulated_and_stops_no_channel(world: World) -> None:
    stack, redis, source = world.stack, world.redis, world.source
    start = 3 * BATCH
    produce_range(stack.kafka, source, start, start + BATCH)
    wait_delivered(world, start + BATCH, 120)
    before, _ = drivers_and_failures(stack)

    redis.start_empty()
    emptied_at = time.monotonic()
    produce_range(stack.kafka, source, start + BATCH, start + 2 * BATCH)
    took = wait_delivered(world, start + 2 * BATCH, 120)
    all_running(stack, 60)
    repopulated = time.monotonic() - emptied_at
    after, failures = drivers_and_failures(stack)
    assert after == before and not failures, (before, after, failures)

    expected = [seq for seq in range(start + 2 * BATCH) if selected(seq)]
    in_files = files_seqs(world.outbox)
    assert sorted(in_files) == expected and max(in_files.values()) == 1, "files: exactly once"
    values = consume_all(stack.kafka, world.sink, len(expected), 60)
    in_kafka = Counter(json.loads(value)["seq"] for value in values)
    assert sorted(in_kafka) == expected
    duplicates = sum(count - 1 for count in in_kafka.values())
    assert requests.get(f"{stack.base_url}/healthz", timeout=2).status_code == 200
    print(
        f"\nRedis restarted empty: delivered in {took:.1f} s, RUNNING again after "
        f"{repopulated:.1f} s; {len(expected)} events, duplicates into Kafka: {duplicates}"
    )


def test_a_frozen_driver_is_shown_not_reporting_within_twice_its_interval(world: World) -> None:
    """The driver running both channels is frozen (SIGSTOP of its process group: the JVM
    and its Python side): no status is written any more. Each channel must be shown
    NOT_REPORTING no later than twice its report interval after its last report, and RUNNING
    again once the driver is thawed (before its worker's session timeout kills it)."""
    stack = world.stack
    all_running(stack, 60)
    driver_id = status(stack, CHANNELS[0])["driver_id"]
    assert status(stack, CHANNELS[1])["driver_id"] == driver_id, "one shared driver"
    [jvm] = driver_pids(driver_id)
    group = os.getpgid(jvm)
    os.killpg(group, signal.SIGSTOP)
    try:
        late: dict[str, float] = {}

        def shown_not_reporting() -> bool:
            for name in CHANNELS:
                shown = status(stack, name)
                if name not in late and shown["state"] == "NOT_REPORTING":
                    since = datetime.fromisoformat(shown["not_reporting_since"]).timestamp()
                    late[name] = time.time() - since  # how long after its last report
            return len(late) == len(CHANNELS)

        wait_until(shown_not_reporting, 4 * STATUS_INTERVAL, interval=0.5, what="not reporting")
    finally:
        os.killpg(group, signal.SIGCONT)
    all_running(stack, 60)
    for name, after in late.items():
        # The check polls every 0.5 s and the control loop passes every 1 s.
        assert after <= 2 * STATUS_INTERVAL + 2, (name, after)
    print(f"\nfrozen driver: shown NOT_REPORTING {late} s after the last report")
