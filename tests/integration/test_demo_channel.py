"""The seeded demo channel on the real stack: generator → filter → attributes → live tail."""

from __future__ import annotations

import pytest

from console.demo import DEMO_CHANNEL
from tests.integration.conftest import Stack, manage
from tests.integration.test_walking_skeleton import wait_for_state
from tests.support.processes import wait_until

pytestmark = pytest.mark.integration


def test_demo_channel_shows_events_in_the_live_tail(stack: Stack):
    manage(stack.env, "seed_demo", "--always")  # other tests' channels share the stack
    http = stack.session()
    assert http.post(f"{stack.api}/channels/{DEMO_CHANNEL}/start", timeout=10).status_code == 202
    wait_for_state(stack, DEMO_CHANNEL, "RUNNING", 180)

    def tail():
        events = http.get(f"{stack.api}/channels/{DEMO_CHANNEL}/preview", timeout=5).json()
        return events["events"] if len(events["events"]) >= 3 else None

    events = wait_until(tail, 90, interval=1, what="events in the demo's live tail")
    for event in events:
        assert event["type"] == "demo.order.eu"
        assert event["data"]["region"].startswith("eu-")
        assert event["data"]["amount"] > 100
        assert event["subject"] == str(event["data"]["order_id"])
    ids = [event["id"] for event in events]
    assert len(ids) == len(set(ids))

    def single_task_progressing():
        status = http.get(f"{stack.api}/channels/{DEMO_CHANNEL}/status", timeout=5).json()
        tasks = status["tasks"]
        progressing = len(tasks) == 1 and (tasks[0]["offset"] or 0) > 0
        return status if status["state"] == "RUNNING" and progressing else None

    status = wait_until(single_task_progressing, 30, what="the demo's one task to report offsets")
    assert status["tasks"][0]["topic"] is None, "a generator runs as a single task"

    assert http.post(f"{stack.api}/channels/{DEMO_CHANNEL}/stop", timeout=10).status_code == 202
    wait_for_state(stack, DEMO_CHANNEL, "STOPPED", 60)
