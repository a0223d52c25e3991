"""``make bench``: Sluice's data plane measured side by side with its baselines.

Workload: JSON events of ~500 bytes in a 2-partition topic of a real Kafka broker started
for the run; the work is Kafka → filter (numeric, prefix and anything-but) → CloudEvents wrap
→ Kafka. Contenders, in one run on the same broker and the same events:

* **Sluice** - the query :mod:`pipelines` builds from a channel spec, on 1 and on 2 cores;
* **(a) plain PySpark** - the same work written by hand (2 cores);
* **peers** (:mod:`bench.peers`) - the same work in Apache Flink (DataStream, local
  mini-cluster, parallelism 2) and in Kafka Streams (2 stream threads), each as shipped and
  with its durable setting (Flink checkpointing every 10 s, Kafka Streams exactly-once);
* **(b) Python loop** - confluent-kafka consume → filter → wrap → produce (bounded);
* **(c) Kafka's limit** - Kafka's own producer and consumer performance tools;
* **pass-through** (:mod:`bench.mirror`) - Kafka → Kafka with no transform: MirrorMaker 2
  (Kafka Connect's ``MirrorSourceConnector``, dedicated mode, the broker's Kafka version)
  against a Sluice pass-through channel (``json`` → ``json``) and Spark copying key and value
  (the floor of Structured Streaming), each timed from the first record it wrote to the last
  (``--only mirror`` runs these alone).

Throughput drains a backlog. Sluice, plain PySpark and the peers are timed alike, from
outside (:func:`bench.mirror.watch_drain`): events read per second from the first record
written to the sink to the last, events per CPU-second of the contender's process tree over
that window, its peak resident memory, and its start-up (launch to first record) apart.
Latency (p50, p99, from produce timestamp to sink timestamp)
is taken from events produced at a steady rate while each contender runs continuously:
Sluice as the bench runs it, Sluice polled from Python every 0.5 s in a session set up as a
runtime driver sets up a channel's, Sluice in Spark's real-time mode as the runtime drives
it (``runtime.mode: real-time`` with its default checkpoint interval, measured for a whole
interval so that one checkpoint falls inside; p99.9 and the maximum show that checkpoint's
pause), plain PySpark, Flink, Kafka Streams and the loop. The first ``--latency-warmup``
seconds of paced events are the warm-up (the first batches generate and compile their code,
the JIT has not run): their p99 is shown apart and the steady state after them is what p50 and
p99 measure. Each contender runs ``--latency-repeat`` times (3), median run by p99 reported
with the range. Kafka's perf tools run first (the consumer's pass also brings the topic into
the page cache for everyone); each Spark contender and peer then runs ``--repeat`` times (3),
in rounds whose order rotates so that no contender always goes first, and its median run is
reported (a single run on this 2-core machine varies by ±10 %).
Prints a table with the figures, each contender's settings and the ratios, and writes them to
``bench-results/``; ``--only peers`` runs Flink, Kafka Streams and Sluice on 2 cores alone
(Sluice drained in micro-batch and in real-time mode, and its real-time latency).
"""

from __future__ import annotations

import argparse
import json
import os
import random
import re
import shutil
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

from bench.mirror import Drain, counting_input, run_mm2, run_spark_pass
from bench.peers import PEERS, fetch_peer_jars, latency_command, run_peer
from bench.workload import make_event, selected
from pipelines.query import REAL_TIME_CHECKPOINT_SECONDS
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
    p999_ms: float = 0.0
    """p99.9: at 5,000 events/s, the slowest 5 events of every second."""
    max_ms: float = 0.0
    batches: dict = field(default_factory=dict)
    """Spark contenders: the median ``durationMs`` of each phase of the micro-batches that
    read rows, their median input rows (``rows``) and their number (``count``)."""
    runs: list[tuple[float, float]] = field(default_factory=list)
    """(p50, p99) of every run (``p50_ms``/``p99_ms`` are the median run's)."""
    warmup_p99_ms: float | None = None
    """p99 of the events produced during the warm-up (the first batches)."""


