"""``make bench``: Sluice's data plane measured side by side with its baselines.

Workload: JSON events of ~500 bytes in a 2-partition topic of a real Kafka broker started
for the run; the work is Kafka → filter (numeric, prefix and anything-but) → CloudEvents wrap
→ Kafka. Contenders, in one run on the same broker and the same events:

* **Sluice** - the query :mod:`pipelines` builds from a channel spec, on 1 and on 2 cores;
* **(a) plain PySpark** - the same work written by hand (2 cores);
* **(b) Python loop** - confluent-kafka consume → filter → wrap → produce (bounded);
* **(c) Kafka's limit** - Kafka's own producer and consumer performance tools.

Throughput drains a backlog; latency (p50, p99, from produce timestamp to sink timestamp)
is taken from events produced at a steady rate while each contender runs continuously.
Kafka's perf tools run first (the consumer's pass also brings the topic into the page cache
for everyone); each Spark contender then runs ``--repeat`` times (3), in rounds whose order
rotates so that no contender always goes first, and its median run is reported (a single
run on this 2-core machine varies by ±10 %).
Prints a table with the figures and the ratios, and writes them to ``bench-results/``.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import re
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from dataclasses import asdict, dataclass, field
from pathlib import Path

from confluent_kafka import Consumer, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

from bench.workload import make_event, selected
from tests.support.processes import REPO_ROOT, start_kafka

PARTITIONS = 2


@dataclass
class Throughput:
    name: str
    events: int
    seconds: float
    events_out: int | None = None
    runs: list[float] = field(default_factory=list)
    """Seconds of every run (``seconds`` is their median)."""

    @property
    def rate(self) -> float:
        return self.events / self.seconds if self.seconds else 0.0


@dataclass
class Latency:
    name: str
    samples: int
    p50_ms: float
    p99_ms: float


@dataclass
class Results:
    events: int
    event_bytes: int
    expected_out: int
    throughput: dict[str, Throughput] = field(default_factory=dict)
    latency: dict[str, Latency] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)


# -- Kafka helpers -------------------------------------------------------------------------------


def create_topic(bootstrap: str, name: str, partitions: int = PARTITIONS) -> None:
    admin = AdminClient({"bootstrap.servers": bootstrap})
    admin.create_topics([NewTopic(name, partitions, 1)])[name].result(30)


def end_offsets_total(bootstrap: str, topic: str) -> int:
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": "bench-offsets"})
    try:
        meta = consumer.list_topics(topic, timeout=10).topics[topic]
        return sum(
            consumer.get_watermark_offsets(TopicPartition(topic, p), timeout=10)[1]
            for p in meta.partitions
        )
    finally:
        consumer.close()


def produce_backlog(bootstrap: str, topic: str, count: int) -> tuple[float, int]:
    """Produce ``count`` events as fast as possible; returns (seconds, how many are selected)."""
    rng = random.Random(42)
    producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 20, "batch.size": 1_000_000})
    wanted = 0
    started = time.perf_counter()
    for seq in range(count):
        value = make_event(seq, rng)
        wanted += selected(json.loads(value))
        while True:
            try:
                producer.produce(topic, value)
                break
            except BufferError:
                producer.poll(0.05)
        if seq % 10_000 == 0:
            producer.poll(0)
    producer.flush(120)
    return time.perf_counter() - started, wanted


def produce_paced(bootstrap: str, topic: str, rate: int, seconds: float) -> int:
    """Produce ``rate`` events per second for ``seconds``; each carries its produce time."""
    rng = random.Random(7)
    producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 1})
    sent = 0
    started = time.perf_counter()
    while (elapsed := time.perf_counter() - started) < seconds:
        due = int(elapsed * rate)
        while sent < due:
            producer.produce(topic, make_event(sent, rng, int(time.time() * 1000)))
            sent += 1
        producer.poll(0)
        time.sleep(0.005)
    producer.flush(30)
    return sent


def collect_latencies(bootstrap: str, topic: str, stop: threading.Event, out: list) -> None:
    """Sink timestamp minus produce time of every event that reaches ``topic``."""
    consumer = Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": f"bench-lat-{uuid.uuid4().hex[:8]}",
            "auto.offset.reset": "earliest",
        }
    )
    consumer.subscribe([topic])
    while not stop.is_set():
        message = consumer.poll(0.2)
        if message is None or message.error():
            continue
        produced_at = json.loads(message.value())["data"]["produced_at_ms"]
        out.append(message.timestamp()[1] - produced_at)
    consumer.close()


# -- contenders ----------------------------------------------------------------------------------


def python_module(module: str, *args: str) -> list[str]:
    return [sys.executable, "-m", module, *args]


def last_json(output: str) -> dict:
    lines = [line for line in output.splitlines() if line.startswith("{")]
    if not lines:
        raise RuntimeError(f"no result from the contender:\n{output[-3000:]}")
    return json.loads(lines[-1])


def run_contender(module: str, bootstrap: str, source: str, label: str, *args: str):
    """Run a contender's module on ``source`` into a new sink topic; (its result, the sink)."""
    sink = f"out-{label}-{uuid.uuid4().hex[:6]}"
    create_topic(bootstrap, sink, 1)
    result = subprocess.run(
        python_module(module, "--bootstrap", bootstrap, "--source", source, "--sink", sink, *args),
        cwd=REPO_ROOT,
        capture_output=True,
        text=True,
        check=False,
    )
    return last_json(result.stdout + result.stderr), sink


