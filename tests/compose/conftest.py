"""The compose stack's end-to-end test (``make compose-test``, scripts/compose-test.sh).

Collected only when scripts/compose-test.sh runs it (``SLUICE_COMPOSE_TEST=1``): it needs the
stack that script builds and starts with Docker, so ``make test`` never collects it.
"""

from __future__ import annotations

import os

if os.environ.get("SLUICE_COMPOSE_TEST") != "1":
    collect_ignore_glob = ["test_*.py"]