@dataclass
class PassThrough:
    """A drained contender's runs (:class:`bench.mirror.Drain`): a pass-through, or one doing
    the bench's work (``Results.drains``); the median by rate."""

    name: str
    runs: list[Drain] = field(default_factory=list)

    @property
    def median(self) -> Drain:
        ordered = sorted(self.runs, key=lambda run: run.rate)
        return ordered[(len(ordered) - 1) // 2]


@dataclass
class Results:
    events: int
    event_bytes: int
    expected_out: int
    throughput: dict[str, Throughput] = field(default_factory=dict)
    """The loop and Kafka's perf tools, each timed its own way."""
    drains: dict[str, PassThrough] = field(default_factory=dict)
    """Sluice, plain PySpark and the peers doing the bench's work, timed alike."""
    passthrough: dict[str, PassThrough] = field(default_factory=dict)
    settings: dict[str, str] = field(default_factory=dict)
    """Each measured contender's settings, printed beside its figures."""
    latency: dict[str, Latency] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)
    spark_conf: list[str] = field(default_factory=list)


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
    """``(produce time, sink timestamp minus produce time)`` in ms of every event that
    reaches ``topic``."""
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
        out.append((produced_at, message.timestamp()[1] - produced_at))
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


def conf_args(spark_conf: list[str]) -> list[str]:
    return [arg for setting in spark_conf for arg in ("--conf", setting)]


def loop_throughput(bootstrap: str, source: str, limit: int) -> Throughput:
    limits = ("--max-events", str(limit), "--max-seconds", "300")
    data, _ = run_contender("bench.loop", bootstrap, source, "loop", *limits)
    return Throughput("(b) Python loop", data["rows_in"], data["seconds"], data["rows_out"])


def latency(
    name: str, command: list[str], bootstrap: str, rate: int, seconds: float, warmup: float
) -> Latency:
    """Run ``command`` (told its topics) continuously and time paced events through it.

    Events are produced at ``rate`` for ``warmup + seconds``; those produced in the first
    ``warmup`` seconds warm the contender up (its first batches compile their code, the JIT
    has not run yet) and are reported apart (:attr:`Latency.warmup_p99_ms`), the rest are
    the steady state (``p50_ms``, ``p99_ms``).
    """
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
    samples: list[tuple[int, int]] = []
    stop = threading.Event()
    reader = threading.Thread(target=collect_latencies, args=(bootstrap, sink, stop, samples))
    output = ""
    try:
        ready = process.stdout.readline()
        if '"ready"' not in ready:
            raise RuntimeError(f"{name} did not start: {ready}")
        time.sleep(5)  # let the first (empty) batches pass
        reader.start()
        steady_from_ms = (time.time() + warmup) * 1000
        produce_paced(bootstrap, source, rate, warmup + seconds)
        time.sleep(5)  # drain
    finally:
        stop.set()
        try:
            output, _ = process.communicate(timeout=120)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(10)
        if reader.is_alive():
            reader.join(30)
    steady = [ms for produced, ms in samples if produced >= steady_from_ms]
    warming = [ms for produced, ms in samples if produced < steady_from_ms]
    if len(steady) < 10:
        raise RuntimeError(f"{name}: only {len(steady)} latency samples")
    cuts = statistics.quantiles(steady, n=1000)
    warm_p99 = statistics.quantiles(warming, n=100)[98] if len(warming) >= 10 else None
    lines = [line for line in output.splitlines() if line.startswith("{")]
    batches = json.loads(lines[-1]).get("batches", {}) if lines else {}
    return Latency(
        name,
        len(steady),
        cuts[499],
        cuts[989],
        p999_ms=cuts[998],
        max_ms=max(steady),
        batches=batches,
        warmup_p99_ms=warm_p99,
    )


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
    lines = [
        "",
        f"Data-plane benchmark: {results.events:,} JSON events of ~{results.event_bytes} bytes, "
        f"{PARTITIONS} partitions, {os.cpu_count()} cores; {results.expected_out:,} selected",
        *drains_table(results.drains),
        *throughput_table(results.throughput),
        *passthrough_table(results.passthrough),
        *latency_table(results.latency),
    ]
    ratios = [
        *throughput_ratios(results),
        *peer_ratios(results),
        *passthrough_ratios(results.passthrough),
        *latency_ratios(results.latency),
        *[f"  note: {note}" for note in results.notes],
    ]
    if results.spark_conf:
        ratios.append(
            f"  Spark options set in every Spark contender: {' '.join(results.spark_conf)}"
        )
    if ratios:
        lines += ["", "ratios", *ratios]
    if results.settings:
        lines += ["", "settings", *(f"  {key}: {text}" for key, text in results.settings.items())]
    return "\n".join(lines)


