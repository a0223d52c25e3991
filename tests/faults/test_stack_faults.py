"""Faults on one host's whole stack: every part is killed or restarted while events flow.

200,000 events flow Kafka → filter → Kafka (channel ``faults-kafka``) and Kafka → filter →
files (``faults-files``) on a stack with two runtime workers and a Redis of its own. Between
batches of events: ``kill -9`` of a driver, ``kill -9`` of a runtime worker (the other one
takes over), a Redis restart, ``kill -9`` of the Celery worker and beat, a web server restart.
After each, both channels must be RUNNING again by themselves. At the end a check by event id
shows no event lost, counts the duplicates (at-least-once into Kafka; none into the files
sink, which is exactly once), and the lifecycle history tells what happened.

On the same stack, an operator's drain (no fault): the channels of one runtime worker move
to the other through the API with no event lost, the drained worker gets no new channel, and
once back in service it takes the next one.
"""

from __future__ import annotations

import json
import os
import signal
import time
import uuid
from collections import Counter
from collections.abc import Iterator
from pathlib import Path

import pytest
import requests
from confluent_kafka import Consumer
from confluent_kafka.admin import AdminClient

from runtime_adapter.config import RuntimeSettings
from runtime_adapter.group import slot_of
from runtime_adapter.group.member import client_id_of
from tests.integration.test_walking_skeleton import consume_all, make_topic
from tests.support.orders import PATTERN, produce_range, selected
from tests.support.processes import free_port, start_redis, wait_until
from tests.support.spark import local_spark
from tests.support.stack import Stack, kill_driver, running_stack, runtime_env

pytestmark = [pytest.mark.integration, pytest.mark.spark]

EVENTS = 200_000
BATCHES = 5
CHANNELS = ("faults-kafka", "faults-files")


def produce_batch(bootstrap: str, topic: str, batch: int) -> None:
    size = EVENTS // BATCHES
    produce_range(bootstrap, topic, batch * size, (batch + 1) * size)


class RedisProcess:
    """A Redis of the faults stack's own, restartable on the same port and data."""

    def __init__(self, data_dir: Path, log_dir: Path) -> None:
        self.port, self.data_dir, self.log_dir = free_port(), data_dir, log_dir
        self.service, self.url = start_redis(data_dir, log_dir, self.port)

    def restart(self) -> None:
        self.service.stop()
        self.service, self.url = start_redis(self.data_dir, self.log_dir, self.port)


@pytest.fixture(scope="module")
def faults_stack(
    kafka_bootstrap: str, tmp_path_factory: pytest.TempPathFactory, fault_logs: Path
) -> Iterator[tuple[Stack, RedisProcess]]:
    """The stack of this module, on this machine (no namespaces): one broker of its own."""
    logs = fault_logs / "stack"
    redis = RedisProcess(tmp_path_factory.mktemp("faults-redis"), logs)
    try:
        with running_stack(
            redis_url=redis.url,
            kafka=kafka_bootstrap,
            var=tmp_path_factory.mktemp("faults-var"),
            log_dir=logs,
            runtime_workers=2,
            extra_env={
                "SLUICE_DRIVER_MEMORY": "640m",
                "SLUICE_SHARED_DRIVER_MEMORY": "768m",
                "SPARK_MASTER": "local[1]",
                "SLUICE_SPARE_DRIVERS": "0",  # as in conftest.py: no idle JVM per worker
            },
        ) as stack:
            yield stack, redis
    finally:
        redis.service.stop()