def spark_throughput(mode: str, cores: int, bootstrap: str, source: str) -> Throughput:
    label = f"{mode}-{cores}"
    data, sink = run_contender(
        "bench.spark_job", bootstrap, source, label, "--mode", mode, "--cores", str(cores)
    )
    if "error" in data:
        raise RuntimeError(f"{mode} on {cores} cores failed: {data['error']}")
    events = end_offsets_total(bootstrap, source)
    name = f"{'Sluice' if mode == 'sluice' else '(a) plain PySpark'}, {cores} core(s)"
    return Throughput(name, events, data["seconds"], end_offsets_total(bootstrap, sink))


def loop_throughput(bootstrap: str, source: str, limit: int) -> Throughput:
    limits = ("--max-events", str(limit), "--max-seconds", "300")
    data, _ = run_contender("bench.loop", bootstrap, source, "loop", *limits)
    return Throughput("(b) Python loop", data["rows_in"], data["seconds"], data["rows_out"])


def latency(name: str, command: list[str], bootstrap: str, rate: int, seconds: float) -> Latency:
    """Run ``command`` (told its topics) continuously and time paced events through it."""
    tag = uuid.uuid4().hex[:6]
    source, sink = f"lat-in-{tag}", f"lat-out-{tag}"
    create_topic(bootstrap, source)
    create_topic(bootstrap, sink, 1)
    process = subprocess.Popen(
        [*command, "--bootstrap", bootstrap, "--source", source, "--sink", sink],
        cwd=REPO_ROOT,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
    )
    samples: list[float] = []
    stop = threading.Event()
    reader = threading.Thread(target=collect_latencies, args=(bootstrap, sink, stop, samples))
    try:
        ready = process.stdout.readline()
        if '"ready"' not in ready:
            raise RuntimeError(f"{name} did not start: {ready}")
        time.sleep(5)  # let the first (empty) batches pass
        reader.start()
        produce_paced(bootstrap, source, rate, seconds)
        time.sleep(5)  # drain
    finally:
        stop.set()
        process.wait(timeout=120)
        if reader.is_alive():
            reader.join(30)
    if len(samples) < 10:
        raise RuntimeError(f"{name}: only {len(samples)} latency samples")
    cuts = statistics.quantiles(samples, n=100)
    return Latency(name, len(samples), cuts[49], cuts[98])