def mib(size: int) -> str:
    return f"{size / 2**20:,.0f}" if size else "-"


def drains_table(drains: dict[str, PassThrough]) -> list[str]:
    """Kafka → filter → CloudEvents → Kafka: Sluice, plain PySpark and the peers, drained."""
    if not drains:
        return []
    lines = [
        "",
        f"{'Kafka → filter → CloudEvents → Kafka':<38}{'events/s':>10}{'ev/CPU s':>10}"
        f"{'2nd half/s':>12}{'ev/CPU s':>10}{'JIT CPU':>9}"
        f"{'peak RSS MiB':>14}{'start-up s':>12}{'out':>10}   runs (events/s)",
    ]
    for key in sorted(drains, key=DRAIN_ORDER.index):
        row = drains[key]
        run = row.median
        runs = " ".join(f"{r.rate:,.0f}" for r in row.runs) if len(row.runs) > 1 else ""
        jit = f"{run.jit_share:.0%}" if run.jit_cpu else "-"
        lines.append(
            f"{row.name:<38}{run.rate:>10,.0f}{run.cpu_rate:>10,.0f}"
            f"{run.steady_rate:>12,.0f}{run.steady_cpu_rate:>10,.0f}{jit:>9}{mib(run.peak_rss):>14}"
            f"{run.startup:>12.1f}{run.written:>10,}   {runs}".rstrip()
        )
    return lines


def throughput_table(table: dict[str, Throughput]) -> list[str]:
    """The loop and Kafka's perf tools, each timed its own way (events over their seconds)."""
    if not table:
        return []
    lines = [
        "",
        f"{'timed by themselves':<38}{'events':>10}{'seconds':>10}{'events/s':>14}{'out':>12}",
    ]
    order = ["loop", "kafka-producer", "kafka-consumer"]
    for key in sorted(table, key=order.index):
        row = table[key]
        out = f"{row.events_out:,}" if row.events_out is not None else "-"
        lines.append(
            f"{row.name:<38}{row.events:>10,}{row.seconds:>10.1f}{row.rate:>14,.0f}{out:>12}"
        )
    return lines


def passthrough_table(p: dict[str, PassThrough]) -> list[str]:
    if not p:
        return []
    lines = [
        "",
        f"{'pass-through (Kafka → Kafka)':<38}{'events/s':>10}{'ev/CPU s':>10}"
        f"{'peak RSS MiB':>14}{'start-up s':>12}{'drain s':>10}   runs (events/s)",
    ]
    for row in p.values():
        run = row.median
        runs = " ".join(f"{r.rate:,.0f}" for r in row.runs) if len(row.runs) > 1 else ""
        lines.append(
            f"{row.name:<38}{run.rate:>10,.0f}{run.cpu_rate:>10,.0f}{mib(run.peak_rss):>14}"
            f"{run.startup:>12.1f}{run.drain:>10.1f}   {runs}".rstrip()
        )
    return lines


def latency_table(latency: dict[str, Latency]) -> list[str]:
    if not latency:
        return []
    lines = [
        "",
        f"{'latency (paced, steady state)':<38}{'samples':>8}{'p50 ms':>10}{'p99 ms':>12}"
        f"{'p99.9 ms':>10}{'max ms':>9}{'warm-up p99':>13}   batch ms  rows/batch"
        "   runs p50/p99",
    ]
    for row in latency.values():
        batch = row.batches.get("triggerExecution")
        rows = row.batches.get("rows")
        batch_text = (
            f"{batch:>11,.0f}{rows:>12,.0f}" if batch is not None else f"{'-':>11}{'-':>12}"
        )
        runs = " ".join(f"{a:.0f}/{b:.0f}" for a, b in row.runs) if len(row.runs) > 1 else ""
        warm = f"{row.warmup_p99_ms:>13,.0f}" if row.warmup_p99_ms is not None else f"{'-':>13}"
        lines.append(
            f"{row.name:<38}{row.samples:>8,}{row.p50_ms:>10.0f}{row.p99_ms:>12.0f}"
            f"{row.p999_ms:>10.0f}{row.max_ms:>9.0f}{warm}"
            f"{batch_text}   {runs}".rstrip()
        )
    return lines


