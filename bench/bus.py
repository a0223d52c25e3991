"""``make bench BENCH_ARGS="--only bus"`` (or ``python -m bench.bus``): a bus against channels.

Workload: the data-plane benchmark's JSON order events (:mod:`bench.workload`, ~500 bytes),
each with a ``bucket`` (its sequence number modulo the rules), in a 2-partition topic of a real
Kafka broker started for the run. Each contender drains the same backlog
(``available-now``, ``--per-trigger`` events per micro-batch) on 2 cores (``local[2]``, a
process of its own), after draining a smaller warm-up topic untimed with the same specs (a
runtime driver is long-lived: the measured run is not a cold JVM's), and is timed from its
queries' start to their end; its driver's CPU time (JVM and Python) over the same span
gives the events per CPU-second (per core):

* **bus-10** - one bus, 10 rules (``bucket`` = i and ``amount > 10``), each to its own Kafka
  topic: the topic is read and parsed once;
* **channels-10** - the same work as 10 linear channels (Kafka → filter → Kafka), run
  side by side in one driver as the runtime's shared drivers run them: 10 reads, 10 parses;
* **bus-100** - one bus with 100 rules (``bucket`` = i), 100 Kafka topics, every event
  matching one rule; **channel-1** - a linear channel with one rule (a filter every event
  passes) to one topic: the same events in, the same events out.

The buses here have Kafka targets only: they run compiled into their streaming query
(:func:`pipelines.spec.live.compiled_into_query`), as the runtime runs them, their per-rule counts
observed every batch; ``bus-100-nocounts`` measures the same bus without them (the counts'
cost), and ``bus-100-one-topic`` the same 100 rules writing to one topic (the routing alone,
without the producer's and the broker's cost of 100 topics' partitions). Each contender
runs ``--repeat`` times (median reported). Prints the figures and the ratios (targets:
bus-10 at least 5x channels-10 per core; bus-100 at least 0.5x channel-1) and saves them to
``bench-results/``.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from bench.workload import make_event
from tests.support.processes import REPO_ROOT, start_kafka

PARTITIONS = 2
CORES = 2
CONTENDERS = (
    "bus-10",
    "channels-10",
    "bus-100",
    "bus-100-nocounts",
    "bus-100-one-topic",
    "channel-1",
)
RULES = {
    "bus-10": 10,
    "channels-10": 10,
    "bus-100": 100,
    "bus-100-nocounts": 100,
    "bus-100-one-topic": 100,
    "channel-1": 1,
}
TOPICS = {**RULES, "bus-100-one-topic": 1}
"""Target topics per contender: ``bus-100-one-topic`` writes its 100 rules to one topic."""


@dataclass
class Run:
    contender: str
    events: int
    seconds: float
    cpu_seconds: float
    written: int
    batches: int = 0

    @property
    def rate(self) -> float:
        return self.events / self.seconds if self.seconds else 0.0

    @property
    def per_cpu_second(self) -> float:
        return self.events / self.cpu_seconds if self.cpu_seconds else 0.0


@dataclass
class Results:
    events: int
    per_trigger: int
    warm_events: int = 0
    runs: dict[str, list[Run]] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)

    def median(self, contender: str) -> Run | None:
        runs = sorted(self.runs.get(contender, []), key=lambda run: run.seconds)
        return runs[(len(runs) - 1) // 2] if runs else None


# -- one contender, in a process of its own ----------------------------------------------


def rule_pattern(contender: str, index: int) -> dict[str, Any]:
    if contender == "channel-1":
        return {"data": {"bucket": [{"exists": True}]}}
    if RULES[contender] == 10:
        return {"data": {"bucket": [index], "amount": [{"numeric": [">", 10]}]}}
    return {"data": {"bucket": [index]}}


def specs(contender: str, bootstrap: str, source: str, per_trigger: int) -> list[dict[str, Any]]:
    """The channel specs a contender runs (one bus, or linear channels)."""
    source_stage = {
        "type": "kafka",
        "config": {
            "bootstrap_servers": bootstrap,
            "topics": [source],
            "starting_offsets": "earliest",
            "max_events_per_trigger": per_trigger,
        },
    }

    def sink(index: int) -> dict[str, Any]:
        topic = f"{contender}-{index % TOPICS[contender]}"
        return {"type": "kafka", "config": {"bootstrap_servers": bootstrap, "topic": topic}}

    runtime = {"mode": "available-now"}
    rules = RULES[contender]
    if contender.startswith("bus"):
        return [
            {
                "source": source_stage,
                "rules": [
                    {"name": f"r{i}", "pattern": rule_pattern(contender, i), "sinks": [sink(i)]}
                    for i in range(rules)
                ],
                "runtime": runtime,
            }
        ]
    return [
        {
            "source": source_stage,
            "transforms": [{"type": "filter", "config": {"pattern": rule_pattern(contender, i)}}],
            "sink": sink(i),
            "runtime": runtime,
        }
        for i in range(rules)
    ]


def jvm_cpu_seconds(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def run_contender(args: argparse.Namespace) -> None:
    """Build, start and time one contender's queries; print one JSON line.

    The contender first drains the warm-up topic (``--warm``: the same events, fewer) with
    the same specs and then the measured backlog with new queries, in the same driver: the
    measured run has the JVM's compiled code and Spark's generated classes of a driver that
    has been running, as the runtime's long-lived drivers have, not a cold start's.
    """
    from bench.spark_job import session

    spark = session(CORES)  # the same session as the data-plane bench's contenders
    jvm = spark._jvm
    assert jvm is not None
    pid = int(jvm.java.lang.ProcessHandle.current().pid())
    checkpoints = Path(tempfile.mkdtemp(prefix="sluice-bench-bus-"))
    if args.warm:
        drain(spark, args, args.warm, checkpoints / "warm")
    cpu, python_cpu = jvm_cpu_seconds(pid), time.process_time()
    started = time.perf_counter()
    written, batches = drain(spark, args, args.source, checkpoints / "measured")
    seconds = time.perf_counter() - started
    cpu = jvm_cpu_seconds(pid) - cpu + time.process_time() - python_cpu
    print(
        json.dumps(
            {"seconds": seconds, "cpu_seconds": cpu, "written": written, "batches": batches}
        ),
        flush=True,
    )
    spark.stop()
    shutil.rmtree(checkpoints, ignore_errors=True)


def drain(spark: Any, args: argparse.Namespace, source: str, checkpoints: Path) -> tuple[int, int]:
    """Run the contender's queries over ``source`` to its end; (events written, batches)."""
    from pipelines.builder import build_stream
    from pipelines.bus import build_bus_stream
    from pipelines.spec import validate_spec

    counted: list[int] = []

    def on_rule_counts(batch_id: int, counts: list[dict[str, Any]]) -> None:
        counted.append(sum(rule["delivered"] for rule in counts))

    counts = on_rule_counts if args.contender != "bus-100-nocounts" else None
    writers, routers = [], []
    for index, spec in enumerate(specs(args.contender, args.bootstrap, source, args.per_trigger)):
        checkpoint = str(checkpoints / str(index))
        if "rules" in spec:  # a bus: as the runtime builds it
            writer, router = build_bus_stream(
                spark,
                validate_spec(spec),
                channel=f"bench-{index}",
                checkpoint_dir=checkpoint,
                on_rule_counts=counts,
            )
            routers.append(router)
        else:
            writer = build_stream(
                spark, validate_spec(spec), channel=f"bench-{index}", checkpoint_dir=checkpoint
            )
        writers.append(writer)
    queries = [writer.start() for writer in writers]
    for query in queries:
        query.awaitTermination()
    batches = sum(
        1 for query in queries for progress in query.recentProgress if progress["numInputRows"]
    )
    if routers:  # a bus's per-rule counts say what it wrote
        for router, query in zip(routers, queries, strict=True):
            if router.compiled and counts is not None:  # in its progress, as the runtime reads
                for report in query.recentProgress:
                    rules = router.progress_counts(json.loads(report.json))
                    if rules is not None:
                        on_rule_counts(report["batchId"], rules)
        return (sum(counted) if counts is not None else -1), batches
    written = sum(
        max(int(progress["sink"].get("numOutputRows", 0)), 0)
        for query in queries
        for progress in query.recentProgress
    )
    return written, batches


