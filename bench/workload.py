"""The benchmark's events and pattern, shared by every contender."""

from __future__ import annotations

import json
import random
import time

PATTERN = {
    "data": {
        "amount": [{"numeric": [">", 100]}],
        "region": [{"prefix": "eu-"}],
        "status": [{"anything-but": ["cancelled", "test"]}],
    }
}
"""numeric, prefix and anything-but, as the issue asks; selects about 14 % of the events."""

REGIONS = ("eu-west-1", "eu-central-1", "us-east-1", "us-west-2", "ap-south-1")
STATUSES = ("placed", "paid", "shipped", "cancelled", "test")
EVENT_BYTES = 500


def make_event(seq: int, rng: random.Random, produced_at_ms: int | None = None) -> bytes:
    """A JSON order event of about :data:`EVENT_BYTES` bytes."""
    event = {
        "seq": seq,
        "produced_at_ms": produced_at_ms if produced_at_ms is not None else int(time.time() * 1000),
        "amount": round(rng.uniform(0, 250), 2),
        "region": rng.choice(REGIONS),
        "status": rng.choice(STATUSES),
        "customer": f"customer-{rng.randrange(100_000):06d}",
        "note": "",
    }
    size = len(json.dumps(event, separators=(",", ":")))
    event["note"] = "x" * max(EVENT_BYTES - size, 0)
    return json.dumps(event, separators=(",", ":")).encode()


def selected(payload: dict) -> bool:
    """The pattern in plain Python (what the confluent-kafka loop runs per event)."""
    return (
        payload["amount"] > 100
        and payload["region"].startswith("eu-")
        and payload["status"] not in ("cancelled", "test")
    )
