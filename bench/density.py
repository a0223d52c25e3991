"""``make bench-density``: how many channels one host holds, and what an idle one costs.

On a live stack of its own (Redis, a Kafka broker, web, Celery, one runtime worker with
Spark ``local[2]``; the production reconcile interval, 2 s), in one run:

1. **alone**: one busy Kafka → filter → Kafka channel drains a backlog (``--backlog`` events,
   2 partitions) with no other channel: its throughput;
2. for N = 10, 50, 100 (``--steps``): Kafka → filter → Kafka channels, each on a topic of its
   own with no traffic, are created and started until N run; each one's deploy → ``RUNNING``
   (from the API call until the API reports it) is timed; once they all run and a settling
   minute passed, the CPU (% of one core) and memory (RSS) of the runtime's processes (the
   runtime worker, its drivers' JVMs and Python processes) and of the broker are sampled over
   ``--sample`` seconds;
3. **beside N - 1 idle**: the busy channel drains the same backlog again beside them.

Prints the figures beside the issue's targets and saves them in ``bench-results/``.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import tempfile
import time
import uuid
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from confluent_kafka.admin import AdminClient, NewTopic

from tests.support.orders import PATTERN, produce_range, selected
from tests.support.processes import REPO_ROOT, start_kafka, start_redis
from tests.support.stack import Stack, running_stack

RESULTS_DIR = REPO_ROOT / "bench-results"
CLOCK_TICKS = os.sysconf("SC_CLK_TCK")
PAGE = os.sysconf("SC_PAGE_SIZE")


def spec(kafka: str, source: str, sink: str, max_per_trigger: int | None = None) -> dict:
    config: dict[str, Any] = {
        "bootstrap_servers": kafka,
        "topics": [source],
        "starting_offsets": "earliest",
    }
    if max_per_trigger:
        config["max_events_per_trigger"] = max_per_trigger
    return {
        "source": {"type": "kafka", "config": config},
        "transforms": [{"type": "filter", "config": {"pattern": PATTERN}}],
        "sink": {"type": "kafka", "config": {"bootstrap_servers": kafka, "topic": sink}},
    }


# -- processes ------------------------------------------------------------------------------


def descendants(root: int) -> list[int]:
    """``root`` and every process under it (from /proc, as ``ps --forest`` sees it)."""
    children: dict[int, list[int]] = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        children.setdefault(int(fields[1]), []).append(int(entry.name))
    found, todo = [], [root]
    while todo:
        pid = todo.pop()
        found.append(pid)
        todo.extend(children.get(pid, []))
    return found


def cpu_ticks(pid: int) -> int:
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return 0
    return int(fields[11]) + int(fields[12])  # utime + stime


def rss_bytes(pid: int) -> int:
    try:
        return int(Path(f"/proc/{pid}/statm").read_text().split()[1]) * PAGE
    except OSError:
        return 0


@dataclass
class Usage:
    cpu_percent: float
    rss_mb: float


def sample(roots: list[int], seconds: float) -> Usage:
    """CPU (% of one core) and RSS of the processes under ``roots`` over ``seconds``."""
    pids = [pid for root in roots for pid in descendants(root)]
    before = {pid: cpu_ticks(pid) for pid in pids}
    started = time.monotonic()
    time.sleep(seconds)
    elapsed = time.monotonic() - started
    ticks = sum(max(cpu_ticks(pid) - before[pid], 0) for pid in pids)
    rss = sum(rss_bytes(pid) for pid in pids)
    return Usage(round(100 * ticks / CLOCK_TICKS / elapsed, 2), round(rss / 2**20, 1))


# -- the stack ------------------------------------------------------------------------------


@dataclass
class Results:
    steps: dict[int, dict[str, Any]] = field(default_factory=dict)
    alone: float = 0.0
    beside: float = 0.0
    beside_n: int = 0
    baseline: Usage | None = None


class Bench:
    def __init__(self, stack: Stack, broker_pid: int) -> None:
        self.stack = stack
        self.http = stack.session()
        self.broker_pid = broker_pid
        self.admin = AdminClient({"bootstrap.servers": stack.kafka})
        self.idle: list[str] = []
        self.suffix = uuid.uuid4().hex[:6]

    def topics(self, *names: str, partitions: int = 1) -> None:
        futures = self.admin.create_topics([NewTopic(n, partitions, 1) for n in names])
        for future in futures.values():
            future.result(timeout=30)

    def states(self) -> dict[str, dict[str, Any]]:
        url = f"{self.stack.api}/channels/?expand=status&limit=1000"
        body = self.http.get(url, timeout=30).json()
        return {c["name"]: c.get("status") or {} for c in body["results"]}

    def create(self, name: str, body_spec: dict) -> None:
        body = {"name": name, "spec": body_spec, "target_state": "RUNNING"}
        response = self.http.post(f"{self.stack.api}/channels/", json=body, timeout=30)
        assert response.status_code == 201, response.text

    def runtime_roots(self) -> list[int]:
        return [
            service.process.pid
            for name, service in self.stack.services.items()
            if name.startswith("runtime")
        ]

    def deploy_idle(self, count: int) -> list[float]:
        """Create and start ``count`` idle channels, each once the previous one runs; the
        seconds from each one's API call until the API reports it RUNNING."""
        timings = []
        for _ in range(count):
            index = len(self.idle)
            name = f"idle-{index}-{self.suffix}"
            source, sink = f"{name}-in", f"{name}-out"
            self.topics(source, sink)
            started = time.monotonic()
            self.create(name, spec(self.stack.kafka, source, sink))
            while True:
                status = self.http.get(f"{self.stack.api}/channels/{name}/status", timeout=10)
                state = status.json().get("state")
                if state == "RUNNING":
                    break
                if state == "FAILED" or time.monotonic() - started > 300:
                    raise RuntimeError(f"{name}: {status.json()}\n{self.stack.logs()}")
                time.sleep(0.05)
            timings.append(time.monotonic() - started)
            self.idle.append(name)
        return timings

    def busy_run(self, label: str, events: int) -> float:
        """A new busy channel drains ``events`` (one in three selected); its events/s from
        the first selected event in its sink to the last (its start, which the deploy figures
        time, left out)."""
        name = f"busy-{label}-{self.suffix}"
        source, sink = f"{name}-in", f"{name}-out"
        self.topics(source, sink, partitions=2)
        produce_range(self.stack.kafka, source, 0, events)
        expected = sum(1 for seq in range(events) if selected(seq))
        self.create(name, spec(self.stack.kafka, source, sink, max_per_trigger=50_000))
        delivered, first, last = count_until(self.stack.kafka, sink, expected, timeout=900)
        if delivered < expected:
            raise RuntimeError(f"{name}: {delivered} of {expected} delivered")
        self.http.post(f"{self.stack.api}/channels/{name}/stop", timeout=30)
        return events / max(last - first, 1e-3)