def rate_of(results: Results, key: str) -> tuple[str, float] | None:
    """(name, events/s) of a contender, drained or timed by itself; None if not measured."""
    if key in results.drains:
        return results.drains[key].name, results.drains[key].median.rate
    if key in results.throughput:
        return results.throughput[key].name, results.throughput[key].rate
    return None


def throughput_ratios(results: Results) -> list[str]:
    lines = []
    for a, b, target in (
        ("sluice-2", "plain-2", "(target >= 0.9x)"),
        ("sluice-2", "loop", "(target >= 3x)"),
        ("sluice-2", "kafka-consumer", "(share of the broker's consume limit)"),
        ("sluice-2", "sluice-1", "(2 cores vs 1)"),
    ):
        x, y = rate_of(results, a), rate_of(results, b)
        if x and y:
            lines.append(f"  {x[0]} / {y[0]}: {x[1] / y[1]:.2f}x events/s {target}")
    return lines


def peer_ratios(results: Results) -> list[str]:
    """Issue 32's targets: Sluice against Flink (events/s) and Kafka Streams (events per
    CPU-second), each also against its durable setting."""
    d, lines = results.drains, []
    if "sluice-rt-2" in d:  # when each mode wins: real-time against micro-batch and the peers
        rt = d["sluice-rt-2"].median
        for key in ("sluice-2", "flink", "kstreams"):
            if key in d:
                other = d[key].median
                lines.append(
                    f"  {d['sluice-rt-2'].name} / {d[key].name}: {rt.rate / other.rate:.2f}x "
                    f"events/s, {rt.cpu_rate / other.cpu_rate:.2f}x events per CPU-second"
                )
    if "sluice-2" not in d:
        return lines
    sluice = d["sluice-2"].median
    for key, target in (("flink", " (target >= 1.0x)"), ("flink-ckpt", "")):
        if key in d:
            other = d[key].median
            lines.append(
                f"  {d['sluice-2'].name} / {d[key].name}: {sluice.rate / other.rate:.2f}x "
                f"events/s{target}, {sluice.cpu_rate / other.cpu_rate:.2f}x events per CPU-second"
            )
    for key, target in (("kstreams", " (target >= 1.0x)"), ("kstreams-eos", "")):
        if key in d:
            other = d[key].median
            lines.append(
                f"  {d['sluice-2'].name} / {d[key].name}: {sluice.cpu_rate / other.cpu_rate:.2f}x "
                f"events per CPU-second{target}, {sluice.rate / other.rate:.2f}x events/s"
            )
    for key in ("flink", "kstreams"):
        if key in d and sluice.second_half and d[key].median.second_half:
            other = d[key].median
            lines.append(
                f"  second half (warm): {d['sluice-2'].name} / {d[key].name}: "
                f"{sluice.steady_rate / other.steady_rate:.2f}x events/s, "
                f"{sluice.steady_cpu_rate / other.steady_cpu_rate:.2f}x events per CPU-second"
            )
    return lines


def latency_ratios(latency: dict[str, Latency]) -> list[str]:
    lines = []
    for a, b in (("sluice-2", "plain-2"), ("sluice-driver", "plain-2")):
        if a in latency and b in latency:
            x, y = latency[a], latency[b]
            lines.append(
                f"  {x.name} / {y.name}: p99 {x.p99_ms / y.p99_ms:.2f}x (target <= 1.1x), "
                f"p50 {x.p50_ms / y.p50_ms:.2f}x"
            )
    if "sluice-rtm" in latency:
        row = latency["sluice-rtm"]
        lines.append(
            f"  {row.name}: p99 {row.p99_ms:.0f} ms (target <= 50 ms), p99.9 {row.p999_ms:.0f} ms, "
            f"max {row.max_ms:.0f} ms (the pause at the checkpoint)"
        )
        if "flink" in latency:
            flink = latency["flink"]
            lines.append(
                f"  {row.name} / {flink.name}: p99 {row.p99_ms / flink.p99_ms:.2f}x "
                "(target <= 1.0x)"
            )
    if "sluice-2" in latency:
        row = latency["sluice-2"]
        lines.append(f"  {row.name} (micro-batch): p99 {row.p99_ms:.0f} ms (target <= 200 ms)")
    return lines


