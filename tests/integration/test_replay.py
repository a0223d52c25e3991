"""Replays on the real stack: events with known timestamps go through a Kafka → Kafka
channel; a replay of a time window sends exactly that window's events again, each tagged with
the run (``sluicereplay``, ``sluicerun``), as a bounded run beside the live connector (which
keeps running and keeps its consumer group); a cancelled run ends CANCELLED and leaves no
run checkpoint behind."""

from __future__ import annotations

import json
import os
import subprocess
import time
from datetime import UTC, datetime
from pathlib import Path

import pytest
from confluent_kafka import Producer

from tests.integration.conftest import Stack
from tests.integration.test_walking_skeleton import (
    committed_offsets,
    consume_all,
    make_topic,
    wait_for_state,
)
from tests.support.processes import wait_until

pytestmark = pytest.mark.integration

SOURCE, SINK, NAME = "replay-in", "replay-out", "replay-me"
PARTITIONS = 2
BEFORE, INSIDE, AFTER = 30, 40, 30
STEP_MS = 100


def produce_timed(bootstrap: str, base_ms: int) -> dict[int, int]:
    """``BEFORE + INSIDE + AFTER`` events, in time order, alternating partitions; returns
    each event's timestamp (ms) by its ``seq``. The three groups are 60 s apart."""
    producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 5})
    stamps = {}
    for seq in range(BEFORE + INSIDE + AFTER):
        group = 0 if seq < BEFORE else 1 if seq < BEFORE + INSIDE else 2
        stamps[seq] = base_ms + group * 60_000 + seq * STEP_MS
        value = json.dumps({"seq": seq}).encode()
        producer.produce(SOURCE, value, partition=seq % PARTITIONS, timestamp=stamps[seq])
    assert producer.flush(60) == 0
    return stamps


def channel_spec(stack: Stack) -> dict:
    return {
        "source": {
            "type": "kafka",
            "config": {
                "bootstrap_servers": stack.kafka,
                "topics": [SOURCE],
                "starting_offsets": "earliest",
            },
        },
        "transforms": [],
        "sink": {
            "type": "kafka",
            "config": {"bootstrap_servers": stack.kafka, "topic": SINK, "format": "cloudevents"},
        },
    }


def rfc3339(ms: int) -> str:
    return datetime.fromtimestamp(ms / 1000, tz=UTC).isoformat().replace("+00:00", "Z")


def finished_run(http, url: str, timeout: float) -> dict:
    def final():
        run = http.get(url, timeout=10).json()
        return run if run["state"] in ("SUCCEEDED", "FAILED", "CANCELLED") else None

    return wait_until(final, timeout, what=f"the run {url} to finish")


def run_checkpoints(stack: Stack) -> list[Path]:
    root = Path(stack.env["SLUICE_VAR_DIR"]) / "checkpoints"
    return [path for path in root.glob(f"{NAME}*.run-*") if path.is_dir()] if root.is_dir() else []


def shot(stack: Stack, name: str) -> None:
    """The channel page's Replays panel in Chromium (frontend/e2e/replay-shot.mjs)."""
    frontend = Path(__file__).resolve().parents[2] / "frontend"
    env = {
        **os.environ,
        "SLUICE_URL": stack.base_url,
        "SLUICE_CHANNEL": NAME,
        "SLUICE_USER": "admin",
        "SLUICE_PASSWORD": stack.env["SLUICE_ADMIN_PASSWORD"],
        "SHOTS": os.environ["SLUICE_REPLAY_SHOTS"],
        "SHOT_NAME": name,
    }
    done = subprocess.run(
        ["node", "e2e/replay-shot.mjs"], cwd=frontend, env=env, capture_output=True, text=True
    )
    print(done.stdout, done.stderr)


