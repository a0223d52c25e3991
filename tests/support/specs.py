"""Channel specs shared by the real-stack tests."""

from __future__ import annotations

from typing import Any


def kafka_passthrough(
    bootstrap: str, source: str, sink: str, sink_format: str = "cloudevents"
) -> dict[str, Any]:
    """Kafka (plain JSON, from the earliest offset) → no transforms → Kafka (CloudEvents, or
    ``sink_format``: with ``json`` the channel copies records as they are,
    :mod:`pipelines.passthrough`)."""
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
            "config": {"bootstrap_servers": bootstrap, "topic": sink, "format": sink_format},
        },
    }
