"""Dead letters you can act on, on the real stack: a bad cast makes dead letters in a Kafka
topic and in a files directory; the API lists them with their error, stage and origin,
filters them, shows one in full; after the spec is fixed, a redrive of all of them is refused
until it is confirmed (the refusal names the live target), then delivers each once, marked as
redriven in the sink's own format (record headers ``sluicereplay`` / ``sluicerun`` for the
``json`` format), and the letters are marked as redriven by the run (with wip-replay's redrive
run; without it, the redrive is refused, nothing written)."""

from __future__ import annotations

import importlib.util
import json
import time
import uuid
from pathlib import Path

import pytest
from confluent_kafka import Consumer

from tests.integration.conftest import Stack
from tests.integration.test_walking_skeleton import (
    consume_all,
    make_topic,
    produce,
    wait_for_state,
)
from tests.support.processes import wait_until

pytestmark = pytest.mark.integration

EVENTS = 200
UNCASTABLE = {seq for seq in range(EVENTS) if seq % 23 == 5}  # amount "n/a"
UNREADABLE = {seq for seq in range(EVENTS) if seq % 41 == 3} - UNCASTABLE  # not JSON


def record(seq: int) -> bytes:
    if seq in UNREADABLE:
        return f'{{"seq": {seq}, "amount": '.encode()
    amount = "n/a" if seq in UNCASTABLE else str(seq)
    return json.dumps({"seq": seq, "amount": amount}).encode()


def channel_spec(stack: Stack, source: str, sink: str, dead_letter: dict, cast: str) -> dict:
    return {
        "source": {
            "type": "kafka",
            "config": {
                "bootstrap_servers": stack.kafka,
                "topics": [source],
                "starting_offsets": "earliest",
            },
        },
        "transforms": [{"type": "cast", "config": {"fields": {"data.amount": cast}}}],
        "sink": {"type": "kafka", "config": {"bootstrap_servers": stack.kafka, "topic": sink}},
        "errors": {"tolerance": "all", "dead_letter": dead_letter},
    }


def listed(http, url: str, expected: int, what: str) -> dict:
    def found():
        body = http.get(url, timeout=30).json()
        return body if body.get("count") == expected else None

    return wait_until(found, 90, what=what)


def records_with_headers(bootstrap: str, topic: str, expected: int, timeout: float) -> list:
    """``(value, {header: text})`` of ``topic``'s records, once ``expected`` arrived (then
    5 s more to catch extras)."""
    consumer = Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": f"check-{uuid.uuid4().hex}",
            "auto.offset.reset": "earliest",
            "enable.auto.commit": False,
        }
    )
    consumer.subscribe([topic])
    found: list = []
    deadline, settle = time.monotonic() + timeout, None
    try:
        while time.monotonic() < (settle or deadline):
            message = consumer.poll(0.5)
            if message is None or message.error():
                continue
            headers = {k: (v or b"").decode() for k, v in (message.headers() or [])}
            found.append((json.loads(message.value()), headers))
            if len(found) >= expected and settle is None:
                settle = time.monotonic() + 5
    finally:
        consumer.close()
    return found