def passthrough_ratios(p: dict[str, PassThrough]) -> list[str]:
    lines = []
    for a, b in (("sluice-pass", "mm2"), ("spark-pass", "mm2"), ("sluice-pass", "spark-pass")):
        if a in p and b in p:
            x, y = p[a].median, p[b].median
            lines.append(
                f"  {p[a].name} / {p[b].name}: {x.rate / y.rate:.2f}x events/s, "
                f"{x.cpu_rate / y.cpu_rate:.2f}x events per CPU second"
            )
    return lines


SPARK_RUNS = (
    ("sluice-1", "sluice", 1),
    ("sluice-2", "sluice", 2),
    ("sluice-rt-2", "sluice", 2),
    ("plain-2", "plain", 2),
)
REAL_TIME_DRAINS = {"sluice-rt-2"}
"""Drained in real-time mode (the channel's ``runtime.mode``, checkpointing every 300 s, the
default): the query runs until the watcher has seen every event, then is stopped."""
SPARK_NAMES = {
    "sluice-1": "Sluice, 1 core",
    "sluice-2": "Sluice, 2 cores",
    "sluice-rt-2": "Sluice, real-time mode, 2 cores",
    "plain-2": "(a) plain PySpark, 2 cores",
}
SLUICE_SETTINGS = (
    "the query a channel builds (pipelines.builder), micro-batches (availableNow over the "
    "backlog), offsets checkpointed every batch (Sluice's checkpoint file manager), Sluice's Kafka "
    "sink (linger 5 ms, batch 256 KiB), driver memory 2g"
)
SPARK_SETTINGS = {
    "sluice-1": f"local[1], {SLUICE_SETTINGS}",
    "sluice-2": f"local[2], {SLUICE_SETTINGS}",
    "sluice-rt-2": "local[2], the query a channel builds in real-time mode (checkpoint every "
    "300 s), Sluice's Kafka sink (linger 5 ms, batch 256 KiB), driver memory 2g",
    "plain-2": "local[2], written by hand (from_json with a schema, a Column filter, to_json), "
    "availableNow, offsets checkpointed every batch (Spark's checkpoint file manager), Spark's "
    "default producer (linger 0, batch 16 KiB), driver memory 2g",
}
DRAIN_ORDER = ["sluice-2", "sluice-rt-2", "sluice-1", "plain-2", *PEERS]
PASS_RUNS = (
    ("mm2", "MirrorMaker 2 (2 tasks)"),
    ("sluice-pass", "Sluice pass-through, 2 cores"),
    ("spark-pass", "Spark key/value copy, 2 cores"),
)
LATENCY_ONLY = ("sluice-driver", "sluice-rtm")
LATENCY_PEERS = ("flink", "kstreams")
"""Peers whose latency is measured: the variants are throughput rows only (a transactional
sink's records are stamped when written, before their commit makes them readable, so the
sink timestamp would not show what exactly-once adds to latency)."""
CONTENDERS = (
    "sluice-1", "sluice-2", "sluice-rt-2", "plain-2", *PEERS, "loop", "kafka",
    *(key for key, _ in PASS_RUNS), *LATENCY_ONLY,
)  # fmt: skip
ONLY = {
    "mirror": {key for key, _ in PASS_RUNS},
    "latency": {"sluice-2", "plain-2", "loop", *LATENCY_ONLY, *LATENCY_PEERS},
    "peers": {"sluice-2", "sluice-rt-2", "sluice-rtm", *PEERS},
}


