"""The console in real headless Chromium against the running stack (frontend/e2e/builder.e2e.mjs):
build a channel on the canvas, see a validation error and fix it, try picked sample events on
the pattern, save, start, watch it run, pause, resume and stop it, view its offsets, save a
second revision and open its diff against the running one; axe-core finds no serious or
critical accessibility violation on the channels list, the builder and the channel page.
frontend/e2e/bus.e2e.mjs draws a branch (a bus with two rules) and tests its rules;
frontend/e2e/workers-shot.mjs drains the runtime worker and puts it back in service;
frontend/e2e/schemas-labels.e2e.mjs registers a schema (and versions) through the Schemas page's
form and edits a channel's labels on its page.
Screenshots and axe reports land in test-artifacts/e2e/."""

from __future__ import annotations

import json
import os
import subprocess
import threading
import time
import uuid
from pathlib import Path
from typing import Any, cast

import pytest
import requests
from confluent_kafka import Consumer, Producer
from confluent_kafka.admin import AdminClient, NewTopic

from tests.e2e.conftest import NodeScript
from tests.support.processes import REPO_ROOT, wait_until
from tests.support.stack import Stack

pytestmark = pytest.mark.integration

SCRIPT = REPO_ROOT / "frontend" / "e2e" / "builder.e2e.mjs"
REGIONS = ("eu-west", "us-east", "eu-central", "ap-south")


def run_browser(
    stack: Stack, tools: dict[str, str], shots: Path, flow: str, channel: str, **extra: str
) -> None:
    env = {
        **os.environ,
        "SLUICE_URL": stack.base_url,
        "SLUICE_USER": "admin",
        "SLUICE_PASSWORD": stack.env["SLUICE_ADMIN_PASSWORD"],
        "E2E_ARTIFACTS": str(shots),
        "E2E_FLOW": flow,
        "E2E_CHANNEL": channel,
        "CHROMIUM": tools["chromium"],
        **extra,
    }
    result = subprocess.run(
        [tools["node"], str(SCRIPT)],
        cwd=REPO_ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=540,
        check=False,
    )
    (shots / f"e2e-{flow}.log").write_text(result.stdout + result.stderr, encoding="utf-8")
    assert result.returncode == 0, (
        f"{result.stdout}\n{result.stderr}\nscreenshots in {shots}\n{stack.logs()}"
    )
    assert (shots / f"builder-{flow}.png").stat().st_size > 0
    assert (shots / f"channel-{flow}.png").stat().st_size > 0
    assert (shots / f"revisions-{flow}.png").stat().st_size > 0
    for page in ("channels", "builder", "channel", "channel-diff"):
        report = json.loads((shots / f"axe-{page}-{flow}.json").read_text(encoding="utf-8"))
        serious = [v for v in report if v["impact"] in ("serious", "critical")]
        assert serious == [], f"axe on {page}: {serious}"


def assert_operated_by_admin(stack: Stack, channel: str) -> None:
    http = stack.session()
    status = http.get(f"{stack.api}/channels/{channel}/status", timeout=10).json()
    assert status["target_state"] == "STOPPED"
    # Revision 2 deployed from the channel page's deploy bar, then stopped.
    assert (status["revision"], status["latest_revision"], status["drift"]) == (2, 2, False)
    revisions = http.get(f"{stack.api}/channels/{channel}/revisions/", timeout=10).json()
    assert [(r["number"], r["created_by"]) for r in revisions["results"]] == [
        (2, "admin"),
        (1, "admin"),
    ]
    events = http.get(f"{stack.api}/channels/{channel}/lifecycle/", timeout=10).json()["results"]
    by_admin = {event["to_state"] for event in events if event["actor"] == "user:admin"}
    assert {"RUNNING", "PAUSED", "STOPPED"} <= by_admin, events


@pytest.fixture
def shots(artifacts_dir: Path) -> Path:
    path = artifacts_dir / "e2e"
    path.mkdir(parents=True, exist_ok=True)
    return path


@pytest.mark.timeout(600)
def test_generator_filter_preview_in_the_browser(
    stack: Stack, browser_tools: dict[str, str], shots: Path
) -> None:
    run_browser(stack, browser_tools, shots, "generator", "e2e-generator")
    assert_operated_by_admin(stack, "e2e-generator")


