"""The order stream the fault and topology tests send: numbered JSON events, one in three an
order, and the filter pattern that selects the orders."""

from __future__ import annotations

import json

from confluent_kafka import Producer

PATTERN = {"data": {"kind": ["order"]}}


def payload(seq: int) -> bytes:
    kind = ("order", "refund", "quote")[seq % 3]
    return json.dumps({"seq": seq, "kind": kind, "amount": seq % 1000}).encode()


def selected(seq: int) -> bool:
    """Whether event ``seq`` matches :data:`PATTERN`."""
    return seq % 3 == 0


def produce_range(bootstrap: str, topic: str, start: int, stop: int, timeout: float = 120) -> None:
    """Send events ``start`` … ``stop - 1`` and wait until Kafka has taken them all."""
    producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 50, "acks": "all"})
    for seq in range(start, stop):
        producer.produce(topic, payload(seq))
        if seq % 5_000 == 0:
            producer.poll(0)
    assert producer.flush(timeout) == 0, f"Kafka did not take events {start}-{stop - 1}"
