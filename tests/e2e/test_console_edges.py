"""The console's rough edges (issue 17) in real headless Chromium (frontend/e2e/edges.e2e.mjs)
against the stack: a Kafka channel with a preview sink runs a topic of 10 records to its end
and stops, and the script checks what the channel page, the builder, the Audit page and a
not-found page say. Then, over the API, an offset past the partition's end is refused with
400 and its field path by the real Kafka's end offsets. Screenshots: test-artifacts/edges/."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest

from tests.integration.test_walking_skeleton import make_topic, produce
from tests.support.processes import REPO_ROOT
from tests.support.stack import Stack

pytestmark = pytest.mark.integration

SCRIPT = REPO_ROOT / "frontend" / "e2e" / "edges.e2e.mjs"
CHAIN, KAFKA_CHANNEL, TOPIC, EVENTS = "edges-chain", "edges-kafka", "edges-in", 10

CHAIN_SPEC = {
    "source": {"type": "generator", "config": {"rate": 5}},
    "transforms": [{"type": "filter", "config": {"pattern": {"region": ["eu-west"]}}}],
    "sink": {"type": "preview", "config": {}},
}


def kafka_to_preview(bootstrap: str) -> dict:
    return {
        "source": {
            "type": "kafka",
            "config": {
                "bootstrap_servers": bootstrap,
                "topics": [TOPIC],
                "starting_offsets": "earliest",
                "format": "json",
            },
        },
        "transforms": [],
        "sink": {"type": "preview", "config": {}},
    }


@pytest.mark.timeout(600)
def test_the_console_edges_in_the_browser(
    stack: Stack, browser_tools: dict[str, str], artifacts_dir: Path
) -> None:
    shots = artifacts_dir / "edges"
    shots.mkdir(parents=True, exist_ok=True)
    http = stack.session()
    make_topic(stack.kafka, TOPIC, 1)
    produce(
        stack.kafka,
        TOPIC,
        [json.dumps({"seq": seq, "region": "eu-west"}).encode() for seq in range(EVENTS)],
    )
    for name, spec in ((CHAIN, CHAIN_SPEC), (KAFKA_CHANNEL, kafka_to_preview(stack.kafka))):
        created = http.post(f"{stack.api}/channels/", json={"name": name, "spec": spec}, timeout=10)
        assert created.status_code == 201, created.text

    env = {
        **os.environ,
        "SLUICE_URL": stack.base_url,
        "SLUICE_USER": "admin",
        "SLUICE_PASSWORD": stack.env["SLUICE_ADMIN_PASSWORD"],
        "SHOTS": str(shots),
        "CHROMIUM": browser_tools["chromium"],
        "CHAIN": CHAIN,
        "KAFKA_CHANNEL": KAFKA_CHANNEL,
        "EVENTS": str(EVENTS),
    }
    result = subprocess.run(
        [browser_tools["node"], str(SCRIPT)],
        cwd=REPO_ROOT / "frontend",
        env=env,
        capture_output=True,
        text=True,
        timeout=540,
        check=False,
    )
    (shots / "e2e-edges.log").write_text(result.stdout + result.stderr, encoding="utf-8")
    assert result.returncode == 0, f"{result.stdout}\n{result.stderr}\n{stack.logs()}"
    assert "FAILED" not in result.stdout
    for shot in ("channel-not-found", "builder-name-rule", "audit", "channel-running"):
        assert (shots / f"{shot}.png").stat().st_size > 5_000

    # Over the API, with the real Kafka's end offset (10): past it is a 400 naming the field.
    url = f"{stack.api}/channels/{KAFKA_CHANNEL}/offsets"
    past = {"partition": {"topic": TOPIC, "partition": 0}, "offset": {"offset": EVENTS + 1}}
    refused = http.patch(url, json={"offsets": [past]}, timeout=30)
    assert refused.status_code == 400, refused.text
    assert list(refused.json()) == ["offsets[0].offset.offset"]
    at_end = {**past, "offset": {"offset": EVENTS}}
    assert http.patch(url, json={"offsets": [at_end]}, timeout=30).status_code == 200

    for name in (CHAIN, KAFKA_CHANNEL):
        http.delete(f"{stack.api}/channels/{name}/", timeout=10)