def count_until(bootstrap: str, topic: str, expected: int, timeout: float):
    """Records read from ``topic`` until ``expected`` arrived (or ``timeout``), with the
    times the first and the last of them were read."""
    from confluent_kafka import Consumer

    consumer = Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": f"bench-{uuid.uuid4().hex}",
            "auto.offset.reset": "earliest",
            "enable.auto.commit": False,
        }
    )
    consumer.subscribe([topic])
    seen, first, last = 0, 0.0, 0.0
    deadline = time.monotonic() + timeout
    try:
        while seen < expected and time.monotonic() < deadline:
            messages = [m for m in consumer.consume(10_000, 0.2) if not m.error()]
            if messages:
                last = time.monotonic()
                first = first or last
                seen += len(messages)
    finally:
        consumer.close()
    return seen, first, last


def percentile(values: list[float], fraction: float) -> float:
    ordered = sorted(values)
    return ordered[min(round(fraction * (len(ordered) - 1)), len(ordered) - 1)]


def run(args: argparse.Namespace, work: Path) -> Results:
    logs = work / "logs"
    redis, redis_url = start_redis(work / "redis", logs)
    kafka, bootstrap = start_kafka(work / "kafka", logs)
    results = Results()
    try:
        with running_stack(
            redis_url=redis_url,
            kafka=bootstrap,
            var=work / "var",
            log_dir=logs / "stack",
            extra_env={
                "SLUICE_RECONCILE_INTERVAL": "1",  # the production default
                "SPARK_MASTER": "local[2]",
                "SLUICE_CHANNELS_PER_DRIVER": str(args.per_driver),
                "SLUICE_SHARED_DRIVER_MEMORY": args.driver_memory,
            },
        ) as stack:
            bench = Bench(stack, kafka.process.pid)
            time.sleep(20)  # the warm driver up
            bench.busy_run("warm-up", args.backlog // 3)  # the JVM's JIT warmed up
            time.sleep(args.settle)
            results.baseline = sample(bench.runtime_roots(), args.sample)
            print(f"runtime at rest, no channel: {results.baseline}", flush=True)
            results.alone = bench.busy_run("alone", args.backlog)
            print(f"busy channel alone: {results.alone:,.0f} events/s", flush=True)
            for step in args.steps:
                timings = bench.deploy_idle(step - len(bench.idle))
                print(
                    f"{step} idle channels RUNNING; deploy p50 {statistics.median(timings):.2f} s",
                    flush=True,
                )
                time.sleep(args.settle)
                runtime = sample(bench.runtime_roots(), args.sample)
                broker = sample([bench.broker_pid], args.sample)
                results.steps[step] = {
                    "deploy_p50_s": round(statistics.median(timings), 2),
                    "deploy_p99_s": round(percentile(timings, 0.99), 2),
                    "deploy_max_s": round(max(timings), 2),
                    "runtime": asdict(runtime),
                    "broker": asdict(broker),
                    "running": sum(
                        1 for s in bench.states().values() if s.get("state") == "RUNNING"
                    ),
                }
                print(f"  {step}: {json.dumps(results.steps[step])}", flush=True)
            results.beside_n = len(bench.idle)
            results.beside = bench.busy_run("beside", args.backlog)
            print(
                f"busy channel beside {results.beside_n} idle: {results.beside:,.0f} events/s",
                flush=True,
            )
    finally:
        kafka.stop()
        redis.stop()
    return results


def report(results: Results) -> str:
    base = results.baseline or Usage(0, 0)
    lines = [
        f"Sluice density benchmark, {time.strftime('%Y-%m-%d %H:%M:%S %Z')}",
        f"machine: {os.cpu_count()} cores; one runtime worker, Spark local[2]",
        f"runtime with no channel (worker + warm driver): {base.cpu_percent:.1f} % of a core, "
        f"{base.rss_mb:.0f} MB",
        "",
        "idle channels | deploy p50 / p99 | runtime CPU | runtime RSS | each added idle channel "
        "(CPU, RSS) | broker CPU",
    ]
    previous = (0, base.cpu_percent, base.rss_mb)
    for step, figures in sorted(results.steps.items()):
        runtime = figures["runtime"]
        # What each idle channel added since the previous step (the first: since none ran).
        added = step - previous[0]
        cpu_each = (runtime["cpu_percent"] - previous[1]) / added
        rss_each = (runtime["rss_mb"] - previous[2]) / added
        previous = (step, runtime["cpu_percent"], runtime["rss_mb"])
        lines.append(
            f"{step:>13} | {figures['deploy_p50_s']:.2f} s / {figures['deploy_p99_s']:.2f} s "
            f"| {runtime['cpu_percent']:.1f} % | {runtime['rss_mb']:.0f} MB | "
            f"{cpu_each:.2f} %, {rss_each:.1f} MB | {figures['broker']['cpu_percent']:.1f} %"
        )
    ratio = results.beside / results.alone if results.alone else 0.0
    lines += [
        "",
        f"busy channel alone: {results.alone:,.0f} events/s; beside {results.beside_n} idle: "
        f"{results.beside:,.0f} events/s ({ratio:.2f}x; target >= 0.8x)",
        "targets: >= 100 idle channels RUNNING; <= 1 % of a core and <= 40 MB per idle channel;"
        " deploy p50 <= 2 s, p99 <= 5 s",
    ]
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, nargs="+", default=[10, 50, 100])
    parser.add_argument("--backlog", type=int, default=300_000)
    parser.add_argument("--sample", type=float, default=60.0)
    parser.add_argument("--settle", type=float, default=60.0)
    parser.add_argument("--per-driver", type=int, default=100)
    parser.add_argument("--driver-memory", default="3g")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="sluice-bench-density-", dir="/var/tmp") as tmp:
        work = Path(tmp)
        os.chmod(work, 0o755)
        results = run(args, work)
    text = report(results)
    print("\n" + text)
    RESULTS_DIR.mkdir(exist_ok=True)
    stamp = time.strftime("%Y%m%d-%H%M%S")
    (RESULTS_DIR / f"density-{stamp}.txt").write_text(text + "\n")
    (RESULTS_DIR / f"density-{stamp}.json").write_text(
        json.dumps(asdict(results), indent=2, default=str)
    )


if __name__ == "__main__":
    main()