class Trickle:
    """Produces plain JSON orders to a topic, a few a second, until stopped."""

    def __init__(self, bootstrap: str, topic: str) -> None:
        self.bootstrap, self.topic = bootstrap, topic
        self.stopped = threading.Event()
        self.sent = 0
        self.thread = threading.Thread(target=self.run, daemon=True)

    def run(self) -> None:
        producer = Producer({"bootstrap.servers": self.bootstrap, "linger.ms": 20})
        while not self.stopped.is_set():
            for _ in range(10):
                order = {"seq": self.sent, "region": REGIONS[self.sent % len(REGIONS)]}
                producer.produce(self.topic, json.dumps(order).encode())
                self.sent += 1
            producer.poll(0)
            time.sleep(0.5)
        producer.flush(30)

    def __enter__(self) -> Trickle:
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stopped.set()
        self.thread.join(60)


def read_topic(bootstrap: str, topic: str, seconds: float) -> list[dict]:
    consumer = Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": f"e2e-check-{uuid.uuid4().hex}",
            "auto.offset.reset": "earliest",
            "enable.auto.commit": False,
        }
    )
    consumer.subscribe([topic])
    values: list[dict] = []
    deadline = time.monotonic() + seconds
    try:
        while time.monotonic() < deadline:
            message = consumer.poll(0.5)
            if message is not None and not message.error():
                values.append(json.loads(message.value()))
    finally:
        consumer.close()
    return values


@pytest.mark.timeout(600)
def test_kafka_filter_kafka_in_the_browser(
    stack: Stack, browser_tools: dict[str, str], shots: Path
) -> None:
    source, sink = "e2e-orders", "e2e-orders-eu"
    admin = AdminClient({"bootstrap.servers": stack.kafka})
    for future in admin.create_topics([NewTopic(source, 2, 1), NewTopic(sink, 1, 1)]).values():
        future.result(timeout=30)

    with Trickle(stack.kafka, source) as trickle:
        run_browser(
            stack,
            browser_tools,
            shots,
            "kafka",
            "e2e-kafka",
            E2E_KAFKA=stack.kafka,
            E2E_TOPIC_IN=source,
            E2E_TOPIC_OUT=sink,
        )
    assert_operated_by_admin(stack, "e2e-kafka")

    written = read_topic(stack.kafka, sink, 10)
    assert written, f"nothing reached {sink} ({trickle.sent} orders sent)"
    # The json sink writes each event's data: the orders that passed the filter, as sent.
    assert all(order["region"].startswith("eu-") for order in written), written[:5]


@pytest.mark.timeout(300)
def test_an_editor_issues_an_ingestion_token_in_the_browser(
    stack: Stack, browser_tools: dict[str, str], shots: Path
) -> None:
    """The channel page's HTTP ingestion panel: issue a token, set the rate limit; a producer
    then sends an event with that token and Kafka takes it."""
    channel = f"e2e-ingest-{uuid.uuid4().hex[:6]}"
    http = stack.session()
    created = http.post(
        f"{stack.api}/channels/",
        json={
            "name": channel,
            "spec": {
                "source": {"type": "http", "config": {}},
                "transforms": [],
                "sink": {"type": "preview", "config": {}},
            },
        },
        timeout=30,
    )
    assert created.status_code == 201, created.text
    env = {
        **os.environ,
        "SLUICE_URL": stack.base_url,
        "SLUICE_USER": "admin",
        "SLUICE_PASSWORD": stack.env["SLUICE_ADMIN_PASSWORD"],
        "E2E_ARTIFACTS": str(shots),
        "E2E_CHANNEL": channel,
        "CHROMIUM": browser_tools["chromium"],
    }
    result = subprocess.run(
        [browser_tools["node"], str(REPO_ROOT / "frontend" / "e2e" / "ingest.e2e.mjs")],
        cwd=REPO_ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=240,
        check=False,
    )
    (shots / "e2e-ingest.log").write_text(result.stdout + result.stderr, encoding="utf-8")
    assert result.returncode == 0, f"{result.stdout}\n{result.stderr}\n{stack.logs()}"
    token = next(
        line.split(" ", 1)[1] for line in result.stdout.splitlines() if line.startswith("TOKEN ")
    )

    detail = http.get(f"{stack.api}/channels/{channel}/", timeout=10).json()
    assert detail["ingest_token"] == {"exists": True, "prefix": token[:8]}
    assert detail["ingest_rate_limit"] == 50
    event = {"specversion": "1.0", "id": "e2e-1", "source": "/e2e", "type": "e2e.sent"}
    sent = requests.post(
        f"{stack.api}/channels/{channel}/events",
        json=event,
        headers={
            "Authorization": f"Bearer {token}",
            "Content-Type": "application/cloudevents+json",
        },
        timeout=30,
    )
    assert sent.status_code == 202, sent.text
    assert sent.json()["accepted"] == 1


