"""The shared conformance vectors (``../shared/conformance/event_patterns.json``).

Every path that evaluates event patterns must pass them, so a missing file is an error,
never a skip: a run without the vectors would prove nothing about pattern semantics.
"""

from __future__ import annotations

import json
import os
from functools import cache
from pathlib import Path
from typing import Any

from tests.support.processes import REPO_ROOT

CONFORMANCE_FILE = Path(
    os.environ.get(
        "SLUICE_CONFORMANCE_FILE",
        REPO_ROOT.parent / "shared" / "conformance" / "event_patterns.json",
    )
)


@cache
def load_conformance() -> dict[str, Any]:
    """The parsed conformance file; raises when it is missing or has no vectors."""
    if not CONFORMANCE_FILE.exists():
        raise FileNotFoundError(
            f"conformance vectors not found at {CONFORMANCE_FILE}: the shared/ folder must sit "
            "beside the repository, or SLUICE_CONFORMANCE_FILE must name the file"
        )
    data = json.loads(CONFORMANCE_FILE.read_text(encoding="utf-8"))
    if not data.get("vectors") or not data.get("invalid_patterns"):
        raise ValueError(f"{CONFORMANCE_FILE} holds no vectors or no invalid patterns")
    return data
