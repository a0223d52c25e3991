"""``python -m bench.replay``: a replay's throughput beside the live channel's (issue 16).

On the real stack (Redis, Kafka, web, Celery worker and beat, one runtime worker, the
production reconcile interval of 2 s; :func:`bench.control.live_stack`), a Kafka → Kafka
channel (2 source partitions, no transform, ``format: cloudevents`` sink) and ``--events``
JSON events per phase:

1. **live** - the channel stopped, ``--events`` events produced, the channel started: the
   time from the start request until its consumer group committed the end of the source
   (the driver is warm: a first start, not measured, paid for the cold one);
2. **replay** - a replay of phase 1's events (by offsets) alone: the time from the request
   until the run is ``SUCCEEDED``;
3. **live during a replay** - as 1, with a replay of phase 1's events asked for at the same
   moment.

Figures: replay throughput / live throughput (target ≥ 0.8) and live throughput during a
replay / alone (target ≥ 0.9). Both include what a user waits for: a query's start, and for
a run the control loop's pass (at most one reconcile interval). Saved in
``bench-results/replay.json``.
"""

from __future__ import annotations

import argparse
import json
import tempfile
import time
from pathlib import Path
from typing import Any

from confluent_kafka import Consumer, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

from bench.control import RESULTS_DIR, live_stack

SOURCE, SINK, NAME = "bench-replay-in", "bench-replay-out", "bench-replay"
PARTITIONS = 2


def make_topic(bootstrap: str, name: str, partitions: int) -> None:
    admin = AdminClient({"bootstrap.servers": bootstrap})
    for future in admin.create_topics([NewTopic(name, partitions, 1)]).values():
        future.result(30)


def produce(bootstrap: str, count: int, first: int) -> None:
    producer = Producer(
        {"bootstrap.servers": bootstrap, "linger.ms": 50, "batch.num.messages": 10_000}
    )
    for seq in range(first, first + count):
        value = json.dumps({"seq": seq, "amount": seq % 1000, "kind": "order"}).encode()
        while True:
            try:
                producer.produce(SOURCE, value, partition=seq % PARTITIONS)
                break
            except BufferError:
                producer.poll(0.1)
        producer.poll(0)
    assert producer.flush(120) == 0


def committed(bootstrap: str) -> int:
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": f"sluice-{NAME}"})
    try:
        found = consumer.committed([TopicPartition(SOURCE, p) for p in range(PARTITIONS)], 10)
        return sum(max(tp.offset, 0) for tp in found)
    finally:
        consumer.close()


def spec(bootstrap: str) -> dict[str, Any]:
    return {
        "source": {
            "type": "kafka",
            "config": {
                "bootstrap_servers": bootstrap,
                "topics": [SOURCE],
                "starting_offsets": "earliest",
            },
        },
        "transforms": [],
        "sink": {
            "type": "kafka",
            "config": {"bootstrap_servers": bootstrap, "topic": SINK, "format": "cloudevents"},
        },
    }


class Bench:
    def __init__(self, stack: Any, events: int) -> None:
        self.stack = stack
        self.http = stack.session()
        self.events = events
        self.produced = 0

    def call(self, method: str, path: str, **kwargs: Any) -> Any:
        response = self.http.request(method, f"{self.stack.api}{path}", timeout=30, **kwargs)
        assert response.status_code < 300, response.text
        return response.json() if response.content else None

    def state(self) -> str:
        return str(self.call("GET", f"/channels/{NAME}/status")["state"])

    def stop(self) -> None:
        self.call("POST", f"/channels/{NAME}/stop")
        self.until(lambda: self.state() == "STOPPED", 120, "the channel stopped")

    def until(self, check: Any, timeout: float, what: str) -> float:
        started = time.perf_counter()
        while time.perf_counter() - started < timeout:
            if check():
                return time.perf_counter() - started
            time.sleep(0.1)
        raise TimeoutError(f"{what}\n{self.stack.logs()}")

    def more_events(self) -> None:
        produce(self.stack.kafka, self.events, self.produced)
        self.produced += self.events

    def caught_up(self) -> bool:
        return committed(self.stack.kafka) >= self.produced

    def replay(self) -> str:
        body = {
            "start_offsets": [
                {"topic": SOURCE, "partition": p, "offset": 0} for p in range(PARTITIONS)
            ],
            "end_offsets": [
                {"topic": SOURCE, "partition": p, "offset": self.events // PARTITIONS}
                for p in range(PARTITIONS)
            ],
            "confirm": True,  # into the bench's own sink topic, which nobody else reads
        }
        run = self.call("POST", f"/channels/{NAME}/replays/", json=body)
        return str(run["id"])

    def run_done(self, run_id: str) -> bool:
        run = self.call("GET", f"/channels/{NAME}/replays/{run_id}/")
        assert run["state"] not in ("FAILED", "CANCELLED"), run
        return run["state"] == "SUCCEEDED"

    def live_phase(self, with_replay: bool) -> tuple[float, float | None]:
        self.stop()
        self.more_events()
        started = time.perf_counter()
        self.call("POST", f"/channels/{NAME}/start")
        run_id = self.replay() if with_replay else None
        live = self.until(self.caught_up, 600, "the channel caught up")
        replay = None
        if run_id is not None:
            done = self.until(lambda: self.run_done(run_id), 600, "the replay")
            replay = time.perf_counter() - started if done else None
        return live, replay

    def measure(self) -> dict[str, float]:
        make_topic(self.stack.kafka, SOURCE, PARTITIONS)
        make_topic(self.stack.kafka, SINK, 1)
        self.more_events()  # phase 0: the cold start, not measured
        self.call("POST", "/channels/", json={"name": NAME, "spec": spec(self.stack.kafka)})
        self.call("POST", f"/channels/{NAME}/start")
        self.until(self.caught_up, 600, "the first catch-up")
        live, _ = self.live_phase(with_replay=False)
        started = time.perf_counter()
        run_id = self.replay()
        self.until(lambda: self.run_done(run_id), 600, "the replay alone")
        replay = time.perf_counter() - started
        during, _ = self.live_phase(with_replay=True)
        return {
            "events": float(self.events),
            "live_seconds": live,
            "replay_seconds": replay,
            "live_during_replay_seconds": during,
            "live_events_per_second": self.events / live,
            "replay_events_per_second": self.events / replay,
            "live_during_replay_events_per_second": self.events / during,
            "replay_vs_live": live / replay,
            "live_during_replay_vs_alone": live / during,
        }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--events", type=int, default=200_000, help="events per phase")
    args = parser.parse_args()
    with (
        tempfile.TemporaryDirectory(prefix="sluice-bench-replay-") as work,
        live_stack(Path(work)) as stack,
    ):
        figures = Bench(stack, args.events).measure()
    RESULTS_DIR.mkdir(exist_ok=True)
    (RESULTS_DIR / "replay.json").write_text(json.dumps(figures, indent=2))
    print(f"replay bench, {args.events:,} events per phase")
    print(f"  live alone          {figures['live_events_per_second']:>10,.0f} events/s")
    print(f"  replay alone        {figures['replay_events_per_second']:>10,.0f} events/s")
    print(f"  live during replay  {figures['live_during_replay_events_per_second']:>10,.0f}")
    print(f"  replay / live                {figures['replay_vs_live']:.2f}  (target >= 0.8)")
    print(f"  live during / alone          {figures['live_during_replay_vs_alone']:.2f}  (>= 0.9)")


if __name__ == "__main__":
    main()