@pytest.mark.timeout(300)
def test_a_schema_registered_and_labels_edited_in_the_browser(
    stack: Stack, node_script: NodeScript, shots: Path
) -> None:
    """The Schemas page's "Register a schema" form (a new subject, then an invalid, an
    incompatible and a compatible new version) and the channel page's labels editor, each
    result checked through the API: two versions by admin, the refusals stored nothing, the
    labels saved without a new revision, both audited."""
    suffix = uuid.uuid4().hex[:6]
    channel, subject = f"e2e-labels-{suffix}", f"e2e-orders-{suffix}-value"
    http = stack.session()
    spec = {
        "source": {"type": "generator", "config": {}},
        "transforms": [],
        "sink": {"type": "preview", "config": {}},
    }
    created = http.post(f"{stack.api}/channels/", json={"name": channel, "spec": spec}, timeout=30)
    assert created.status_code == 201, created.text
    node_script(
        "schemas-labels.e2e.mjs",
        shots,
        timeout=240,
        E2E_ARTIFACTS=str(shots),
        E2E_CHANNEL=channel,
        E2E_SUBJECT=subject,
    )

    versions = http.get(f"{stack.api}/schemas/{subject}/versions", timeout=10).json()
    assert [(v["version"], v["created_by"]) for v in versions] == [(1, "admin"), (2, "admin")]
    assert [f["name"] for f in json.loads(versions[1]["schema"])["fields"]] == ["id", "region"]
    detail = http.get(f"{stack.api}/channels/{channel}/", timeout=10).json()
    assert detail["labels"] == {"team": "payments", "tier": ""}
    assert (detail["revision"], detail["target_state"]) == (1, "STOPPED")
    audit = http.get(f"{stack.api}/audit/", params={"limit": 200}, timeout=10).json()["results"]
    registered = [
        e["outcome"]
        for e in audit
        if e["action"] == "schema.register" and e["object_id"] == subject
    ]
    assert sorted(registered) == [201, 201, 409]
    assert any(e["action"] == "channel.update" and e["object_id"] == channel for e in audit)
    for width in (1440, 1024):
        for shot in ("schemas-register-refused", "schemas-register-v2", "channel-labels-saved"):
            assert (shots / f"{shot}-{width}.png").stat().st_size > 0


@pytest.mark.timeout(300)
def test_a_bus_drawn_in_the_browser(
    stack: Stack, browser_tools: dict[str, str], shots: Path
) -> None:
    """The builder's canvas forks: a second sink dragged from the filter makes two rules; the
    second gets a name and a pattern, the rules bench says which rules sample events match,
    a preview sink refused as a rule's target is marked on its node, and the saved channel is
    a bus with exactly those two rules. Started, both rules count matched events on the
    channel page (its Rules table and the pipeline's rule nodes)."""
    channel = f"e2e-bus-{uuid.uuid4().hex[:6]}"
    env = {
        **os.environ,
        "SLUICE_URL": stack.base_url,
        "SLUICE_USER": "admin",
        "SLUICE_PASSWORD": stack.env["SLUICE_ADMIN_PASSWORD"],
        "E2E_ARTIFACTS": str(shots),
        "E2E_CHANNEL": channel,
        "CHROMIUM": browser_tools["chromium"],
        "E2E_BUS_RUN": "1",
    }
    result = subprocess.run(
        [browser_tools["node"], str(REPO_ROOT / "frontend" / "e2e" / "bus.e2e.mjs")],
        cwd=REPO_ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=240,
        check=False,
    )
    (shots / "e2e-bus.log").write_text(result.stdout + result.stderr, encoding="utf-8")
    assert result.returncode == 0, f"{result.stdout}\n{result.stderr}\n{stack.logs()}"
    assert (shots / "builder-bus.png").stat().st_size > 0
    assert (shots / "channel-bus.png").stat().st_size > 0
    assert (shots / "channel-bus-running.png").stat().st_size > 0
    for page in ("builder", "channel"):
        report = json.loads((shots / f"axe-{page}-bus.json").read_text(encoding="utf-8"))
        assert [v for v in report if v["impact"] in ("serious", "critical")] == [], page

    spec = stack.session().get(f"{stack.api}/channels/{channel}/", timeout=10).json()["spec"]
    assert "sink" not in spec
    # The files sink was drawn from the generator: the EU filter is the default rule's own.
    assert spec["transforms"] == []
    rules = spec["rules"]
    assert [stage["type"] for stage in rules[0]["transforms"]] == ["filter"]
    assert [(rule["name"], rule["enabled"]) for rule in rules] == [
        ("default", True),
        ("big-orders", True),
    ]
    assert rules[0]["pattern"] is None
    assert rules[1]["pattern"] == {"data": {"amount": [{"numeric": [">", 100]}]}}
    assert [[sink["type"] for sink in rule["sinks"]] for rule in rules] == [["files"], ["files"]]
    assert rules[1]["sinks"][0]["config"]["path"] == "e2e-bus/big-orders"


