"""Channel specs shared by the real-stack tests."""

from __future__ import annotations

from typing import Any


def kafka_passthrough(bootstrap: str, source: str, sink: str) -> dict[str, Any]:
    """Kafka (plain JSON, from the earliest offset) → no transforms → Kafka (CloudEvents)."""
    return {
        "source": {
            "type": "kafka",
            "config": {
                "bootstrap_servers": bootstrap,
                "topics": [source],
                "starting_offsets": "earliest",
                "format": "json",
            },
        },
        "transforms": [],
        "sink": {
            "type": "kafka",
            "config": {"bootstrap_servers": bootstrap, "topic": sink, "format": "cloudevents"},
        },
    }