def test_channels_survive_every_fault_without_losing_events(
    faults_stack: tuple[Stack, RedisProcess], tmp_path: Path
) -> None:
    stack, redis = faults_stack
    suffix = uuid.uuid4().hex[:6]
    source, sink = f"faults-in-{suffix}", f"faults-out-{suffix}"
    make_topic(stack.kafka, source, 3)
    make_topic(stack.kafka, sink, 3)
    outbox = tmp_path / "outbox"
    http = stack.session()
    for name, sink_stage in (
        (
            CHANNELS[0],
            {"type": "kafka", "config": {"bootstrap_servers": stack.kafka, "topic": sink}},
        ),
        (CHANNELS[1], {"type": "files", "config": {"path": str(outbox), "format": "jsonl"}}),
    ):
        spec = {
            "source": {
                "type": "kafka",
                "config": {
                    "bootstrap_servers": stack.kafka,
                    "topics": [source],
                    "starting_offsets": "earliest",
                    "max_events_per_trigger": 20_000,
                },
            },
            "transforms": [{"type": "filter", "config": {"pattern": PATTERN}}],
            "sink": sink_stage,
        }
        body = {"name": name, "spec": spec, "target_state": "RUNNING"}
        created = http.post(f"{stack.api}/channels/", json=body, timeout=10)
        assert created.status_code == 201, created.text

    def status(name: str) -> dict:
        return stack.session().get(f"{stack.api}/channels/{name}/status", timeout=5).json()

    def all_running(timeout: float = 240) -> None:
        def running() -> bool:
            return all(status(name)["state"] == "RUNNING" for name in CHANNELS)

        try:
            wait_until(running, timeout, interval=1, what="both channels RUNNING")
        except TimeoutError:
            states = {name: status(name) for name in CHANNELS}
            pytest.fail(f"not RUNNING again: {states}\n{stack.logs()}")

    timings: dict[str, float] = {}

    def recover(fault: str) -> None:
        started = time.monotonic()
        all_running()
        timings[fault] = time.monotonic() - started

    produce_batch(stack.kafka, source, 0)
    recover("start")

    # 1. kill -9 of a shared driver: every channel it ran fails with the cause named, and the
    #    restart policy brings each back in another driver.
    killed_at = time.monotonic()
    killed = kill_driver(stack, CHANNELS[0])
    hosted = [name for name in CHANNELS if status(name)["driver_id"] == killed]
    wait_until(lambda: status(CHANNELS[0])["state"] != "RUNNING", 60, what="the failure seen")
    timings["driver failure seen"] = time.monotonic() - killed_at
    produce_batch(stack.kafka, source, 1)
    recover("kill -9 driver")
    for name in hosted:
        assert status(name)["driver_id"] not in (killed, None), status(name)
        events = http.get(f"{stack.api}/channels/{name}/lifecycle/?limit=200", timeout=5).json()
        failures = [e["reason"] for e in events["results"] if e["to_state"] == "FAILED"]
        assert any(f"driver {killed}" in r and "killed by SIGKILL" in r for r in failures), failures

    # 2. kill -9 of the runtime worker hosting the files channel: the other one takes over.
    host = status(CHANNELS[1])["worker_id"]
    role = f"runtime-{host.rsplit('-', 1)[1]}"
    killed_at = time.monotonic()
    os.kill(stack.services[role].process.pid, signal.SIGKILL)
    wait_until(
        lambda: (
            status(CHANNELS[1])["worker_id"] not in (host, None)
            and status(CHANNELS[1])["state"] == "RUNNING"
        ),
        240,
        interval=1,
        what="the files channel RUNNING on the other worker",
    )
    timings["files channel moved to the other worker"] = time.monotonic() - killed_at
    stack.start(role, runtime_env(int(host.rsplit("-", 1)[1])))  # capacity back
    produce_batch(stack.kafka, source, 2)
    recover("kill -9 runtime worker")

    # 3. Redis restart (append-only file: desired state and status survive).
    redis.restart()
    recover("redis restart")

    # 4. kill -9 of the Celery worker and beat, then started again.
    for role in ("celery", "beat"):
        os.kill(stack.services[role].process.pid, signal.SIGKILL)
    for role in ("celery", "beat"):  # both down (reaped) before either is back
        stack.services[role].process.wait(timeout=30)
    for role in ("celery", "beat"):
        stack.start(role)
    produce_batch(stack.kafka, source, 3)
    recover("kill -9 celery worker and beat")

    # 5. Web server restart.
    stack.services["web"].stop()
    stack.start("web")
    wait_until(
        lambda: requests.get(f"{stack.base_url}/healthz", timeout=2).status_code == 200,
        60,
        what="the web server back",
    )
    produce_batch(stack.kafka, source, 4)
    recover("web restart")

    expected = [seq for seq in range(EVENTS) if selected(seq)]
    values = consume_all(stack.kafka, sink, len(expected), timeout=600)
    seqs = Counter(json.loads(value)["seq"] for value in values)
    assert sorted(seqs) == expected, f"lost {len(set(expected) - set(seqs))} events in Kafka"
    kafka_duplicates = sum(count - 1 for count in seqs.values())

    spark = local_spark()

    def files_complete() -> Counter | None:
        if not (outbox / "_spark_metadata").is_dir():
            return None
        found = Counter(
            json.loads(row.value)["seq"] for row in spark.read.text(str(outbox)).collect()
        )
        return found if len(found) >= len(expected) else None

    in_files = wait_until(files_complete, 600, interval=2, what="every event in the files sink")
    assert sorted(in_files) == expected, "lost events in the files sink"
    assert max(in_files.values()) == 1, "the files sink is exactly once"

    lifecycle = http.get(
        f"{stack.api}/channels/{CHANNELS[0]}/lifecycle/?limit=200", timeout=5
    ).json()
    reasons = [event["reason"] for event in lifecycle["results"]]
    assert any(reason.startswith("automatic restart 1/") for reason in reasons), reasons
    moved = http.get(f"{stack.api}/channels/{CHANNELS[1]}/lifecycle/?limit=200", timeout=5).json()
    assert any(f"worker {host}" in event["reason"] for event in moved["results"]), moved
    print(
        f"\nrecovery: {json.dumps({k: round(v, 1) for k, v in timings.items()})}; "
        f"{len(expected)} events selected; duplicates into Kafka: {kafka_duplicates}; "
        "into files: 0"
    )
    for name in CHANNELS:
        http.post(f"{stack.api}/channels/{name}/stop", timeout=10)