def test_dead_letters_are_listed_filtered_inspected_and_redriven(stack: Stack, files_root: Path):
    source, sink, dlq, name = "dlr-in", "dlr-out", "dlr-dead", "redrive-me"
    for topic in (source, sink, dlq):
        make_topic(stack.kafka, topic, 2)
    produce(stack.kafka, source, [record(seq) for seq in range(EVENTS)])
    to_kafka = {
        "type": "kafka",
        "config": {"bootstrap_servers": stack.kafka, "topic": dlq, "format": "cloudevents"},
    }
    http = stack.session()
    created = http.post(
        f"{stack.api}/channels/",
        json={
            "name": name,
            "spec": channel_spec(stack, source, sink, to_kafka, "long"),
            "target_state": "RUNNING",
        },
        timeout=10,
    )
    assert created.status_code == 201, created.text
    # The same records through a channel whose dead letters go to a files directory (jsonl).
    folder = files_root / "dead-letters-redrive"
    to_files = {
        "type": "files",
        "config": {"path": str(folder), "format": "jsonl", "content": "cloudevents"},
    }
    created = http.post(
        f"{stack.api}/channels/",
        json={
            "name": f"{name}-files",
            "spec": channel_spec(stack, source, f"{sink}-files", to_files, "long"),
            "target_state": "RUNNING",
        },
        timeout=10,
    )
    assert created.status_code == 201, created.text
    wait_for_state(stack, name, "RUNNING", 180)
    wait_for_state(stack, f"{name}-files", "RUNNING", 180)
    good = EVENTS - len(UNCASTABLE) - len(UNREADABLE)
    assert len(consume_all(stack.kafka, sink, good, timeout=180)) == good
    bad = len(UNCASTABLE) + len(UNREADABLE)

    for channel in (name, f"{name}-files"):
        url = f"{stack.api}/channels/{channel}/dead-letters/"
        body = listed(http, f"{url}?limit=500", bad, f"the dead letters of {channel}")
        letters = body["results"]
        assert body["target"]["readable"] is True
        assert [d["time"] for d in letters] == sorted((d["time"] for d in letters), reverse=True)
        by_class = {}
        for letter in letters:
            by_class.setdefault(letter["error_class"], []).append(letter)
            assert letter["origin"]["topic"] == source
            assert letter["redrivable"] is True
        casts = by_class["CastError"]
        assert all(d["stage"] == "transforms[0] (cast)" for d in casts)
        assert all(d["stage"] == "source" for d in by_class["InvalidJson"])
        filtered = http.get(f"{url}?error_class=CastError&limit=500", timeout=30).json()
        assert filtered["count"] == len(UNCASTABLE)
        assert http.get(f"{url}?stage=source", timeout=30).json()["count"] == len(UNREADABLE)
        one = http.get(f"{url}{casts[0]['id']}/", timeout=30)
        assert one.status_code == 200, one.text
        full = one.json()
        seq = json.loads(full["payload"])["seq"]
        assert seq in UNCASTABLE and full["payload"] == record(seq).decode()
        assert full["event"]["data"] == {"seq": seq, "amount": "n/a"}
        assert "data.amount" in full["message"] and full["event_id"] == full["event"]["id"]

    # The cause is fixed: amounts stay text, so "n/a" passes the cast.
    fixed = http.patch(
        f"{stack.api}/channels/{name}/",
        json={"spec": channel_spec(stack, source, sink, to_kafka, "string")},
        timeout=10,
    )
    assert fixed.status_code == 200, fixed.text
    redrive_url = f"{stack.api}/channels/{name}/dead-letters/redrive"
    selection = {"all": True, "error_class": "CastError"}
    if importlib.util.find_spec("console.services.runs") is not None:
        # Unconfirmed, it writes nothing and names the live target it would write into.
        refused = http.post(redrive_url, json=selection, timeout=60)
        assert refused.status_code == 400, refused.text
        assert f"kafka topic {sink}" in refused.json()["confirm"][0]
    redrive = http.post(redrive_url, json={**selection, "confirm": True}, timeout=60)
    if importlib.util.find_spec("console.services.runs") is None:
        # wip-replay's redrive run is not in this checkout: refused, nothing written.
        assert redrive.status_code == 503, redrive.text
        assert "start_redrive is missing" in redrive.json()["detail"]
        return
    assert redrive.status_code == 202, redrive.text
    assert redrive.json()["count"] == len(UNCASTABLE)
    run_id = redrive.json()["run"]["id"]
    records = records_with_headers(stack.kafka, sink, good + len(UNCASTABLE), 300)
    seqs = sorted(value["seq"] for value, _ in records)
    assert seqs == sorted(set(range(EVENTS)) - UNREADABLE), "each redriven event delivered once"
    # The json format writes the data alone: the marks are record headers.
    redriven = [(v, h) for v, h in records if "sluicereplay" in h]
    assert sorted(v["seq"] for v, _ in redriven) == sorted(UNCASTABLE)
    assert {(h["sluicereplay"], h["sluicerun"]) for _, h in redriven} == {(run_id, "redrive")}
    run_url = f"{stack.api}/channels/{name}/replays/{run_id}/"
    run = wait_until(
        lambda: (r := http.get(run_url, timeout=30).json())["state"] != "RUNNING" and r,
        120,
        what="the redrive run to end",
    )
    assert run["state"] == "SUCCEEDED" and run["events_failed"] == 0, run
    assert run["events_read"] == run["expected"] == len(UNCASTABLE), run
    marked = http.get(
        f"{stack.api}/channels/{name}/dead-letters/?error_class=CastError&limit=500", timeout=30
    ).json()["results"]
    assert {d["redriven"]["run"] for d in marked} == {run_id}
    assert {d["redriven"]["outcome"] for d in marked} == {f"{len(UNCASTABLE)} written"}
    for channel in (name, f"{name}-files"):
        assert http.post(f"{stack.api}/channels/{channel}/stop", timeout=10).status_code == 202