# -- the whole benchmark ---------------------------------------------------------------------


def produce_backlog(bootstrap: str, topic: str, count: int) -> None:
    from confluent_kafka import Producer

    producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 20})
    rng = random.Random(0)
    for seq in range(count):
        payload = json.loads(make_event(seq, rng))
        payload["bucket"] = seq % 100
        while True:
            try:
                producer.produce(topic, json.dumps(payload).encode(), partition=seq % PARTITIONS)
                break
            except BufferError:
                producer.poll(0.1)
        if seq % 10_000 == 0:
            producer.poll(0)
    assert producer.flush(60) == 0


def create_topics(bootstrap: str, names: list[str]) -> None:
    from confluent_kafka.admin import AdminClient, NewTopic

    admin = AdminClient({"bootstrap.servers": bootstrap})
    futures = admin.create_topics([NewTopic(name, PARTITIONS, 1) for name in names])
    for future in futures.values():
        future.result(30)


def expected_written(contender: str, events: int) -> int:
    """Events out: every event matches one rule (bus-100, channel-1); amount > 10 of the
    10 buckets 0..9 (bus-10, channels-10: decided from the same events)."""
    rng = random.Random(0)
    if RULES[contender] != 10:
        return events
    total = 0
    for seq in range(events):
        payload = json.loads(make_event(seq, rng))
        total += seq % 100 < 10 and payload["amount"] > 10
    return total


