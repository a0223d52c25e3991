"""Dead letters on the real stack: bad records leave a running channel for the DLQ topic.

Kafka → cast → Kafka with ``errors.tolerance: all`` and a Kafka dead-letter sink: every good
event reaches the sink exactly once, every bad one (unparseable, uncastable) reaches the DLQ
topic with its context, the channel stays RUNNING and its status counts the dead letters.
"""

from __future__ import annotations

import json

import pytest

from tests.integration.conftest import Stack
from tests.integration.test_walking_skeleton import (
    consume_all,
    make_topic,
    produce,
    wait_for_state,
)
from tests.support.processes import wait_until

pytestmark = pytest.mark.integration

EVENTS = 1_000
UNREADABLE = {seq for seq in range(EVENTS) if seq % 97 == 13}  # not JSON at all
UNCASTABLE = {seq for seq in range(EVENTS) if seq % 89 == 7} - UNREADABLE  # amount "n/a"


def record(seq: int) -> bytes:
    if seq in UNREADABLE:
        return f'{{"seq": {seq}, "amount": '.encode()
    amount = "n/a" if seq in UNCASTABLE else str(seq)
    return json.dumps({"seq": seq, "amount": amount}).encode()


def test_bad_records_go_to_the_dead_letter_topic_and_the_channel_keeps_running(stack: Stack):
    source, sink, dlq, name = "dl-in", "dl-out", "dl-dead", "dead-letters"
    for topic in (source, sink, dlq):
        make_topic(stack.kafka, topic, 1)
    produce(stack.kafka, source, [record(seq) for seq in range(EVENTS)])
    spec = {
        "source": {
            "type": "kafka",
            "config": {
                "bootstrap_servers": stack.kafka,
                "topics": [source],
                "starting_offsets": "earliest",
            },
        },
        "transforms": [{"type": "cast", "config": {"fields": {"data.amount": "long"}}}],
        "sink": {"type": "kafka", "config": {"bootstrap_servers": stack.kafka, "topic": sink}},
        "errors": {
            "tolerance": "all",
            "log": True,
            "dead_letter": {
                "type": "kafka",
                "config": {"bootstrap_servers": stack.kafka, "topic": dlq, "format": "cloudevents"},
            },
        },
    }
    http = stack.session()
    created = http.post(
        f"{stack.api}/channels/",
        json={"name": name, "spec": spec, "target_state": "RUNNING"},
        timeout=10,
    )
    assert created.status_code == 201, created.text
    wait_for_state(stack, name, "RUNNING", 180)

    good = EVENTS - len(UNREADABLE) - len(UNCASTABLE)
    values = [json.loads(v) for v in consume_all(stack.kafka, sink, good, timeout=180)]
    assert sorted(v["seq"] for v in values) == sorted(set(range(EVENTS)) - UNREADABLE - UNCASTABLE)
    assert all(v["amount"] == v["seq"] for v in values), "amounts were cast to numbers"

    letters = [
        json.loads(v) for v in consume_all(stack.kafka, dlq, len(UNREADABLE) + len(UNCASTABLE), 60)
    ]
    by_stage: dict[str, list[dict]] = {}
    for letter in letters:
        assert letter["type"] == "sluice.deadletter"
        assert letter["source"] == f"sluice://channels/{name}"
        by_stage.setdefault(letter["data"]["stage"], []).append(letter["data"])
    unreadable, uncastable = by_stage["source"], by_stage["transforms[0] (cast)"]
    assert sorted(d["origin"]["offset"] for d in unreadable) == sorted(UNREADABLE)
    assert all(d["error_class"] == "InvalidJson" for d in unreadable)
    assert all(d["payload"] == record(d["origin"]["offset"]).decode() for d in unreadable)
    assert sorted(d["event"]["data"]["seq"] for d in uncastable) == sorted(UNCASTABLE)
    assert all(d["error_class"] == "CastError" for d in uncastable)
    assert all(letter["data"]["origin"]["topic"] == source for letter in letters)

    def counted():
        status = http.get(f"{stack.api}/channels/{name}/status", timeout=5).json()
        return status if status["dead_letters"] == len(letters) else None

    status = wait_until(counted, 30, what="the status to count the dead letters")
    assert status["state"] == "RUNNING"

    assert http.post(f"{stack.api}/channels/{name}/stop", timeout=10).status_code == 202
    wait_for_state(stack, name, "STOPPED", 60)