def driver_session_conf() -> list[str]:
    """The options a runtime driver sets in a hosted channel's session
    (:mod:`runtime_adapter.host.hosted`): its ``pollingDelay`` (the runtime's
    ``idle_poll_ms``, as the environment sets it), planning options and checkpoint file
    manager."""
    from pipelines.native import CHECKPOINT_FILE_MANAGER
    from runtime_adapter.config import RuntimeConfig
    from runtime_adapter.host.hosted import SESSION_SQL_OPTIONS

    polling = RuntimeConfig.from_env().idle_poll_ms
    options = {
        "spark.sql.streaming.pollingDelay": f"{polling}ms",
        **SESSION_SQL_OPTIONS,
        "spark.sql.streaming.checkpointFileManagerClass": CHECKPOINT_FILE_MANAGER,
    }
    return [f"{key}={value}" for key, value in options.items()]


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--events", type=int, default=int(os.environ.get("BENCH_EVENTS", 2e6)))
    parser.add_argument("--loop-events", type=int, default=300_000)
    parser.add_argument(
        "--repeat", type=int, default=3, help="runs of each Spark contender (median reported)"
    )
    parser.add_argument("--latency-rate", type=int, default=5_000)
    parser.add_argument(
        "--latency-seconds", type=float, default=40, help="steady-state seconds measured"
    )
    parser.add_argument(
        "--latency-warmup",
        type=float,
        default=30,
        help="paced seconds before the measured ones (Spark's JIT needs 20-30 s at 5,000/s)",
    )
    parser.add_argument(
        "--latency-repeat", type=int, default=3, help="latency runs of each contender (median)"
    )
    parser.add_argument(
        "--rtm-interval",
        type=float,
        default=REAL_TIME_CHECKPOINT_SECONDS,
        help="real-time mode's checkpoint interval in seconds (default: the channel's default); "
        "it is measured for this long plus 20 s",
    )
    parser.add_argument("--skip-latency", action="store_true")
    parser.add_argument(
        "--contenders",
        default=",".join(CONTENDERS),
        help=f"comma-separated subset of: {', '.join(CONTENDERS)} (default: all)",
    )
    parser.add_argument(
        "--only",
        choices=sorted(ONLY),
        help="mirror: only the pass-through contenders (MirrorMaker 2, Sluice, Spark), no "
        "latency; latency: only the latency part; peers: Flink, Kafka Streams (each with its "
        "durable variant) and Sluice on 2 cores in micro-batch and real-time mode, throughput "
        "and latency",
    )
    parser.add_argument(
        "--spark-conf",
        action="append",
        default=[],
        metavar="spark.NAME=VALUE",
        help="a Spark SQL option set in every Spark contender's session (repeatable)",
    )
    args = parser.parse_args(argv)
    args.chosen = set(args.contenders.split(","))
    unknown = args.chosen - set(CONTENDERS)
    if unknown:
        parser.error(f"unknown contenders: {', '.join(sorted(unknown))}")
    if args.only:
        args.chosen &= ONLY[args.only]
        args.skip_latency = args.only == "mirror"
        args.skip_throughput = args.only == "latency"
    else:
        args.skip_throughput = False
    return args


def measure_throughput(args: argparse.Namespace, results: Results, bootstrap: str) -> None:
    t, source = results.throughput, "bench-in"
    if "kafka" in args.chosen:
        print("running Kafka's perf tools …", flush=True)
        t["kafka-producer"], t["kafka-consumer"] = kafka_perf(bootstrap, source, args.events)
    measure_drains(args, results, bootstrap, source)
    measure_passthrough(args, results, bootstrap, source)
    if "loop" in args.chosen:
        print("running the Python loop …", flush=True)
        t["loop"] = loop_throughput(bootstrap, source, min(args.loop_events, args.events))


def measure_drains(args: argparse.Namespace, results: Results, bootstrap: str, source: str) -> None:
    """Sluice, plain PySpark and the peers doing the bench's work on the backlog, ``--repeat``
    rounds whose order rotates, each timed from outside the same way (:func:`drain_once`). A
    failed run is noted and leaves its contender's other runs."""
    keys = [key for key in DRAIN_ORDER if key in args.chosen]
    if not keys:
        return
    if any(key in PEERS for key in keys):
        fetch_peer_jars()  # built once, before the first timed run
    for key in keys:
        name = SPARK_NAMES[key] if key in SPARK_NAMES else PEERS[key].name
        results.drains[key] = PassThrough(name)
        results.settings[key] = settings_of(key)
    events = end_offsets_total(bootstrap, source)
    for round_ in range(max(args.repeat, 1)):
        shift = round_ % len(keys)  # rotate: no contender always goes first
        for key in keys[shift:] + keys[:shift]:
            print(f"running {key} (run {round_ + 1} of {args.repeat}) …", flush=True)
            try:
                drain = drain_once(key, args, bootstrap, source, events, results.expected_out)
            except RuntimeError as exc:
                print(f"  failed: {exc}", flush=True)
                results.notes.append(f"run {round_ + 1} of {key} failed: {str(exc)[:300]}")
                continue
            if drain.written != results.expected_out and not transactional(key):
                results.notes.append(
                    f"{key} wrote {drain.written:,}, expected {results.expected_out:,}"
                )
            results.drains[key].runs.append(drain)
    for key in keys:
        if not results.drains[key].runs:
            del results.drains[key]