def kafka_perf(bootstrap: str, source: str, events: int) -> list[Throughput]:
    """(c) Kafka's own producer and consumer perf tools on the same broker."""
    tool = ["bash", str(REPO_ROOT / "scripts" / "kafka-run-class.sh")]
    perf_topic = f"perf-{uuid.uuid4().hex[:6]}"
    create_topic(bootstrap, perf_topic)
    produced = subprocess.run(
        [
            *tool,
            "org.apache.kafka.tools.ProducerPerformance",
            *("--topic", perf_topic, "--num-records", str(events), "--record-size", "500"),
            *("--throughput", "-1", "--producer-props", f"bootstrap.servers={bootstrap}"),
            "linger.ms=20",
            "batch.size=1000000",
        ],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    match = re.findall(r"([\d.]+) records/sec", produced)
    producer_rate = float(match[-1])
    consumed = subprocess.run(
        [
            *tool,
            "org.apache.kafka.tools.ConsumerPerformance",
            *("--topic", source, "--messages", str(events), "--bootstrap-server", bootstrap),
        ],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    header, *rows = [line for line in consumed.splitlines() if "," in line]
    values = dict(zip(header.split(", "), rows[-1].split(", "), strict=False))
    consumer_rate = float(values["nMsg.sec"])
    return [
        Throughput("(c) Kafka producer perf tool", events, events / producer_rate),
        Throughput("(c) Kafka consumer perf tool", events, events / consumer_rate),
    ]


# -- report --------------------------------------------------------------------------------------


def report(results: Results) -> str:
    t = results.throughput
    lines = [
        "",
        f"Data-plane benchmark: {results.events:,} JSON events of ~{results.event_bytes} bytes, "
        f"{PARTITIONS} partitions, {os.cpu_count()} cores; {results.expected_out:,} selected",
        "",
        f"{'contender':<34}{'events':>12}{'seconds':>10}{'events/s':>12}{'out':>11}"
        "   runs (events/s)",
    ]
    order = [*(key for key, _, _ in SPARK_RUNS), "loop", "kafka-producer", "kafka-consumer"]
    for row in sorted(t.values(), key=lambda r: order.index(_key_of(t, r))):
        out = f"{row.events_out:,}" if row.events_out is not None else "-"
        runs = " ".join(f"{row.events / r:,.0f}" for r in row.runs) if len(row.runs) > 1 else ""
        lines.append(
            f"{row.name:<34}{row.events:>12,}{row.seconds:>10.1f}{row.rate:>12,.0f}{out:>11}"
            f"   {runs}".rstrip()
        )
    lines += ["", f"{'latency (paced input)':<34}{'samples':>12}{'p50 ms':>10}{'p99 ms':>12}"]
    for row in results.latency.values():
        lines.append(f"{row.name:<34}{row.samples:>12,}{row.p50_ms:>10.0f}{row.p99_ms:>12.0f}")

    def ratio(a: str, b: str, target: str = "") -> str:
        if a not in t or b not in t:
            return f"  {a} / {b}: not measured"
        value = t[a].rate / t[b].rate
        return f"  {t[a].name} / {t[b].name}: {value:.2f}x {target}".rstrip()

    lines += [
        "",
        "ratios (events/s)",
        ratio("sluice-2", "plain-2", "(target >= 0.9x)"),
        ratio("sluice-2", "loop", "(target >= 3x)"),
        ratio("sluice-2", "kafka-consumer", "(share of the broker's consume limit)"),
        ratio("sluice-2", "sluice-1", "(2 cores vs 1)"),
        *[f"  note: {note}" for note in results.notes],
    ]
    return "\n".join(lines)


def _key_of(table: dict[str, Throughput], row: Throughput) -> str:
    return next(key for key, value in table.items() if value is row)


CONTENDERS = ("sluice-1", "sluice-2", "plain-2", "loop", "kafka")
SPARK_RUNS = (("sluice-1", "sluice", 1), ("sluice-2", "sluice", 2), ("plain-2", "plain", 2))


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--events", type=int, default=int(os.environ.get("BENCH_EVENTS", 2e6)))
    parser.add_argument("--loop-events", type=int, default=300_000)
    parser.add_argument(
        "--repeat", type=int, default=3, help="runs of each Spark contender (median reported)"
    )
    parser.add_argument("--latency-rate", type=int, default=5_000)
    parser.add_argument("--latency-seconds", type=float, default=20)
    parser.add_argument("--skip-latency", action="store_true")
    parser.add_argument(
        "--contenders",
        default=",".join(CONTENDERS),
        help=f"comma-separated subset of: {', '.join(CONTENDERS)}",
    )
    args = parser.parse_args()
    args.chosen = set(args.contenders.split(","))
    unknown = args.chosen - set(CONTENDERS)
    if unknown:
        parser.error(f"unknown contenders: {', '.join(sorted(unknown))}")
    return args


def measure_throughput(args: argparse.Namespace, results: Results, bootstrap: str) -> None:
    t, source = results.throughput, "bench-in"
    if "kafka" in args.chosen:
        print("running Kafka's perf tools …", flush=True)
        t["kafka-producer"], t["kafka-consumer"] = kafka_perf(bootstrap, source, args.events)
    spark_runs = [run for run in SPARK_RUNS if run[0] in args.chosen]
    measured: dict[str, list[Throughput]] = {key: [] for key, _, _ in spark_runs}
    for round_ in range(max(args.repeat, 1)):
        shift = round_ % max(len(spark_runs), 1)  # rotate: no contender always goes first
        for key, mode, cores in spark_runs[shift:] + spark_runs[:shift]:
            print(f"running {key} (run {round_ + 1} of {args.repeat}) …", flush=True)
            run = spark_throughput(mode, cores, bootstrap, source)
            measured[key].append(run)
            if run.events_out != results.expected_out:
                results.notes.append(
                    f"{key} wrote {run.events_out:,}, expected {results.expected_out:,}"
                )
    for key, runs in measured.items():
        median = statistics.median_low(sorted(r.seconds for r in runs))
        chosen = next(r for r in runs if r.seconds == median)
        chosen.runs = [r.seconds for r in runs]
        t[key] = chosen
    if "loop" in args.chosen:
        print("running the Python loop …", flush=True)
        t["loop"] = loop_throughput(bootstrap, source, min(args.loop_events, args.events))


def measure_latency(args: argparse.Namespace, results: Results, bootstrap: str) -> None:
    spark = python_module("bench.spark_job", "--cores", "2")
    lat = ["--latency-seconds", str(args.latency_seconds + 15)]
    loop_limits = ("--max-events", "10000000", "--max-seconds", str(args.latency_seconds + 10))
    runs = (
        ("sluice-2", "Sluice, 2 cores", [*spark, "--mode", "sluice", *lat]),
        ("plain-2", "(a) plain PySpark, 2 cores", [*spark, "--mode", "plain", *lat]),
        ("loop", "(b) Python loop", python_module("bench.loop", *loop_limits)),
    )
    for key, name, command in runs:
        if key in args.chosen:
            print(f"latency of {name} …", flush=True)
            results.latency[key] = latency(
                name, command, bootstrap, args.latency_rate, args.latency_seconds
            )


def save(results: Results, text: str) -> None:
    results_dir = REPO_ROOT / "bench-results"
    results_dir.mkdir(exist_ok=True)
    stamp = time.strftime("%Y%m%dT%H%M%S")
    (results_dir / f"dataplane-{stamp}.json").write_text(
        json.dumps(asdict(results), indent=2, default=str)
    )
    (results_dir / f"dataplane-{stamp}.txt").write_text(text + "\n")


def main() -> None:
    args = parse_args()
    workdir = Path(tempfile.mkdtemp(prefix="sluice-bench-"))
    kafka, bootstrap = start_kafka(workdir / "kafka", workdir / "logs")
    try:
        create_topic(bootstrap, "bench-in")
        seconds, wanted = produce_backlog(bootstrap, "bench-in", args.events)
        print(f"produced {args.events:,} events in {seconds:.1f}s; {wanted:,} match the pattern")
        results = Results(args.events, len(make_event(0, random.Random(0))), wanted)
        measure_throughput(args, results, bootstrap)
        if not args.skip_latency:
            measure_latency(args, results, bootstrap)
        text = report(results)
        print(text)
        save(results, text)
    finally:
        kafka.stop()


if __name__ == "__main__":
    main()