@pytest.mark.timeout(300)
def test_a_worker_drained_and_put_back_in_service_in_the_browser(
    stack: Stack, browser_tools: dict[str, str], shots: Path
) -> None:
    """The Workers page's Drain and Back in service buttons (frontend/e2e/workers-shot.mjs) on
    the stack's only runtime worker: with no other worker its channels stay where they run."""
    http = stack.session()

    def workers() -> list[str]:
        found = http.get(f"{stack.api}/workers/", timeout=10).json()["results"]
        return [w["worker_id"] for w in found]

    [worker] = cast(list[str], wait_until(workers, 60, what="the runtime worker registered"))
    env = {
        **os.environ,
        "SLUICE_URL": stack.base_url,
        "SLUICE_USER": "admin",
        "SLUICE_PASSWORD": stack.env["SLUICE_ADMIN_PASSWORD"],
        "CHROMIUM": browser_tools["chromium"],
    }

    def browser(mode: str) -> str:
        result = subprocess.run(
            [
                browser_tools["node"],
                "e2e/workers-shot.mjs",
                mode,
                worker,
                str(shots / f"workers-{mode}.png"),
            ],
            cwd=REPO_ROOT / "frontend",
            env=env,
            capture_output=True,
            text=True,
            timeout=120,
            check=False,
        )
        assert result.returncode == 0, f"{result.stdout}\n{result.stderr}"
        return result.stdout.strip().splitlines()[-1]

    def capacity() -> dict[str, Any]:
        """What the Workers page shows of its capacity, as the API says it."""
        found = http.get(f"{stack.api}/workers/{worker}/", timeout=10).json()["capacity"]
        return {k: v for k, v in found.items() if k in ("cores", "cores_held", "slots")}

    # Its capacity as its own record said (the runtime group places channels), as shown.
    for _ in range(3):
        before = wait_until(lambda: capacity().get("slots") and capacity(), 60, what="capacity")
        cells = json.loads(browser("cells"))
        if capacity() == before:  # (else it changed meanwhile: looked at again)
            break
    assert cells["cores"] == f"{before['cores_held']} / {before['cores']}", (cells, before)
    assert cells["slots"] == str(len(before["slots"])), (cells, before)
    try:
        drained = json.loads(browser("drain"))
        assert drained["service"] in ("draining", "drained"), drained
        assert drained["buttons"] == ["Back in service", "Forget (disabled)"], drained
        assert drained["filtered"] is True  # gone under "In service", back under "All"
        row = http.get(f"{stack.api}/workers/{worker}/", timeout=10).json()
        assert (
            row["service"] in ("DRAINING", "DRAINED") and row["service_changed_by"] == "user:admin"
        )

        back = json.loads(browser("undrain"))
        assert back["service"] == "in service" and back["buttons"][0] == "Drain", back
        assert (
            http.get(f"{stack.api}/workers/{worker}/", timeout=10).json()["service"] == "IN_SERVICE"
        )
        audit = http.get(f"{stack.api}/audit/?object_type=worker&limit=10", timeout=10).json()
        actions = [(row["action"], row["outcome"]) for row in audit["results"]]
        assert ("worker.drain", 202) in actions and ("worker.undrain", 202) in actions, actions
    finally:
        http.post(f"{stack.api}/workers/{worker}/undrain", timeout=10)
