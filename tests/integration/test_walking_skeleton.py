"""One channel from the API to Spark and back, on real Kafka, Redis, Spark and Celery."""

from __future__ import annotations

import json
import time
import uuid
from collections import Counter

import pytest
from confluent_kafka import Consumer, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic
from prometheus_client.parser import text_string_to_metric_families

from tests.integration.conftest import Stack
from tests.support.processes import wait_until

pytestmark = pytest.mark.integration

EVENTS = 10_000
KINDS = ("order", "refund", "quote")
REGIONS = ("eu-west-1", "us-east-1", "eu-central-1", "ap-south-1")
PATTERN = {"data": {"kind": ["order"], "region": [{"prefix": "eu-"}]}}


def make_topic(bootstrap: str, name: str, partitions: int) -> None:
    admin = AdminClient({"bootstrap.servers": bootstrap})
    futures = admin.create_topics([NewTopic(name, partitions, 1)])
    futures[name].result(timeout=30)


def produce(bootstrap: str, topic: str, values: list[bytes]) -> None:
    producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 20})
    for value in values:
        producer.produce(topic, value)
        producer.poll(0)
    assert producer.flush(60) == 0


def consume_all(bootstrap: str, topic: str, expected: int, timeout: float) -> list[bytes]:
    """Read ``topic`` until ``expected`` records arrived, then 5 s more to catch extras."""
    consumer = Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": f"check-{uuid.uuid4().hex}",
            "auto.offset.reset": "earliest",
            "enable.auto.commit": False,
        }
    )
    consumer.subscribe([topic])
    values: list[bytes] = []
    deadline = time.monotonic() + timeout
    settle_until: float | None = None
    try:
        while time.monotonic() < (settle_until or deadline):
            message = consumer.poll(0.5)
            if message is None or message.error():
                continue
            values.append(message.value())
            if len(values) >= expected and settle_until is None:
                settle_until = time.monotonic() + 5
    finally:
        consumer.close()
    return values


def event(seq: int) -> dict:
    return {
        "seq": seq,
        "kind": KINDS[seq % len(KINDS)],
        "region": REGIONS[seq % len(REGIONS)],
        "amount": round(seq * 1.5, 2),
    }


def selected(payload: dict) -> bool:
    return payload["kind"] == "order" and payload["region"].startswith("eu-")


def channel_spec(bootstrap: str, source_topic: str, sink_topic: str) -> dict:
    return {
        "source": {
            "type": "kafka",
            "config": {
                "bootstrap_servers": bootstrap,
                "topics": [source_topic],
                "starting_offsets": "earliest",
                "format": "json",
            },
        },
        "transforms": [{"type": "filter", "config": {"pattern": PATTERN}}],
        "sink": {
            "type": "kafka",
            "config": {"bootstrap_servers": bootstrap, "topic": sink_topic, "format": "json"},
        },
    }


def wait_for_state(stack: Stack, name: str, state: str, timeout: float) -> dict:
    http = stack.session()

    def reached():
        status = http.get(f"{stack.api}/channels/{name}/status", timeout=5).json()
        return status if status["state"] == state else None

    try:
        return wait_until(reached, timeout, interval=0.5, what=f"{name} to be {state}")
    except TimeoutError:
        last = http.get(f"{stack.api}/channels/{name}/status", timeout=5).json()
        pytest.fail(f"{name} never reached {state}; last status {last}\n{stack.logs()}")


def committed_offsets(bootstrap: str, group: str, topic: str, partitions: int) -> list[int]:
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": group})
    try:
        found = consumer.committed([TopicPartition(topic, p) for p in range(partitions)], 10)
        return [tp.offset for tp in found]
    finally:
        consumer.close()


def assert_metrics_show_running(stack: Stack, name: str) -> None:
    """One Prometheus scrape (the admin's API token): the channel RUNNING, the control
    loop's histogram filled by the Celery worker."""
    response = stack.session().get(f"{stack.base_url}/metrics", timeout=10)
    assert response.status_code == 200, response.text
    samples = {
        (sample.name, tuple(sorted(sample.labels.items()))): sample.value
        for family in text_string_to_metric_families(response.text)
        for sample in family.samples
    }
    assert samples[("sluice_channel_state", (("channel", name), ("state", "RUNNING")))] == 1
    assert samples[("sluice_channel_events_per_second", (("channel", name),))] >= 0
    assert samples[("sluice_reconcile_duration_seconds_count", ())] > 0
    assert samples[("sluice_reconcile_last_success_timestamp_seconds", ())] > 0


def assert_stage_counts(http, stack: Stack, name: str, selected_events: int) -> None:
    """The status' per-stage counts: every produced event in at the source, the filter's
    selection out of it and into the sink (they come with the same progress as the offsets)."""

    def counted():
        stages = http.get(f"{stack.api}/channels/{name}/status", timeout=5).json()["stages"]
        return stages if stages and stages[0]["in"] == EVENTS else None

    stages = wait_until(counted, 30, what="stage counts to cover every event")
    assert [(s["stage"], s["index"], s["type"]) for s in stages] == [
        ("source", None, "kafka"),
        ("transform", 0, "filter"),
        ("sink", None, "kafka"),
    ]
    assert [(s["in"], s["out"], s["failed"]) for s in stages] == [
        (EVENTS, EVENTS, 0),
        (EVENTS, selected_events, 0),
        (selected_events, selected_events, 0),
    ]


