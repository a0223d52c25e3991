"""Contender (b): a plain confluent-kafka consume → filter → wrap → produce loop in Python.

``python -m bench.loop --bootstrap B --source T --sink T --max-events N --max-seconds S``
prints one JSON line: events consumed, events produced, seconds. Bounded by both limits, and
it stops after 5 s without input.
"""

from __future__ import annotations

import argparse
import json
import time
import uuid

from confluent_kafka import Consumer, Producer

from bench.workload import selected


def wrap(message, payload: dict) -> bytes:
    topic, partition, offset = message.topic(), message.partition(), message.offset()
    return json.dumps(
        {
            "specversion": "1.0",
            "id": f"{topic}/{partition}/{offset}",
            "source": f"kafka://{topic}",
            "type": "sluice.kafka.record",
            "time": message.timestamp()[1],
            "datacontenttype": "application/json",
            "data": payload,
        }
    ).encode()


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--bootstrap", required=True)
    parser.add_argument("--source", required=True)
    parser.add_argument("--sink", required=True)
    parser.add_argument("--max-events", type=int, required=True)
    parser.add_argument("--max-seconds", type=float, required=True)
    args = parser.parse_args()

    consumer = Consumer(
        {
            "bootstrap.servers": args.bootstrap,
            "group.id": f"bench-loop-{uuid.uuid4().hex[:8]}",
            "auto.offset.reset": "earliest",
            "enable.auto.commit": False,
        }
    )
    producer = Producer({"bootstrap.servers": args.bootstrap, "linger.ms": 5})
    consumer.subscribe([args.source])
    consumed = produced = 0
    started = last_input = time.perf_counter()
    print(json.dumps({"ready": True}), flush=True)
    while consumed < args.max_events and time.perf_counter() - started < args.max_seconds:
        messages = consumer.consume(1000, 0.2)
        if not messages:
            if consumed and time.perf_counter() - last_input > 5:
                break
            continue
        last_input = time.perf_counter()
        for message in messages:
            if message.error():
                continue
            consumed += 1
            payload = json.loads(message.value())
            if selected(payload):
                producer.produce(args.sink, wrap(message, payload), key=str(consumed).encode())
                produced += 1
        producer.poll(0)
    producer.flush(30)
    seconds = last_input - started  # up to the last batch read, not the idle wait after it
    consumer.close()
    print(json.dumps({"rows_in": consumed, "rows_out": produced, "seconds": seconds}), flush=True)


if __name__ == "__main__":
    main()