def transactional(key: str) -> bool:
    """Whether ``key`` writes in transactions: its sink's end offsets then count a commit
    marker after each transaction, so it is drained when they reach the events expected, a
    few dozen records (under 0.1 %) before its last, and writes more offsets than events."""
    return key in PEERS and PEERS[key].transactional


def settings_of(key: str) -> str:
    """What the report prints beside a Spark contender's or a peer's figures."""
    return SPARK_SETTINGS[key] if key in SPARK_SETTINGS else PEERS[key].settings


def drain_once(
    key: str, args: argparse.Namespace, bootstrap: str, source: str, events: int, expected: int
) -> Drain:
    """One run of ``key`` into a new 1-partition sink topic, timed by
    :func:`bench.mirror.watch_drain` until the ``expected`` selected events are there."""
    sink = f"out-{key}-{uuid.uuid4().hex[:6]}"
    create_topic(bootstrap, sink, 1)
    timeout = max(300.0, events / 2_000)
    if key in PEERS:
        return run_peer(
            PEERS[key], bootstrap, source, sink, events=events, expected=expected, timeout=timeout
        )
    mode, cores = next((mode, cores) for k, mode, cores in SPARK_RUNS if k == key)
    real_time = key in REAL_TIME_DRAINS
    extra = ("--real-time", "300", "--latency-seconds", str(timeout)) if real_time else ()
    drain, _ = run_spark_pass(
        bootstrap,
        source,
        sink,
        expected,
        mode=mode,
        cores=cores,
        extra=(*extra, *conf_args(args.spark_conf)),
        timeout=timeout,
        wait=not real_time,  # a real-time query never ends by itself
    )
    return counting_input(drain, events)


def measure_passthrough(
    args: argparse.Namespace, results: Results, bootstrap: str, source: str
) -> None:
    """MirrorMaker 2, Sluice and Spark copying the backlog, ``--repeat`` rounds, rotated."""
    runs = [(key, name) for key, name in PASS_RUNS if key in args.chosen]
    if not runs:
        return
    events = end_offsets_total(bootstrap, source)
    timeout = max(300.0, events / 2_000)
    for key, name in runs:
        results.passthrough[key] = PassThrough(name)
    for round_ in range(max(args.repeat, 1)):
        shift = round_ % len(runs)
        for key, _ in runs[shift:] + runs[:shift]:
            print(f"running {key} (run {round_ + 1} of {args.repeat}) …", flush=True)
            if key == "mm2":
                drain = run_mm2(bootstrap, source, events, tasks=PARTITIONS, timeout=timeout)
            else:
                sink = f"out-{key}-{uuid.uuid4().hex[:6]}"
                create_topic(bootstrap, sink)  # as many partitions as the source, as MM2's
                mode = "sluice-pass" if key == "sluice-pass" else "plain-pass"
                extra = tuple(conf_args(args.spark_conf))
                drain, _ = run_spark_pass(
                    bootstrap, source, sink, events, mode=mode, extra=extra, timeout=timeout
                )
            results.passthrough[key].runs.append(drain)


