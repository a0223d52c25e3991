"""The browser tests run against the whole stack as real processes (see tests/support/stack.py).

The stack here is module-scoped, so it is stopped before tests/integration starts its own:
the two are never up at the same time on a small machine.
"""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.support.processes import REPO_ROOT
from tests.support.stack import Stack, running_stack

pytestmark = pytest.mark.integration

CHROMIUM = Path("/usr/bin/chromium")
FRONTEND = REPO_ROOT / "frontend"


@pytest.fixture(scope="module")
def stack(
    redis_url: str,
    kafka_bootstrap: str,
    tmp_path_factory: pytest.TempPathFactory,
    artifacts_dir: Path,
) -> Iterator[Stack]:
    # A Redis database of its own, never tests/integration's (the session shares the server).
    with running_stack(
        redis_url=redis_url.rsplit("/", 1)[0] + "/1",
        kafka=kafka_bootstrap,
        var=tmp_path_factory.mktemp("var-e2e"),
        log_dir=artifacts_dir / "e2e" / "stack",
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
