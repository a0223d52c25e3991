"""The browser tests run against the whole stack as real processes (see tests/support/stack.py).

The stack here is module-scoped, so it is stopped before tests/integration starts its own:
the two are never up at the same time on a small machine. Its console signs in through a real
Keycloak too (single sign-on, tests/support/keycloak.py), started first and in the background:
the stack starts while Keycloak does, and only the sign-on tests wait for it.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Protocol

import pytest

from tests.support.keycloak import Keycloak, start_keycloak
from tests.support.processes import REPO_ROOT, free_port
from tests.support.stack import Stack, running_stack

pytestmark = pytest.mark.integration

CHROMIUM = Path("/usr/bin/chromium")
FRONTEND = REPO_ROOT / "frontend"


@pytest.fixture(scope="session")
def console_port() -> int:
    """The browser tests' console's port, chosen before it starts: Keycloak must know it."""
    return free_port()


@pytest.fixture(scope="session")
def keycloak(
    console_port: int, tmp_path_factory: pytest.TempPathFactory, artifacts_dir: Path
) -> Iterator[Keycloak]:
    """Keycloak for the console's single sign-on, starting (not yet ready: wait_ready())."""
    provider = start_keycloak(
        tmp_path_factory.mktemp("keycloak"),
        artifacts_dir / "e2e" / "keycloak",
        [f"http://127.0.0.1:{console_port}"],
    )
    try:
        yield provider
    finally:
        provider.service.stop()


@pytest.fixture(scope="session")
def stack(
    keycloak: Keycloak,  # first: it starts while Redis, Kafka and the stack do
    console_port: int,
    redis_url: str,
    kafka_bootstrap: str,
    tmp_path_factory: pytest.TempPathFactory,
    artifacts_dir: Path,
) -> Iterator[Stack]:
    # One stack for every browser test, as tests/integration share theirs: a stack's start
    # (web, Celery, runtime workers, warm Spark drivers) costs about 20 s of both cores, and
    # the tests use channels of their own names. A Redis database of its own, never
    # tests/integration's (the session shares the server).
    with running_stack(
        redis_url=redis_url.rsplit("/", 1)[0] + "/1",
        kafka=kafka_bootstrap,
        var=tmp_path_factory.mktemp("var-e2e"),
        log_dir=artifacts_dir / "e2e" / "stack",
        port=console_port,
        extra_env=keycloak.console_env(),
    ) as stack:
        yield stack


@pytest.fixture(scope="session")
def browser_tools() -> dict[str, str]:
    """What the browser tests need, or a failure saying how to get it (never a silent skip)."""
    node = shutil.which("node")
    missing = []
    if node is None:
        missing.append("node (Node.js >= 20.19)")
    if not CHROMIUM.exists():
        missing.append(f"{CHROMIUM} (Debian's chromium: scripts/ensure-system.sh installs it)")
    if not (FRONTEND / "node_modules" / "playwright-core").is_dir():
        missing.append("frontend/node_modules (bash scripts/frontend.sh runs npm ci)")
    if not (FRONTEND / "dist" / "index.html").is_file():
        missing.append("frontend/dist (bash scripts/frontend.sh builds it)")
    if missing:
        pytest.fail("the browser tests need: " + "; ".join(missing))
    return {"node": node or "node", "chromium": str(CHROMIUM)}


class NodeScript(Protocol):
    def __call__(self, script: str, shots: Path, *, timeout: float = 180, **env: str) -> str: ...


@pytest.fixture
def node_script(stack: Stack, browser_tools: dict[str, str]) -> NodeScript:
    """Runs one of ``frontend/e2e/*.mjs`` in headless Chromium against the stack, as admin:
    ``node_script("history.e2e.mjs", shots, CHANNEL=name)`` answers its stdout.

    The script is told ``SLUICE_URL``, ``SLUICE_USER``, ``SLUICE_PASSWORD``, ``CHROMIUM``,
    ``SHOTS`` (where its screenshots go) and the keywords; its output is kept in
    ``shots/e2e-<script's first name>.log``. Fails, with that output and the stack's logs,
    unless it exits 0 without printing FAIL."""

    def run(script: str, shots: Path, *, timeout: float = 180, **env: str) -> str:
        result = subprocess.run(
            [browser_tools["node"], str(FRONTEND / "e2e" / script)],
            cwd=FRONTEND,
            env={
                **os.environ,
                "SLUICE_URL": stack.base_url,
                "SLUICE_USER": "admin",
                "SLUICE_PASSWORD": stack.env["SLUICE_ADMIN_PASSWORD"],
                "CHROMIUM": browser_tools["chromium"],
                "SHOTS": str(shots),
                **env,
            },
            capture_output=True,
            text=True,
            timeout=timeout,
            check=False,
        )
        log = shots / f"e2e-{script.split('.', 1)[0]}.log"
        log.write_text(result.stdout + result.stderr, encoding="utf-8")
        assert result.returncode == 0, f"{result.stdout}\n{result.stderr}\n{stack.logs()}"
        assert "FAIL" not in result.stdout, f"{result.stdout}\n{stack.logs()}"
        return result.stdout

    return run
