"""``make bench-drain`` (or ``python -m bench.drain``): drain a runtime worker (issue 17).

On a live stack of its own (Redis, a Kafka broker, web, Celery, two runtime workers
``it-worker-1`` and ``it-worker-2``, Spark ``local[1]`` in each driver, the production
reconcile interval, 1 s):

1. ``it-worker-2`` is drained, so the ``--channels`` Kafka → filter → Kafka channels created
   next (one shared source topic, a sink topic each) all go to ``it-worker-1``; once they all
   run, ``it-worker-2`` is put back in service, in Chromium through the console's Workers page
   (its *Back in service* button; ``--no-browser``: through the API);
2. a producer sends events at ``--rate`` events/s for the whole measure; after
   ``--lead`` seconds ``it-worker-1`` is drained through the API (``POST
   /api/v1/workers/it-worker-1/drain``), and the channels' status is polled (one list call
   with ``expand=status``, every 0.25 s) until every channel is RUNNING on ``it-worker-2``:
   that time is the figure; the time until the worker is DRAINED follows; meanwhile Chromium
   takes ``test-artifacts/workers-draining.png`` of the Workers page;
3. the producer runs ``--tail`` seconds more, then every sink topic is read back: each
   selected event must be there (0 lost; duplicates, at-least-once, are counted).

Target (issue 17): a drain of a worker with 20 channels → all RUNNING elsewhere ≤ 30 s, 0
lost. Figures are printed and saved to ``bench-results/drain-<time>.json``.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import tempfile
import threading
import time
import uuid
from collections import Counter
from pathlib import Path
from typing import Any

from confluent_kafka import Consumer, Producer
from confluent_kafka.admin import AdminClient, NewTopic

from bench.stack import live_stack
from tests.support.orders import PATTERN, payload, selected
from tests.support.processes import REPO_ROOT
from tests.support.stack import Stack

RESULTS_DIR = REPO_ROOT / "bench-results"
FROM, TO = "it-worker-1", "it-worker-2"
TARGET_SECONDS = 30.0


def spec(kafka: str, source: str, sink: str) -> dict[str, Any]:
    return {
        "source": {
            "type": "kafka",
            "config": {
                "bootstrap_servers": kafka,
                "topics": [source],
                "starting_offsets": "earliest",
            },
        },
        "transforms": [{"type": "filter", "config": {"pattern": PATTERN}}],
        "sink": {"type": "kafka", "config": {"bootstrap_servers": kafka, "topic": sink}},
    }


class SteadyProducer(threading.Thread):
    """Sends events ``0, 1, 2…`` at ``rate`` per second until stopped; ``sent`` is how many."""

    def __init__(self, bootstrap: str, topic: str, rate: float) -> None:
        super().__init__(daemon=True)
        self.producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 20, "acks": "all"})
        self.topic, self.rate = topic, rate
        self.sent = 0
        self.halt = threading.Event()

    def run(self) -> None:
        started = time.monotonic()
        while not self.halt.is_set():
            due = int((time.monotonic() - started) * self.rate)
            while self.sent < due:
                self.producer.produce(self.topic, payload(self.sent))
                self.sent += 1
            self.producer.poll(0)
            time.sleep(0.02)
        if self.producer.flush(60) != 0:
            raise RuntimeError("events were not confirmed by Kafka")


def read_back(bootstrap: str, topic: str, wanted: set[int], timeout: float) -> Counter:
    """Every ``seq`` in ``topic`` (counted), read until ``wanted`` all arrived or timeout."""
    consumer = Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": f"bench-{uuid.uuid4().hex}",
            "auto.offset.reset": "earliest",
            "enable.auto.commit": False,
        }
    )
    consumer.subscribe([topic])
    seqs: Counter = Counter()
    deadline = time.monotonic() + timeout
    try:
        while time.monotonic() < deadline and not wanted <= seqs.keys():
            for message in consumer.consume(5_000, 0.5):
                if not message.error():
                    seqs[json.loads(message.value())["seq"]] += 1
    finally:
        consumer.close()
    return seqs


class Bench:
    def __init__(self, stack: Stack, channels: int) -> None:
        self.stack, self.http = stack, stack.session()
        self.suffix = uuid.uuid4().hex[:6]
        self.source = f"drain-in-{self.suffix}"
        self.names = [f"drain-{n:02d}-{self.suffix}" for n in range(channels)]

    def topics(self) -> None:
        admin = AdminClient({"bootstrap.servers": self.stack.kafka})
        wanted = [NewTopic(self.source, 2, 1)] + [NewTopic(f"{n}-out", 1, 1) for n in self.names]
        for future in admin.create_topics(wanted).values():
            future.result(timeout=60)

    def post(self, path: str, **kwargs: Any) -> dict[str, Any]:
        response = self.http.post(f"{self.stack.api}/{path}", timeout=30, **kwargs)
        if response.status_code >= 300:
            raise RuntimeError(f"POST {path}: {response.status_code} {response.text}")
        return response.json() if response.content else {}

    def statuses(self) -> dict[str, dict[str, Any]]:
        page = self.http.get(
            f"{self.stack.api}/channels/?expand=status&limit=500&search=drain-", timeout=30
        ).json()
        return {
            c["name"]: c.get("status") or {} for c in page["results"] if c["name"] in self.names
        }

    def all_running_on(self, worker_id: str) -> bool:
        found = self.statuses()
        return len(found) == len(self.names) and all(
            s.get("state") == "RUNNING" and s.get("worker_id") == worker_id for s in found.values()
        )

    def wait(self, condition, timeout: float, what: str) -> float:
        started = time.monotonic()
        while not condition():
            if time.monotonic() - started > timeout:
                raise RuntimeError(f"{what}: not within {timeout:g} s: {self.statuses()}")
            time.sleep(0.25)
        return time.monotonic() - started

    def browser(self, mode: str, worker_id: str, shot: Path) -> subprocess.Popen[str]:
        """``frontend/e2e/workers-shot.mjs`` against this stack, started (not waited for)."""
        shot.parent.mkdir(exist_ok=True)
        env = {
            **os.environ,
            "SLUICE_URL": self.stack.base_url,
            "SLUICE_USER": "admin",
            "SLUICE_PASSWORD": self.stack.env["SLUICE_ADMIN_PASSWORD"],
        }
        return subprocess.Popen(
            ["node", "e2e/workers-shot.mjs", mode, worker_id, str(shot)],
            cwd=REPO_ROOT / "frontend",
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
        )

    def phases(self, since: float) -> dict[str, float]:
        """Where the hand-over's time went, from the channels' lifecycle events after ``since``
        (a Unix time): the slowest channel's drain → released, released → placed on the other
        worker (its old query stopped), placed → RUNNING there."""
        from datetime import datetime

        slowest = {"released_s": 0.0, "stopped_then_placed_s": 0.0, "placed_then_running_s": 0.0}
        for name in self.names:
            page = self.http.get(
                f"{self.stack.api}/channels/{name}/lifecycle/?limit=50", timeout=10
            ).json()
            at: dict[str, float] = {}
            for event in sorted(page["results"], key=lambda e: e["created_at"]):
                when = datetime.fromisoformat(event["created_at"]).timestamp()
                if when < since:
                    continue
                reason = event["reason"]
                if "is draining: its query stops" in reason:
                    at.setdefault("released", when)
                elif f"assigned to worker {TO}" in reason:
                    at.setdefault("placed", when)
                elif event["to_state"] == "RUNNING" and "placed" in at:
                    at.setdefault("running", when)
            if {"released", "placed", "running"} <= at.keys():
                for key, value in (
                    ("released_s", at["released"] - since),
                    ("stopped_then_placed_s", at["placed"] - at["released"]),
                    ("placed_then_running_s", at["running"] - at["placed"]),
                ):
                    slowest[key] = round(max(slowest[key], value), 2)
        return slowest

    def service(self, worker_id: str) -> str:
        worker = self.http.get(f"{self.stack.api}/workers/{worker_id}/", timeout=10).json()
        return str(worker.get("service"))


def run(args: argparse.Namespace, work: Path) -> dict[str, Any]:
    with live_stack(
        work,
        runtime_workers=2,
        extra_env={
            "SPARK_MASTER": "local[1]",
            "SLUICE_CHANNELS_PER_DRIVER": str(max(args.channels, 1)),
            "SLUICE_SHARED_DRIVER_MEMORY": args.driver_memory,
        },
    ) as stack:
        bootstrap = stack.kafka
        bench = Bench(stack, args.channels)
        bench.topics()
        bench.wait(
            lambda: len(bench.http.get(f"{stack.api}/workers/", timeout=10).json()["results"]) == 2,
            120,
            "both runtime workers registered",
        )
        bench.post(f"workers/{TO}/drain")  # so that every channel goes to FROM
        producer = SteadyProducer(bootstrap, bench.source, args.rate)
        producer.start()
        for name in bench.names:
            bench.post(
                "channels/",
                json={
                    "name": name,
                    "spec": spec(bootstrap, bench.source, f"{name}-out"),
                    "target_state": "RUNNING",
                },
            )
        start_seconds = bench.wait(lambda: bench.all_running_on(FROM), 600, "all on it-worker-1")
        print(f"{args.channels} channels RUNNING on {FROM} ({start_seconds:.1f} s)", flush=True)
        shots = REPO_ROOT / "test-artifacts"
        if args.browser:
            clicked = bench.browser("undrain", TO, shots / "workers-before-undrain.png")
            output, _ = clicked.communicate(timeout=180)
            print(f"console: {output.strip().splitlines()[-1:]}", flush=True)
            if clicked.returncode != 0:
                raise RuntimeError(f"Back in service in Chromium failed:\n{output}")
        else:
            bench.post(f"workers/{TO}/undrain")
        if bench.service(TO) != "IN_SERVICE":
            raise RuntimeError(f"{TO} is not back in service")
        time.sleep(args.lead)

        shooting = None
        if args.browser:  # on the page before the drain, to catch the worker DRAINING
            shooting = bench.browser("shot", FROM, shots / "workers-draining.png")
            assert shooting.stdout is not None
            print(f"console: {shooting.stdout.readline().strip()}", flush=True)
        drained_at = time.monotonic()
        drain_wall = time.time()
        answer = bench.post(f"workers/{FROM}/drain")
        moved = bench.wait(lambda: bench.all_running_on(TO), 600, f"all on {TO}")
        bench.wait(lambda: bench.service(FROM) == "DRAINED", 120, f"{FROM} DRAINED")
        drained = time.monotonic() - drained_at
        print(f"all {args.channels} RUNNING on {TO} {moved:.1f} s after the drain", flush=True)
        if shooting is not None:
            output, _ = shooting.communicate(timeout=180)
            print(f"console: {output.strip().splitlines()[-1:]}", flush=True)
        time.sleep(args.tail)
        producer.halt.set()
        producer.join(120)
        del producer.producer  # closed now, not after Kafka stops (its retries' noise)
        wanted = {seq for seq in range(producer.sent) if selected(seq)}
        lost = duplicates = 0
        for name in bench.names:
            seqs = read_back(bootstrap, f"{name}-out", wanted, timeout=args.read_timeout)
            lost += len(wanted - seqs.keys())
            duplicates += sum(count - 1 for count in seqs.values())
        phases = bench.phases(drain_wall)
        for name in bench.names:
            bench.post(f"channels/{name}/stop")
        return {
            "channels": args.channels,
            "moving": len(answer["channels"]),
            "rate_events_per_s": args.rate,
            "events_sent": producer.sent,
            "selected_per_channel": len(wanted),
            "all_running_elsewhere_s": round(moved, 2),
            "drained_s": round(drained, 2),
            "lost": lost,
            "duplicates": duplicates,
            "slowest_phases": phases,
            "machine_cores": os.cpu_count(),
            "load_average_1m": round(os.getloadavg()[0], 1),
        }


def report(figures: dict[str, Any]) -> str:
    ok = figures["all_running_elsewhere_s"] <= TARGET_SECONDS and figures["lost"] == 0
    return "\n".join(
        [
            f"Sluice drain benchmark, {time.strftime('%Y-%m-%d %H:%M:%S %Z')}",
            f"machine: {figures['machine_cores']} cores, load {figures['load_average_1m']} "
            "(1 min); two runtime workers, Spark local[1]",
            f"drain of {FROM} hosting {figures['moving']} channel(s) while "
            f"{figures['rate_events_per_s']:g} events/s flow:",
            f"  all RUNNING on {TO}: {figures['all_running_elsewhere_s']:.1f} s "
            f"(target <= {TARGET_SECONDS:g} s); DRAINED: {figures['drained_s']:.1f} s",
            f"  events: {figures['events_sent']} sent, {figures['selected_per_channel']} selected "
            f"per channel; lost {figures['lost']} (target 0); duplicates {figures['duplicates']}",
            f"  slowest channel's phases: {figures['slowest_phases']}",
            f"  {'meets' if ok else 'misses'} the target",
        ]
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--channels", type=int, default=20)
    parser.add_argument("--rate", type=float, default=200.0, help="events/s during the measure")
    parser.add_argument("--lead", type=float, default=10.0, help="seconds before the drain")
    parser.add_argument("--tail", type=float, default=10.0, help="seconds after it")
    parser.add_argument("--read-timeout", type=float, default=300.0)
    parser.add_argument("--driver-memory", default="1500m")
    parser.add_argument(
        "--no-browser",
        dest="browser",
        action="store_false",
        help="act through the API only (no Chromium, no screenshot)",
    )
    args = parser.parse_args(argv)
    if args.browser and not (shutil.which("node") and Path("/usr/bin/chromium").exists()):
        parser.error("Chromium or node is missing: pass --no-browser")
    with tempfile.TemporaryDirectory(prefix="sluice-bench-drain-", dir="/var/tmp") as tmp:
        work = Path(tmp)
        os.chmod(work, 0o755)
        figures = run(args, work)
    text = report(figures)
    print("\n" + text)
    RESULTS_DIR.mkdir(exist_ok=True)
    stamp = time.strftime("%Y%m%d-%H%M%S")
    (RESULTS_DIR / f"drain-{stamp}.json").write_text(json.dumps(figures, indent=2) + "\n")
    return 0 if figures["lost"] == 0 else 1


if __name__ == "__main__":
    raise SystemExit(main())