def test_a_window_is_replayed_exactly_tagged_beside_the_live_channel(stack: Stack):
    make_topic(stack.kafka, SOURCE, PARTITIONS)
    make_topic(stack.kafka, SINK, 1)
    base_ms = int(time.time() * 1000) - 600_000
    stamps = produce_timed(stack.kafka, base_ms)
    total = BEFORE + INSIDE + AFTER
    http = stack.session()
    created = http.post(
        f"{stack.api}/channels/",
        json={"name": NAME, "spec": channel_spec(stack), "target_state": "RUNNING"},
        timeout=10,
    )
    assert created.status_code == 201, created.text
    wait_for_state(stack, NAME, "RUNNING", 180)
    assert len(consume_all(stack.kafka, SINK, total, timeout=120)) == total
    group = f"sluice-{NAME}"
    live_offsets = wait_until(
        lambda: (o := committed_offsets(stack.kafka, group, SOURCE, PARTITIONS)) == [50, 50] and o,
        60,
        what="the live channel's consumer group at the end of the source",
    )

    # The window holds exactly the middle group: [its first stamp, its last stamp + 1 ms).
    inside = [seq for seq in range(total) if BEFORE <= seq < BEFORE + INSIDE]
    window = {"start": rfc3339(stamps[inside[0]]), "end": rfc3339(stamps[inside[-1]] + 1)}
    started = time.monotonic()
    answer = http.post(
        f"{stack.api}/channels/{NAME}/replays/",
        json={"window": window, "confirm": True},
        timeout=10,
    )
    assert answer.status_code == 201, answer.text
    run_id = answer.json()["id"]
    url = f"{stack.api}/channels/{NAME}/replays/{run_id}/"
    run = finished_run(http, url, 120)
    took = time.monotonic() - started
    assert run["state"] == "SUCCEEDED", run
    assert run["expected"] == INSIDE and run["events_read"] == INSIDE, run
    assert run["progress"] == 1.0 and run["events_written"] == INSIDE, run
    assert run["started_at"] and run["finished_at"]

    records = [json.loads(v) for v in consume_all(stack.kafka, SINK, total + INSIDE, 60)]
    replayed = [r for r in records if r.get("sluicereplay") == run_id]
    assert len(records) == total + INSIDE, "the window's events once more, nothing else"
    assert sorted(r["data"]["seq"] for r in replayed) == inside
    assert all(r["sluicerun"] == "replay" for r in replayed)
    # Same ids as the first delivery (topic/partition/offset): a consumer can dedupe.
    first = {r["id"]: r["data"]["seq"] for r in records if "sluicereplay" not in r}
    assert all(first[r["id"]] == r["data"]["seq"] for r in replayed)

    # The live channel ran on, untouched: its group did not move back, new events flow.
    assert committed_offsets(stack.kafka, group, SOURCE, PARTITIONS) == live_offsets
    producer = Producer({"bootstrap.servers": stack.kafka})
    producer.produce(SOURCE, json.dumps({"seq": 1000}).encode(), partition=0)
    assert producer.flush(30) == 0
    later = [json.loads(v) for v in consume_all(stack.kafka, SINK, total + INSIDE + 1, 60)]
    assert [r["data"]["seq"] for r in later if "sluicereplay" not in r][-1] == 1000

    # A finished run leaves no connector checkpoint behind.
    wait_until(lambda: not run_checkpoints(stack), 120, what="the run's checkpoint removed")

    # Cancel: a replay of every offset, cancelled at once.
    offsets = [{"topic": SOURCE, "partition": p, "offset": 0} for p in range(PARTITIONS)]
    ends = [{"topic": SOURCE, "partition": p, "offset": 50} for p in range(PARTITIONS)]
    answer = http.post(
        f"{stack.api}/channels/{NAME}/replays/",
        json={"start_offsets": offsets, "end_offsets": ends, "confirm": True},
        timeout=10,
    )
    assert answer.status_code == 201, answer.text
    assert answer.json()["expected"] == total
    cancel_url = f"{stack.api}/channels/{NAME}/replays/{answer.json()['id']}/"
    cancelled = http.delete(cancel_url, timeout=10)
    assert cancelled.status_code == 200, cancelled.text
    assert cancelled.json()["state"] == "CANCELLED"
    assert http.delete(cancel_url, timeout=10).status_code == 409
    wait_until(lambda: not run_checkpoints(stack), 60, what="the cancelled run removed")
    assert http.get(cancel_url, timeout=10).json()["state"] == "CANCELLED"
    listed = http.get(f"{stack.api}/channels/{NAME}/replays/", timeout=10).json()
    assert [r["state"] for r in listed["results"]] == ["CANCELLED", "SUCCEEDED"]
    print(f"replay of {INSIDE} events: {took:.1f} s from request to SUCCEEDED")
    if os.environ.get("SLUICE_REPLAY_SHOTS"):  # screenshots of the replay panel, on request
        shot(stack, "replay-panel")
    assert http.post(f"{stack.api}/channels/{NAME}/stop", timeout=10).status_code == 202