DRAIN_CHANNELS = 4
DRAIN_BATCH = 3_000


def consume_until(bootstrap: str, topic: str, wanted: set[int], timeout: float) -> Counter:
    """The ``seq`` of every record of ``topic`` (counted: duplicates show), read until all of
    ``wanted`` arrived or ``timeout`` seconds passed."""
    consumer = Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": f"check-{uuid.uuid4().hex}",
            "auto.offset.reset": "earliest",
            "enable.auto.commit": False,
        }
    )
    consumer.subscribe([topic])
    seqs: Counter = Counter()
    deadline = time.monotonic() + timeout
    try:
        while time.monotonic() < deadline and not wanted <= seqs.keys():
            message = consumer.poll(0.5)
            if message is not None and not message.error():
                seqs[json.loads(message.value())["seq"]] += 1
    finally:
        consumer.close()
    return seqs


def owned_slots(stack: Stack, worker_id: str) -> set[int]:
    """The slots the runtime group's coordinator has given ``worker_id`` now."""
    group = stack.env["SLUICE_RUNTIME_GROUP_ID"]
    admin = AdminClient({"bootstrap.servers": stack.kafka})
    described = admin.describe_consumer_groups([group])[group].result(timeout=10)
    for member in described.members:
        if member.client_id == client_id_of(worker_id) and member.assignment is not None:
            return {tp.partition for tp in member.assignment.topic_partitions}
    return set()


