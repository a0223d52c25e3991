"""Issue 30's words and layout in real headless Chromium (frontend/e2e/words.e2e.mjs): an
unknown channel's page makes one request; the API docs lead back; names stay whole at 1,024
and 1,440 px, the builder's canvas keeps room; typing in a stage's form logs no console
error; bulk start and bulk delete say what they did and will do; a paused channel offers
Resume, not Start. Screenshots in test-artifacts/e2e/words-*.png."""

from __future__ import annotations

from pathlib import Path

import pytest

from console.demo import DEMO_SPEC
from tests.e2e.conftest import NodeScript
from tests.support.processes import wait_until
from tests.support.stack import Stack

pytestmark = pytest.mark.integration

RUNNING = "orders-eu-west-1-high-value-payments"
STOPPED = "orders-us-east-2-refunds-and-chargebacks"


@pytest.mark.timeout(420)
def test_the_consoles_words_and_layout(
    stack: Stack, node_script: NodeScript, artifacts_dir: Path
) -> None:
    shots = artifacts_dir / "e2e"
    shots.mkdir(parents=True, exist_ok=True)
    http = stack.session()
    for name in (RUNNING, STOPPED):
        created = http.post(
            f"{stack.api}/channels/",
            json={"name": name, "spec": DEMO_SPEC, "description": "A generator into a preview."},
            timeout=10,
        )
        assert created.status_code == 201, created.text
    assert http.post(f"{stack.api}/channels/{RUNNING}/start", timeout=10).status_code == 202
    wait_until(
        lambda: (
            http.get(f"{stack.api}/channels/{RUNNING}/status", timeout=10).json()["state"]
            == "RUNNING"
        ),
        timeout=120,
        what=f"{RUNNING} runs",
    )
    try:
        out = node_script(
            "words.e2e.mjs", shots, timeout=360, RUNNING_NAME=RUNNING, STOPPED_NAME=STOPPED
        )
        assert "1 started, 1 already running." in out
        for shot in ("channels-1024", "channels-1440", "builder-1024", "builder-1440"):
            assert (shots / f"words-{shot}.png").stat().st_size > 10_000
        # The bulk start started the stopped one; the running one was left as it was.
        states = {
            name: http.get(f"{stack.api}/channels/{name}/status", timeout=10).json()
            for name in (RUNNING, STOPPED)
        }
        assert states[STOPPED]["target_state"] == "RUNNING"
        assert states[RUNNING]["target_state"] == "PAUSED"  # paused in the browser
    finally:
        for name in (RUNNING, STOPPED):
            http.post(f"{stack.api}/channels/{name}/stop", timeout=10)
            http.delete(f"{stack.api}/channels/{name}/", timeout=30)