def measure_latency(args: argparse.Namespace, results: Results, bootstrap: str) -> None:
    """Each latency contender ``--latency-repeat`` times, in rounds whose order rotates.

    Real-time mode runs as the runtime drives it (in a driver of its own, with the runtime's
    session options and progress polling) at its checkpoint interval (``--rtm-interval``, by
    default the channel's default) and is measured for a whole interval plus 20 s, so that the
    steady state holds one checkpoint: the moment one long batch ends and the next starts,
    which is where its outliers come from. A contender whose run fails is noted and left out;
    the others are still reported.
    """
    spark = python_module("bench.spark_job", "--cores", "2", *conf_args(args.spark_conf))
    interval = args.rtm_interval
    warmup = args.latency_warmup

    def lasting(seconds: float) -> list[str]:
        return ["--latency-seconds", str(5 + warmup + seconds + 10)]

    seconds = {key: args.latency_seconds for key in CONTENDERS}
    seconds["sluice-rtm"] = max(args.latency_seconds, interval + 20)
    loop_limits = (
        "--max-events", "100000000", "--max-seconds", str(5 + warmup + args.latency_seconds + 5)
    )  # fmt: skip

    def spark_job(key: str, mode: str, *extra: str) -> list[str]:
        return [*spark, "--mode", mode, *extra, *lasting(seconds[key])]

    driver_like = ("--poll", *conf_args(driver_session_conf()))
    runs = [
        ("sluice-2", "Sluice, 2 cores", spark_job("sluice-2", "sluice")),
        (
            "sluice-driver",
            "Sluice as the runtime drives it",
            spark_job("sluice-driver", "sluice", *driver_like),
        ),
        (
            "sluice-rtm",
            f"Sluice, real-time mode ({interval:.0f} s)",
            spark_job("sluice-rtm", "sluice", "--real-time", str(interval), *driver_like),
        ),
        ("plain-2", "(a) plain PySpark, 2 cores", spark_job("plain-2", "plain")),
        *(
            (key, PEERS[key].name, latency_command(PEERS[key], 5 + warmup + seconds[key] + 10))
            for key in LATENCY_PEERS
        ),
        ("loop", "(b) Python loop", python_module("bench.loop", *loop_limits)),
    ]
    runs = [run for run in runs if run[0] in args.chosen]
    if any(key in PEERS for key, _, _ in runs):
        fetch_peer_jars()
    for key, _, _ in runs:
        if key in SPARK_SETTINGS or key in PEERS:
            results.settings.setdefault(key, settings_of(key))
    measured: dict[str, list[Latency]] = {key: [] for key, _, _ in runs}
    repeat = max(args.latency_repeat, 1)
    for round_ in range(repeat):
        shift = round_ % max(len(runs), 1)
        for key, name, command in runs[shift:] + runs[:shift]:
            print(f"latency of {name} (run {round_ + 1} of {repeat}) …", flush=True)
            try:
                measured[key].append(
                    latency(name, command, bootstrap, args.latency_rate, seconds[key], warmup)
                )
            except RuntimeError as exc:  # one contender's failed run spoils only its own row
                print(f"  failed: {exc}", flush=True)
                results.notes.append(f"latency run {round_ + 1} of {name} failed: {exc}")
    for key, _, _ in runs:
        if not measured[key]:
            continue
        ordered = sorted(measured[key], key=lambda run: run.p99_ms)
        chosen = ordered[(len(ordered) - 1) // 2]
        chosen.runs = [(run.p50_ms, run.p99_ms) for run in measured[key]]
        results.latency[key] = chosen


def save(results: Results, text: str) -> None:
    results_dir = REPO_ROOT / "bench-results"
    results_dir.mkdir(exist_ok=True)
    stamp = time.strftime("%Y%m%dT%H%M%S")
    (results_dir / f"dataplane-{stamp}.json").write_text(
        json.dumps(asdict(results), indent=2, default=str)
    )
    (results_dir / f"dataplane-{stamp}.txt").write_text(text + "\n")


def main() -> None:
    argv = sys.argv[1:]
    if "--only=bus" in argv or (
        "--only" in argv and argv[argv.index("--only") + 1 :][:1] == ["bus"]
    ):
        from bench.bus import main as bus_main  # a bus against channels: bench/bus.py

        bus_main([a for a in argv if a not in ("--only=bus", "bus", "--only")])
        return
    args = parse_args()
    workdir = Path(tempfile.mkdtemp(prefix="sluice-bench-"))
    kafka, bootstrap = start_kafka(workdir / "kafka", workdir / "logs")
    try:
        create_topic(bootstrap, "bench-in")
        seconds, wanted = produce_backlog(bootstrap, "bench-in", args.events)
        print(f"produced {args.events:,} events in {seconds:.1f}s; {wanted:,} match the pattern")
        results = Results(args.events, len(make_event(0, random.Random(0))), wanted)
        results.spark_conf = list(args.spark_conf)
        if not args.skip_throughput:
            measure_throughput(args, results, bootstrap)
        if not args.skip_latency:
            measure_latency(args, results, bootstrap)
        text = report(results)
        print(text)
        save(results, text)
    finally:
        kafka.stop()
        shutil.rmtree(workdir, ignore_errors=True)  # the broker's log and the checkpoints
    if not args.only:  # the whole data-plane benchmark includes the bus, wire, discovery parts
        from bench.bus import main as bus_main
        from bench.discovery import main as discovery_main
        from bench.wire import main as wire_main

        bus_main([])
        wire_main([])
        discovery_main([])


if __name__ == "__main__":
    main()
