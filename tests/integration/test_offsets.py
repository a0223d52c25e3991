"""Offsets on the real stack (KIP-875 semantics and migration): read, alter, copy, reset.

One channel Kafka → Kafka runs 100 events to the end and stops; its offsets read 100. Altered
to 40, the next start delivers exactly events 40..99 again (checked by event id); copied from
a consumer group at 90, exactly 90..99 again; reset (starting_offsets earliest), all 100
again. Every change is refused while the channel runs, and recorded in its lifecycle.
"""

from __future__ import annotations

import json
from collections import Counter

import pytest
from confluent_kafka import Consumer, TopicPartition

from tests.integration.conftest import Stack
from tests.integration.test_walking_skeleton import (
    committed_offsets,
    consume_all,
    make_topic,
    produce,
    wait_for_state,
)
from tests.support.processes import wait_until
from tests.support.specs import kafka_passthrough

pytestmark = pytest.mark.integration

EVENTS = 100
NAME, SOURCE, SINK = "offsets-demo", "offsets-in", "offsets-out"


def spec(bootstrap: str) -> dict:
    return kafka_passthrough(bootstrap, SOURCE, SINK)


def delivered(stack: Stack, expected: int) -> Counter:
    """How many times each source offset reached the sink (event id = topic/partition/offset)."""
    values = consume_all(stack.kafka, SINK, expected, timeout=180)
    ids = Counter(json.loads(value)["id"] for value in values)
    assert all(key.startswith(f"{SOURCE}/0/") for key in ids), list(ids)[:5]
    return Counter({int(key.rsplit("/", 1)[1]): count for key, count in ids.items()})


def once(offsets: range) -> Counter:
    return Counter(offsets)


def run_until_stopped(stack: Stack, expected_in_sink: int, while_running=None) -> Counter:
    """Start the channel, wait for ``expected_in_sink`` events in the sink and the group at the
    end, stop it; what reached the sink (since the first run), by source offset."""
    http = stack.session()
    assert http.post(f"{stack.api}/channels/{NAME}/start", timeout=10).status_code == 202
    wait_for_state(stack, NAME, "RUNNING", 180)
    if while_running is not None:
        while_running()
    found = delivered(stack, expected_in_sink)
    wait_until(
        lambda: committed_offsets(stack.kafka, f"sluice-{NAME}", SOURCE, 1) == [EVENTS],
        60,
        what="the channel's consumer group to reach the end",
    )
    assert http.post(f"{stack.api}/channels/{NAME}/stop", timeout=10).status_code == 202
    wait_for_state(stack, NAME, "STOPPED", 60)
    return found


def offsets_of(stack: Stack) -> dict:
    response = stack.session().get(f"{stack.api}/channels/{NAME}/offsets", timeout=10)
    assert response.status_code == 200, response.text
    return response.json()


def position(offset: int) -> list[dict]:
    return [{"partition": {"topic": SOURCE, "partition": 0}, "offset": {"offset": offset}}]


def commit_group(bootstrap: str, group: str, offset: int) -> None:
    """What a Kafka Connect sink named my-sink leaves behind: its group's committed offset."""
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": group})
    try:
        consumer.commit(offsets=[TopicPartition(SOURCE, 0, offset)], asynchronous=False)
    finally:
        consumer.close()


def test_offsets_read_alter_copy_and_reset_on_the_real_stack(stack: Stack):
    http = stack.session()
    make_topic(stack.kafka, SOURCE, 1)
    make_topic(stack.kafka, SINK, 1)
    produce(stack.kafka, SOURCE, [json.dumps({"seq": seq}).encode() for seq in range(EVENTS)])
    created = http.post(
        f"{stack.api}/channels/", json={"name": NAME, "spec": spec(stack.kafka)}, timeout=10
    )
    assert created.status_code == 201, created.text

    def refused_while_running():
        url = f"{stack.api}/channels/{NAME}/offsets"
        for response in (
            http.patch(url, json={"offsets": position(0)}, timeout=10),
            http.delete(url, timeout=10),
            http.post(f"{url}/copy", json={"from_consumer_group": "g"}, timeout=10),
        ):
            assert response.status_code == 409, response.text
            assert "stop it before you" in response.json()["detail"]

    # 1. Run to the end: every event once; the checkpoint says the next offset is 100.
    assert run_until_stopped(stack, EVENTS, refused_while_running) == once(range(EVENTS))
    assert offsets_of(stack) == {"offsets": position(EVENTS), "note": ""}

    # 2. Alter to 40: the next start delivers 40..99 again, nothing before 40.
    altered = http.patch(
        f"{stack.api}/channels/{NAME}/offsets", json={"offsets": position(40)}, timeout=10
    )
    assert altered.status_code == 200, altered.text
    assert altered.json() == {
        "message": "The offsets for this channel have been altered successfully"
    }
    assert offsets_of(stack)["offsets"] == position(40)
    sent = once(range(EVENTS)) + once(range(40, EVENTS))
    assert run_until_stopped(stack, sum(sent.values())) == sent
    assert offsets_of(stack)["offsets"] == position(EVENTS)

    # 3. Migration: take over from a consumer group that committed 90.
    commit_group(stack.kafka, "connect-my-sink", 90)
    copied = http.post(
        f"{stack.api}/channels/{NAME}/offsets/copy",
        json={"from_consumer_group": "connect-my-sink"},
        timeout=10,
    )
    assert copied.status_code == 200, copied.text
    sent += once(range(90, EVENTS))
    assert run_until_stopped(stack, sum(sent.values())) == sent

    # 4. Reset: back to starting_offsets (earliest), every event once more.
    reset = http.delete(f"{stack.api}/channels/{NAME}/offsets", timeout=10)
    assert reset.status_code == 200, reset.text
    assert offsets_of(stack)["offsets"] == []
    sent += once(range(EVENTS))
    assert run_until_stopped(stack, sum(sent.values())) == sent

    lifecycle = http.get(f"{stack.api}/channels/{NAME}/lifecycle/?limit=200", timeout=10).json()
    reasons = [event["reason"] for event in lifecycle["results"] if event["actor"] == "user:admin"]
    assert f"offsets altered: {SOURCE}/0 → 40" in reasons
    assert f"offsets copied from consumer group 'connect-my-sink': {SOURCE}/0 → 90" in reasons
    assert "offsets reset: the next start begins from starting_offsets earliest" in reasons