def test_channel_filters_kafka_to_kafka_end_to_end(stack: Stack):
    source, sink, name = "orders-in", "orders-eu", "eu-orders"
    make_topic(stack.kafka, source, 3)
    make_topic(stack.kafka, sink, 1)
    payloads = [event(seq) for seq in range(EVENTS)]
    produce(stack.kafka, source, [json.dumps(p).encode() for p in payloads])
    expected = sorted(p["seq"] for p in payloads if selected(p))
    assert 0 < len(expected) < EVENTS

    http = stack.session()
    created = http.post(
        f"{stack.api}/channels/",
        json={
            "name": name,
            "description": "EU orders",
            "spec": channel_spec(stack.kafka, source, sink),
        },
        timeout=10,
    )
    assert created.status_code == 201, created.text

    started_at = time.monotonic()
    assert http.post(f"{stack.api}/channels/{name}/start", timeout=10).status_code == 202
    running = wait_for_state(stack, name, "RUNNING", 180)
    print(f"\ndeploy -> RUNNING: {time.monotonic() - started_at:.1f}s")
    assert running["worker_id"] == "it-worker-1"
    assert running["target_state"] == "RUNNING"
    assert_metrics_show_running(stack, name)

    values = consume_all(stack.kafka, sink, len(expected), timeout=180)
    print(
        f"deploy -> {len(values)} filtered events in the sink: {time.monotonic() - started_at:.1f}s"
    )
    seqs = [json.loads(v)["seq"] for v in values]
    duplicates = {s: n for s, n in Counter(seqs).items() if n > 1}
    assert not duplicates, f"duplicated events: {list(duplicates)[:10]}"
    assert sorted(seqs) == expected
    assert all(json.loads(v) == payloads[json.loads(v)["seq"]] for v in values[:100]), (
        "format json writes the event's data unchanged"
    )

    def tasks_caught_up():
        status = http.get(f"{stack.api}/channels/{name}/status", timeout=5).json()
        offsets = {t["partition"]: t["offset"] for t in status["tasks"]}
        return (
            status
            if len(offsets) == 3 and sum(o or 0 for o in offsets.values()) == EVENTS
            else None
        )

    status = wait_until(tasks_caught_up, 30, what="tasks to report every offset")
    assert {t["topic"] for t in status["tasks"]} == {source}
    assert_stage_counts(http, stack, name, len(expected))
    assert all(
        t["state"] == "RUNNING" and t["worker_id"] == "it-worker-1" for t in status["tasks"]
    ), status["tasks"]
    commits = wait_until(
        lambda: (
            (o := committed_offsets(stack.kafka, f"sluice-{name}", source, 3))
            and sum(o) == EVENTS
            and o
        ),
        30,
        what="offsets committed to the channel's consumer group",
    )
    assert sum(commits) == EVENTS

    assert http.post(f"{stack.api}/channels/{name}/stop", timeout=10).status_code == 202
    stopped = wait_for_state(stack, name, "STOPPED", 60)
    assert stopped["target_state"] == "STOPPED"

    lifecycle = http.get(f"{stack.api}/channels/{name}/lifecycle/", timeout=5).json()
    transitions = lifecycle["results"] if isinstance(lifecycle, dict) else lifecycle
    connector_moves = [
        (t["from_state"], t["to_state"])
        for t in reversed(transitions)
        if t["subject_type"] == "connector"
    ]
    assert ("RUNNING", "STOPPED") in connector_moves, connector_moves
    assert any(to == "RUNNING" for _, to in connector_moves), connector_moves
    actors = {t["actor"] for t in transitions}
    assert "user:admin" in actors and "system:reconcile" in actors, actors


def test_unreachable_broker_fails_with_a_readable_trace(stack: Stack):
    http = stack.session()
    name = "no-broker"
    spec = channel_spec("127.0.0.1:1", "anything", "anything-out")
    assert (
        http.post(
            f"{stack.api}/channels/", json={"name": name, "spec": spec}, timeout=10
        ).status_code
        == 201
    )
    assert http.post(f"{stack.api}/channels/{name}/start", timeout=10).status_code == 202
    failed = wait_for_state(stack, name, "FAILED", 120)
    first_line = failed["trace"].splitlines()[0]
    assert "127.0.0.1:1" in first_line and "unreachable" in first_line, first_line
    assert http.get(f"{stack.base_url}/healthz", timeout=5).status_code == 200


def test_malformed_json_fails_the_task_naming_topic_partition_offset(stack: Stack):
    source, name = "bad-json-in", "bad-json"
    make_topic(stack.kafka, source, 1)
    produce(stack.kafka, source, [b'{"ok": 1}', b'{"ok": 2}', b"{not json", b'{"ok": 3}'])
    http = stack.session()
    spec = channel_spec(stack.kafka, source, "bad-json-out")
    spec["transforms"] = []
    assert (
        http.post(
            f"{stack.api}/channels/", json={"name": name, "spec": spec}, timeout=10
        ).status_code
        == 201
    )
    assert http.post(f"{stack.api}/channels/{name}/start", timeout=10).status_code == 202
    failed = wait_for_state(stack, name, "FAILED", 180)
    first_line = failed["trace"].splitlines()[0]
    assert f"topic={source} partition=0 offset=2" in first_line, first_line
    assert "not valid JSON" in first_line, first_line