def test_drain_moves_channels_without_losing_events_then_undrain_places_again(
    faults_stack: tuple[Stack, RedisProcess],
) -> None:
    stack, _ = faults_stack
    http = stack.session()
    suffix = uuid.uuid4().hex[:6]
    source = f"drain-in-{suffix}"
    make_topic(stack.kafka, source, 2)
    names = [f"drain-{suffix}-{index}" for index in range(DRAIN_CHANNELS)]

    def create(name: str) -> None:
        make_topic(stack.kafka, f"{name}-out", 1)
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
            "sink": {
                "type": "kafka",
                "config": {"bootstrap_servers": stack.kafka, "topic": f"{name}-out"},
            },
        }
        body = {"name": name, "spec": spec, "target_state": "RUNNING"}
        created = http.post(f"{stack.api}/channels/", json=body, timeout=10)
        assert created.status_code == 201, created.text

    def status(name: str) -> dict:
        return http.get(f"{stack.api}/channels/{name}/status", timeout=5).json()

    def worker(worker_id: str) -> dict:
        return http.get(f"{stack.api}/workers/{worker_id}/", timeout=5).json()

    def running_off(names: list[str], avoid: str | None) -> bool:
        states = [status(name) for name in names]
        return all(s["state"] == "RUNNING" and s["worker_id"] not in (avoid, None) for s in states)

    for name in names:
        create(name)
    produce_range(stack.kafka, source, 0, DRAIN_BATCH)
    try:
        wait_until(lambda: running_off(names, None), 240, interval=1, what="the channels RUNNING")
    except TimeoutError:
        pytest.fail(f"not RUNNING: {[status(n) for n in names]}\n{stack.logs()}")
    hosts = Counter(status(name)["worker_id"] for name in names)
    drained, hosted = hosts.most_common(1)[0]
    moving = sorted(name for name in names if status(name)["worker_id"] == drained)

    started = time.monotonic()
    answer = http.post(f"{stack.api}/workers/{drained}/drain", timeout=10)
    assert answer.status_code == 202, answer.text
    assert answer.json()["channels"] == moving and answer.json()["worker"]["service"] == "DRAINING"
    produce_range(stack.kafka, source, DRAIN_BATCH, 2 * DRAIN_BATCH)  # while they move
    try:
        wait_until(lambda: running_off(names, drained), 120, interval=0.5, what="moved, RUNNING")
    except TimeoutError:
        pytest.fail(f"not moved: {[status(n) for n in names]}\n{stack.logs()}")
    moved_in = time.monotonic() - started
    wait_until(lambda: worker(drained)["service"] == "DRAINED", 30, what="the worker DRAINED")
    refused = http.delete(f"{stack.api}/workers/{drained}/", timeout=10)
    assert refused.status_code == 409 and "is alive" in refused.json()["detail"], refused.text
    produce_range(stack.kafka, source, 2 * DRAIN_BATCH, 3 * DRAIN_BATCH)

    wanted = {seq for seq in range(3 * DRAIN_BATCH) if selected(seq)}
    duplicates = 0
    for name in names:
        seqs = consume_until(stack.kafka, f"{name}-out", wanted, timeout=180)
        assert wanted - seqs.keys() == set(), f"{name} lost {len(wanted - seqs.keys())} events"
        duplicates += sum(count - 1 for count in seqs.values())
    for name in moving:
        events = http.get(f"{stack.api}/channels/{name}/lifecycle/?limit=100", timeout=5).json()
        reasons = [e["reason"] for e in events["results"]]
        assert any(f"worker {drained} is draining" in r for r in reasons), reasons

    # Back in service: the drained worker joins the runtime group again and is given its
    # share of the slots, so channels run there again (a new one, or some that move back).
    back = http.post(f"{stack.api}/workers/{drained}/undrain", timeout=10)
    assert back.status_code == 202 and back.json()["service"] == "IN_SERVICE", back.text
    wait_until(lambda: owned_slots(stack, drained), 60, interval=0.5, what="slots again")
    owned = owned_slots(stack, drained)
    late = next(
        name
        for name in (f"drain-{suffix}-late{n}" for n in range(1000))
        if slot_of(name, RuntimeSettings.load().runtime_slots) in owned
    )
    create(late)  # its slot is the drained worker's now
    wait_until(lambda: running_off([late], None), 120, interval=0.5, what="the new channel")
    assert status(late)["worker_id"] == drained
    audit = http.get(f"{stack.api}/audit/?action=worker.drain", timeout=5).json()["results"]
    assert any(row["object_id"] == drained and row["outcome"] == 202 for row in audit), audit
    print(
        f"\ndrain: {hosted} channel(s) of {drained} RUNNING elsewhere in {moved_in:.1f} s; "
        f"{len(wanted)} events per channel, none lost, {duplicates} duplicates"
    )
    for name in [*names, late]:
        http.post(f"{stack.api}/channels/{name}/stop", timeout=10)
