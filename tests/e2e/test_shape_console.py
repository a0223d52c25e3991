"""The builder knowing the shape of a channel's events, in real headless Chromium
(frontend/e2e/shape.e2e.mjs) against the stack: a registry JSON Schema subject picked as the
source's shape, a filter naming a field it does not have warned on its node, field paths
suggested in the pattern editor."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest

from tests.support.processes import REPO_ROOT
from tests.support.specs import kafka_passthrough
from tests.support.stack import Stack

pytestmark = pytest.mark.integration

CHANNEL = "shape-warning"
SUBJECT = "shape-orders-value"
PAYLOAD = {
    "type": "object",
    "properties": {"amount": {"type": "number"}, "region": {"type": "string"}},
}


def test_unknown_field_warning_and_autocompletion(
    stack: Stack, browser_tools: dict[str, str], artifacts_dir: Path
) -> None:
    shots = artifacts_dir / "e2e"
    shots.mkdir(parents=True, exist_ok=True)
    http = stack.session()
    spec = kafka_passthrough(stack.kafka, "shape-in", "shape-out")
    spec["transforms"] = [
        {"type": "filter", "config": {"pattern": {"data": {"amout": [{"numeric": [">", 1]}]}}}}
    ]
    created = http.post(f"{stack.api}/channels/", json={"name": CHANNEL, "spec": spec}, timeout=10)
    assert created.status_code == 201, created.text
    registered = http.post(
        f"{stack.base_url}/schema-registry/subjects/{SUBJECT}/versions",
        json={"schemaType": "JSON", "schema": json.dumps(PAYLOAD)},
        timeout=10,
    )
    assert registered.status_code == 200, registered.text
    try:
        env = {
            **os.environ,
            "SLUICE_URL": stack.base_url,
            "SLUICE_USER": "admin",
            "SLUICE_PASSWORD": stack.env["SLUICE_ADMIN_PASSWORD"],
            "CHANNEL": CHANNEL,
            "SUBJECT": SUBJECT,
            "SHOTS": str(shots),
            "CHROMIUM": browser_tools["chromium"],
        }
        result = subprocess.run(
            [browser_tools["node"], str(REPO_ROOT / "frontend" / "e2e" / "shape.e2e.mjs")],
            cwd=REPO_ROOT / "frontend",
            env=env,
            capture_output=True,
            text=True,
            timeout=180,
            check=False,
        )
        (shots / "e2e-shape.log").write_text(result.stdout + result.stderr, encoding="utf-8")
        assert result.returncode == 0, f"{result.stdout}\n{result.stderr}\n{stack.logs()}"
        assert "FAIL" not in result.stdout
        assert "data.amout" in result.stdout and "warning cleared" in result.stdout
        for shot in ("shape-unknown-field-warning.png", "shape-autocomplete.png"):
            assert (shots / shot).stat().st_size > 10_000
    finally:
        http.delete(f"{stack.api}/channels/{CHANNEL}/", timeout=10)
        http.delete(f"{stack.base_url}/schema-registry/subjects/{SUBJECT}", timeout=10)