def measure(args: argparse.Namespace, bootstrap: str, results: Results) -> None:
    chosen = [c for c in CONTENDERS if c in args.chosen]
    for contender in chosen:
        create_topics(bootstrap, [f"{contender}-{i}" for i in range(TOPICS[contender])])
        results.runs[contender] = []
    for round_ in range(args.repeat):
        shift = round_ % len(chosen)
        for contender in chosen[shift:] + chosen[:shift]:
            print(f"running {contender} (run {round_ + 1} of {args.repeat}) …", flush=True)
            command = [
                sys.executable, "-m", "bench.bus", "--run", contender, "--bootstrap", bootstrap,
                "--source", "bus-in", "--per-trigger", str(args.per_trigger),
                "--warm", "bus-warm" if args.warm_events else "",
            ]  # fmt: skip
            done = subprocess.run(
                command, cwd=REPO_ROOT, capture_output=True, text=True, timeout=1800
            )
            line = next((x for x in reversed(done.stdout.splitlines()) if x.startswith("{")), None)
            if done.returncode or line is None:
                results.notes.append(f"{contender} failed: {done.stderr[-2000:]}")
                print(done.stderr[-3000:], flush=True)
                continue
            measured = json.loads(line)
            run = Run(contender, args.events, **measured)
            results.runs[contender].append(run)
            wanted = expected_written(contender, args.events)
            if run.written >= 0 and run.written != wanted:
                results.notes.append(f"{contender} wrote {run.written:,}, expected {wanted:,}")


def report(results: Results) -> str:
    lines = [
        f"Bus benchmark: {results.events:,} events of ~500 bytes, {PARTITIONS} partitions, "
        f"{results.per_trigger:,} events per micro-batch, {CORES} cores per contender, "
        f"each warmed up on {results.warm_events:,} events first (untimed)",
        "",
        f"{'contender':<18} {'seconds':>8} {'events/s':>10} {'events/CPU-s':>13} "
        f"{'written':>10} {'batches':>8}  runs (s)",
    ]
    for contender in CONTENDERS:
        run = results.median(contender)
        if run is None:
            continue
        runs = ", ".join(f"{r.seconds:.1f}" for r in results.runs[contender])
        lines.append(
            f"{contender:<18} {run.seconds:>8.1f} {run.rate:>10,.0f} {run.per_cpu_second:>13,.0f} "
            f"{run.written:>10,} {run.batches:>8}  {runs}"
        )
    lines.append("")

    def ratio(name: str, a: str, b: str, target: float, per_cpu: bool) -> None:
        first, second = results.median(a), results.median(b)
        if first is None or second is None:
            return
        if per_cpu:
            value = first.per_cpu_second / second.per_cpu_second
            wall = first.rate / second.rate
            lines.append(
                f"{name}: {value:.1f}x per CPU-second ({wall:.1f}x events/s on {CORES} cores); "
                f"target ≥ {target}x: {'met' if value >= target else 'NOT met'}"
            )
        else:
            value = first.rate / second.rate
            lines.append(
                f"{name}: {value:.2f}x events/s; target ≥ {target}x: "
                f"{'met' if value >= target else 'NOT met'}"
            )

    ratio("bus-10 vs channels-10", "bus-10", "channels-10", 5, per_cpu=True)
    ratio("bus-100 vs channel-1", "bus-100", "channel-1", 0.5, per_cpu=False)
    one_topic, linear = results.median("bus-100-one-topic"), results.median("channel-1")
    if one_topic and linear:
        lines.append(
            f"bus-100 to one topic vs channel-1: {one_topic.rate / linear.rate:.2f}x events/s "
            "(the routing of 100 rules alone, without Kafka's cost of 100 topics' partitions)"
        )
    counted, uncounted = results.median("bus-100"), results.median("bus-100-nocounts")
    if counted and uncounted:
        lines.append(
            f"per-rule counts' cost (bus-100): {counted.seconds / uncounted.seconds - 1:+.1%} "
            "time per event"
        )
    lines.extend(f"note: {note}" for note in results.notes)
    return "\n".join(lines)


def save(results: Results, text: str) -> None:
    directory = REPO_ROOT / "bench-results"
    directory.mkdir(exist_ok=True)
    stamp = time.strftime("%Y%m%dT%H%M%S")
    (directory / f"bus-{stamp}.json").write_text(json.dumps(asdict(results), indent=2))
    (directory / f"bus-{stamp}.txt").write_text(text + "\n")


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--events", type=int, default=int(os.environ.get("BENCH_EVENTS", 1e6)))
    parser.add_argument("--per-trigger", type=int, default=100_000)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument(
        "--contenders",
        default=",".join(CONTENDERS),
        help=f"comma-separated subset of: {', '.join(CONTENDERS)}",
    )
    parser.add_argument(
        "--warm-events",
        type=int,
        default=None,
        help="events each contender drains first, untimed (default: 3 micro-batches)",
    )
    parser.add_argument("--run", choices=CONTENDERS, help=argparse.SUPPRESS)
    parser.add_argument("--warm", default="", help=argparse.SUPPRESS)
    parser.add_argument("--bootstrap", help=argparse.SUPPRESS)
    parser.add_argument("--source", help=argparse.SUPPRESS)
    parser.add_argument("--only", help=argparse.SUPPRESS)  # make bench BENCH_ARGS="--only bus"
    args = parser.parse_args(argv)
    args.chosen = set(args.contenders.split(","))
    if args.warm_events is None:
        args.warm_events = min(args.events, 3 * args.per_trigger)
    args.contender = args.run
    return args


def main(argv: list[str] | None = None) -> None:
    args = parse_args(argv)
    if args.run:
        run_contender(args)
        return
    workdir = Path(tempfile.mkdtemp(prefix="sluice-bench-bus-"))
    kafka, bootstrap = start_kafka(workdir / "kafka", workdir / "logs")
    try:
        create_topics(bootstrap, ["bus-in", "bus-warm"])
        started = time.perf_counter()
        produce_backlog(bootstrap, "bus-in", args.events)
        if args.warm_events:
            produce_backlog(bootstrap, "bus-warm", args.warm_events)
        print(f"produced {args.events:,} events in {time.perf_counter() - started:.1f}s")
        results = Results(args.events, args.per_trigger, args.warm_events)
        measure(args, bootstrap, results)
        text = report(results)
        print(text)
        save(results, text)
    finally:
        kafka.stop()
        shutil.rmtree(workdir, ignore_errors=True)  # the broker's log: gigabytes


if __name__ == "__main__":
    main()
