"""``make bench-memory``: a Sluice shared driver's memory beside Flink's and Kafka Streams'.

On a Kafka broker of its own, in one run (each contender alone on the machine, one after the
other; every process it starts is stopped, also on error):

1. **Idle footprint**: a Sluice shared driver started as the runtime starts one (the runtime
   worker's own ``spark-submit`` command line and environment, :mod:`bench.memory_driver`;
   the runtime's default ``--driver-memory`` for a shared driver, ``SLUICE_SHARED_DRIVER_MEMORY``,
   2g) with no channel and with one idle channel (the bench's Kafka → filter → CloudEvents →
   Kafka channel, :func:`bench.spark_job.sluice_spec`, on an empty 2-partition topic), and
   Flink 2.2.1 and Kafka Streams 4.3.1 (:mod:`bench.peers`, ``-Xmx1g``) each running the same
   job on an empty topic. After ``--settle`` seconds: the resident memory (RSS) of the process
   tree and of its JVM, and through the JDK's own tools (:mod:`bench.jvm`) the JVM's heap
   committed and in use (``jcmd PID GC.heap_info``), its live heap after a full GC (``jcmd PID
   GC.class_histogram``, which forces one and counts what survives), its metaspace, its heap
   ceiling and collector (``VM.flags``) and its threads by name (``Thread.print``).
2. **Busy footprint**: each contender, started anew, drains the backlog (``--events``, 1,000,000
   by default as in ``make bench``) from its first offset: peak RSS of its process tree meanwhile
   (:class:`bench.proctree.PeakRss`), events/s from the first record written to the last, then the
   same figures as when idle, once the backlog is drained.
3. **Heap per channel, and where it goes**: one shared driver hosting K idle channels
   (``--steps``, 0 1 10 20 40), each on empty topics of its own as the runtime would host them;
   after each step and ``--settle`` seconds, the same figures and a full-GC class histogram. The
   cost of a channel is the least-squares slope over the steps with at least one channel (the
   first channel's one-off cost, the difference between 0 and 1, is shown apart), and where it
   goes is the classes and packages whose live bytes grew most per channel between those steps.

Prints a table and saves it with the histograms' largest classes in ``bench-results/memory-*``
(``.txt``, ``.json``). About 7 minutes by default. ``--quick`` is a short run (200,000 events,
10 s settles, steps 0 1 5 10); ``--skip-busy`` and ``--skip-peers`` leave parts out.
Experiments: ``--fill-progress`` (every idle trigger reports its progress: each query holds
Spark's 100 recent reports within a minute), ``--sessions-only`` (the steps host each channel's
session without its query), ``--busy-max-per-trigger N`` (the busy channel drains in batches of
N: what a driver busy for a while keeps), ``--session-conf`` and ``--driver-conf``
(``spark.NAME=VALUE`` in each channel's session, on the driver's command line).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import uuid
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import Any

from bench.jvm import (
    Growth,
    Histogram,
    growth,
    jcmd,
    jvm_in,
    parse_flags,
    parse_heap_info,
    parse_histogram,
    parse_threads,
    process_rss,
    process_threads,
    slope,
    stop_group,
)
from bench.proctree import processes, tree_total
from tests.support.processes import REPO_ROOT

RESULTS_DIR = REPO_ROOT / "bench-results"
DRIVER_SCRIPT = Path(__file__).with_name("memory_driver.py")
MIB = 2**20
PARTITIONS = 2
DRIVER_START_TIMEOUT = 180.0
AFTER_GC = 3.0
"""Seconds from the full GC to the RSS read after it (G1 uncommits the regions it shrank in a
background task)."""
CHANNEL_START_TIMEOUT = 600.0
"""For every channel of a step to be started (each a query start, one after the other)."""


# -- one measurement -----------------------------------------------------------------------------


@dataclass
class Footprint:
    """One contender's memory at one moment (bytes)."""

    label: str
    rss: int
    """Resident memory of the whole process tree (Sluice: the driver's JVM and its Python)."""
    jvm_rss: int
    heap_committed: int
    heap_used: int
    """In use before the forced GC (garbage included)."""
    live_heap: int
    """What survives a full GC: the heap the contender needs."""
    metaspace: int
    """Metaspace committed (class metadata, generated code's classes among them)."""
    threads: int
    """The JVM's threads (each a stack outside the heap)."""
    rss_after_gc: int = 0
    """The tree's RSS a moment after the full GC: what G1 gave back (it shrinks the heap after
    a full GC) no longer counts, so this varies less with when the collector last ran."""
    jvm_rss_after_gc: int = 0
    heap_committed_after_gc: int = 0
    python_rss: int = 0
    peak_rss: int = 0
    """Busy runs: the most resident memory of the tree while it drained."""
    events_per_second: float = 0.0
    flags: dict[str, str] = field(default_factory=dict)
    thread_names: dict[str, int] = field(default_factory=dict)


def measure(label: str, root: int, python_pid: int = 0) -> tuple[Footprint, Histogram]:
    """``root``'s tree now: RSS, then the heap as it is (``GC.heap_info``), then a full GC's
    class histogram, and the heap and the RSS once the collector gave back what it shrank."""
    jvm = jvm_in(root)
    rss, jvm_rss = tree_total(root, processes()), process_rss(jvm)
    heap = parse_heap_info(jcmd(jvm, "GC.heap_info"))
    histogram = parse_histogram(jcmd(jvm, "GC.class_histogram"))
    time.sleep(AFTER_GC)
    after = parse_heap_info(jcmd(jvm, "GC.heap_info"))
    footprint = Footprint(
        label=label,
        rss=rss,
        jvm_rss=jvm_rss,
        heap_committed=heap.committed,
        heap_used=heap.used,
        live_heap=histogram.bytes,
        metaspace=heap.metaspace_committed,
        threads=process_threads(jvm),
        rss_after_gc=tree_total(root, processes()),
        jvm_rss_after_gc=process_rss(jvm),
        heap_committed_after_gc=after.committed,
        python_rss=process_rss(python_pid) if python_pid else 0,
        flags=parse_flags(jcmd(jvm, "VM.flags")),
        thread_names=parse_threads(jcmd(jvm, "Thread.print")),
    )
    return footprint, histogram


MARKERS = (
    "org.apache.hadoop.conf.Configuration",
    "org.apache.spark.sql.SparkSession",
    "org.apache.spark.sql.classic.SparkSession",
    "org.apache.spark.sql.internal.SessionState",
    "org.apache.spark.sql.internal.SQLConf",
    "org.apache.spark.sql.catalyst.analysis.SimpleFunctionRegistry",
    "org.apache.spark.sql.execution.streaming.MicroBatchExecution",
    "org.apache.spark.sql.execution.streaming.runtime.MicroBatchExecution",
    "org.apache.spark.sql.execution.QueryExecution",
    "org.apache.spark.sql.execution.streaming.IncrementalExecution",
    "org.apache.spark.sql.execution.streaming.runtime.IncrementalExecution",
    "org.apache.spark.sql.catalyst.QueryPlanningTracker",
    "org.apache.spark.sql.streaming.StreamingQueryProgress",
    "org.apache.kafka.clients.admin.KafkaAdminClient",
    "org.apache.kafka.clients.consumer.KafkaConsumer",
    "org.apache.kafka.clients.producer.KafkaProducer",
    "org.apache.kafka.common.metrics.KafkaMetric",
    "org.apache.kafka.common.metrics.Sensor",
)
"""Classes whose instances per channel say what a channel holds: sessions, queries, their plans
and progress reports, Hadoop configurations (a copy holds every Hadoop default: a thousand
entries in two maps), Kafka clients and their metrics (the names of Spark 4's packages and the
older ones: whichever the JVM has)."""


def markers(by_class: list[Growth]) -> dict[str, float]:
    """Instances per channel of :data:`MARKERS` (those the histograms have)."""
    found = {g.name: g.instances_per_channel for g in by_class}
    return {name.rsplit(".", 1)[1]: found[name] for name in MARKERS if name in found}


def off_heap(footprint: Footprint) -> int:
    """The JVM's resident memory outside its heap, after the GC: metaspace, code, thread stacks,
    the collector's own structures, native buffers (an estimate: the heap's committed regions
    are taken as resident)."""
    return footprint.jvm_rss_after_gc - footprint.heap_committed_after_gc


def thread_growth(first: Footprint, last: Footprint, channels: int) -> list[tuple[str, float]]:
    """The JVM threads (by name) each of ``channels`` added channels brought, most first."""
    names = set(first.thread_names) | set(last.thread_names)
    rows = [
        (name, (last.thread_names.get(name, 0) - first.thread_names.get(name, 0)) / channels)
        for name in names
    ]
    return sorted((row for row in rows if row[1] > 0), key=lambda row: -row[1])


# -- the contenders ------------------------------------------------------------------------------


class SluiceDriver:
    """A shared driver started with the runtime worker's own command line and environment,
    its driver script replaced by :mod:`bench.memory_driver`, which hosts the channels
    :meth:`host` names (its files in ``work/name``)."""

    def __init__(
        self,
        work: Path,
        bootstrap: str,
        name: str,
        session_conf: tuple[str, ...] = (),
        driver_conf: tuple[str, ...] = (),
    ) -> None:
        from runtime_adapter.config import RuntimeConfig
        from runtime_adapter.host.worker import DRIVER_SCRIPT as RUNTIME_DRIVER
        from runtime_adapter.host.worker import RuntimeWorker

        self.dir = work / name
        self.dir.mkdir(parents=True)
        config = replace(
            RuntimeConfig.from_env(),
            var_dir=self.dir / "var",
            checkpoint_root=self.dir / "checkpoints",
        )
        worker = RuntimeWorker(config, store=None)  # type: ignore[arg-type]  # its command only
        command = worker.driver_command(
            f"bench.{name}", "shared", config.channels_per_driver, f"sluice-bench-{name}"
        )
        submit = command[: command.index(str(RUNTIME_DRIVER))]
        submit += [arg for setting in driver_conf for arg in ("--conf", setting)]
        self.settings = " ".join(submit[1:])
        self.command = [
            *submit,
            str(DRIVER_SCRIPT),
            *("--control", str(self.dir), "--bootstrap", bootstrap),
            *("--checkpoints", str(self.dir / "checkpoints")),
            *(arg for setting in session_conf for arg in ("--session-conf", setting)),
        ]
        self.log_path = self.dir / "driver.log"
        self.log = self.log_path.open("wb")
        self.process = subprocess.Popen(
            self.command,
            cwd=REPO_ROOT,
            env=worker.driver_env(),
            stdout=self.log,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            start_new_session=True,
        )
        self.step = -1
        self.python_pid = 0

    def ready(self) -> None:
        """Waits until its SparkSession is up."""
        self.python_pid = self.wait(-1, 0, DRIVER_START_TIMEOUT).get("python_pid", 0)

    def host(self, channels: list[dict[str, Any]], timeout: float = CHANNEL_START_TIMEOUT) -> None:
        """Has it run ``channels`` (those it runs already and new ones); returns once they
        all run."""
        from bench.memory_driver import write_json

        self.step += 1
        write_json(self.dir / "want.json", {"step": self.step, "channels": channels})
        self.wait(self.step, len(channels), timeout)

    def wait(self, step: int, active: int, timeout: float) -> dict[str, Any]:
        deadline = time.monotonic() + timeout
        have_path = self.dir / "have.json"
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise RuntimeError(f"the Sluice driver exited:\n{self.tail()}")
            have = json.loads(have_path.read_text()) if have_path.exists() else {}
            if "error" in have:
                raise RuntimeError(f"the Sluice driver failed:\n{have['error']}")
            if have.get("step") == step and have.get("active", 0) >= active:
                return have
            time.sleep(0.2)
        raise RuntimeError(f"the Sluice driver did not reach step {step}:\n{self.tail()}")

    def tail(self) -> str:
        self.log.flush()
        return self.log_path.read_text(errors="replace")[-3000:]

    def close(self) -> None:
        from bench.memory_driver import write_json

        if self.process.poll() is None:
            write_json(self.dir / "want.json", {"stop": True})
            with contextlib.suppress(subprocess.TimeoutExpired):
                self.process.wait(60)
        stop_group(self.process)
        self.log.close()


def start_peer(key: str, bootstrap: str, source: str, sink: str, log_path: Path):
    """A peer's JVM (:func:`bench.peers.peer_command`) in a session of its own."""
    from bench.peers import PEERS, peer_command

    command = peer_command(PEERS[key], "--bootstrap", bootstrap, "--source", source, "--sink", sink)
    with log_path.open("wb") as log:
        return subprocess.Popen(
            command,
            cwd=REPO_ROOT,
            stdout=log,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            start_new_session=True,
        )


# -- the run -------------------------------------------------------------------------------------


def largest(histogram: Histogram, count: int = 20) -> list[tuple[str, int, int]]:
    """The ``count`` classes with the most live bytes: (name, instances, bytes)."""
    ordered = sorted(histogram.classes.items(), key=lambda item: -item[1][1])[:count]
    return [(name, instances, size) for name, (instances, size) in ordered]


@dataclass
class Step:
    channels: int
    footprint: Footprint
    top_classes: list[tuple[str, int, int]]
    """The histogram's largest classes: (name, instances, bytes)."""


@dataclass
class Results:
    events: int
    settle: float
    idle: list[Footprint] = field(default_factory=list)
    busy: list[Footprint] = field(default_factory=list)
    busy_classes: dict[str, list[tuple[str, int, int]]] = field(default_factory=dict)
    """Each busy run's largest classes once drained (the JSON only)."""
    steps: list[Step] = field(default_factory=list)
    per_channel: dict[str, float] = field(default_factory=dict)
    """Slopes over the steps with at least one channel: bytes (or threads) per channel."""
    first_channel: dict[str, float] = field(default_factory=dict)
    """What the first channel added to the driver with none."""
    classes: list[Growth] = field(default_factory=list)
    packages: list[Growth] = field(default_factory=list)
    all_classes: list[Growth] = field(default_factory=list)
    """Every class that grew (or shrank) by 64 bytes or more per channel (the JSON only)."""
    markers: dict[str, float] = field(default_factory=dict)
    """Instances per channel of the objects that say what a channel holds (:data:`MARKERS`)."""
    threads: list[tuple[str, float]] = field(default_factory=list)
    """The JVM's threads each channel added, by name."""
    settings: dict[str, str] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)


class Bench:
    def __init__(self, args: argparse.Namespace, work: Path, bootstrap: str) -> None:
        self.args = args
        self.work = work
        self.bootstrap = bootstrap
        self.results = Results(args.events, args.settle)
        self.suffix = uuid.uuid4().hex[:6]
        self.admin: Any = None
        self.session_conf = tuple(args.session_conf)
        self.driver_conf = tuple(args.driver_conf)
        if self.session_conf:
            self.results.settings["sluice channels' sessions, also"] = " ".join(self.session_conf)
        if self.driver_conf:
            self.results.settings["sluice drivers, also"] = " ".join(self.driver_conf)
        if args.busy_max_per_trigger:
            self.results.settings["sluice busy channel"] = (
                f"max_events_per_trigger {args.busy_max_per_trigger:,}"
            )

    def topics(self, names: list[tuple[str, int]]) -> None:
        from confluent_kafka.admin import AdminClient, NewTopic

        if self.admin is None:
            self.admin = AdminClient({"bootstrap.servers": self.bootstrap})
        futures = self.admin.create_topics([NewTopic(name, parts, 1) for name, parts in names])
        for future in futures.values():
            future.result(30)

    def channel(self, name: str) -> dict[str, Any]:
        """A new idle channel on empty topics of its own (``--sessions-only``: its session
        alone)."""
        cid = f"{name}-{self.suffix}"
        if self.args.sessions_only:
            return {"id": cid, "session_only": True}
        source, sink = f"{cid}-in", f"{cid}-out"
        self.topics([(source, PARTITIONS), (sink, 1)])
        return {"id": cid, "source": source, "sink": sink}

    def settle(self) -> None:
        time.sleep(self.args.settle)

    def sluice_steps(self) -> None:
        """Idle footprint with none and one channel, and the heap per channel (one driver)."""
        driver = SluiceDriver(
            self.work, self.bootstrap, "sluice-idle", self.session_conf, self.driver_conf
        )
        self.results.settings["sluice"] = driver.settings
        histograms: dict[int, Histogram] = {}
        try:
            driver.ready()
            channels: list[dict[str, Any]] = []
            for count in self.args.steps:
                while len(channels) < count:
                    channels.append(self.channel(f"idle-{len(channels)}"))
                started = time.monotonic()
                driver.host(channels)
                print(
                    f"Sluice driver: {count} idle channel(s) running "
                    f"({time.monotonic() - started:.1f} s to start); settling …",
                    flush=True,
                )
                self.settle()
                unit = "channel session" if self.args.sessions_only else "idle channel"
                label = f"Sluice shared driver, {count} {unit}{'s' * (count != 1)}"
                footprint, histogram = measure(label, driver.process.pid, driver.python_pid)
                print(f"  {short(footprint)}", flush=True)
                histograms[count] = histogram
                self.results.steps.append(Step(count, footprint, largest(histogram)))
                if count <= 1:
                    self.results.idle.append(footprint)
        finally:
            driver.close()
        self.per_channel(histograms)

    def per_channel(self, histograms: dict[int, Histogram]) -> None:
        steps = [step for step in self.results.steps if step.channels >= 1]
        if len(steps) >= 2:
            xs = [float(step.channels) for step in steps]
            figures = {
                "live_heap": [s.footprint.live_heap for s in steps],
                "heap_committed": [s.footprint.heap_committed for s in steps],
                "rss": [s.footprint.rss for s in steps],
                "rss_after_gc": [s.footprint.rss_after_gc for s in steps],
                "jvm_rss_after_gc": [s.footprint.jvm_rss_after_gc for s in steps],
                "heap_committed_after_gc": [s.footprint.heap_committed_after_gc for s in steps],
                "off_heap_after_gc": [off_heap(s.footprint) for s in steps],
                "python_rss": [s.footprint.python_rss for s in steps],
                "metaspace": [s.footprint.metaspace for s in steps],
                "threads": [s.footprint.threads for s in steps],
            }
            self.results.per_channel = {
                key: slope(xs, [float(v) for v in values]) for key, values in figures.items()
            }
            low, high = steps[0].channels, steps[-1].channels
            by_class = growth(histograms[low], histograms[high], high - low)
            self.results.classes = by_class[:15]
            self.results.all_classes = [g for g in by_class if abs(g.bytes_per_channel) >= 64]
            self.results.markers = markers(by_class)
            self.results.packages = growth(
                histograms[low], histograms[high], high - low, by_package=True
            )[:12]
            ends = (steps[0].footprint, steps[-1].footprint)
            self.results.threads = thread_growth(*ends, high - low)
        none = next((s.footprint for s in self.results.steps if s.channels == 0), None)
        one = next((s.footprint for s in self.results.steps if s.channels == 1), None)
        if none and one:
            self.results.first_channel = {
                key: float(getattr(one, key) - getattr(none, key))
                for key in ("live_heap", "rss", "rss_after_gc", "metaspace", "threads")
            }

    def sluice_busy(self, source: str, expected: int) -> None:
        from bench.mirror import watch_drain

        driver = SluiceDriver(
            self.work, self.bootstrap, "sluice-busy", self.session_conf, self.driver_conf
        )
        try:
            driver.ready()
            sink = f"out-sluice-{self.suffix}"
            self.topics([(sink, 1)])
            launched = time.perf_counter()
            channel: dict[str, Any] = {"id": f"busy-{self.suffix}", "source": source, "sink": sink}
            if self.args.busy_max_per_trigger:  # many batches: what a long-busy driver keeps
                channel["max_events_per_trigger"] = self.args.busy_max_per_trigger
            # The channel starts (host returns) before it has drained: the drain is watched.
            driver.host([channel])
            drain = watch_drain(
                driver.process, self.bootstrap, sink, expected, self.timeout(), launched
            )
            time.sleep(2)  # its last batch committed
            footprint, histogram = measure(
                "Sluice shared driver, 1 channel", driver.process.pid, driver.python_pid
            )
        finally:
            driver.close()
        footprint.peak_rss = drain.peak_rss
        footprint.events_per_second = self.args.events / drain.drain if drain.drain else 0.0
        self.results.busy.append(footprint)
        self.results.busy_classes[footprint.label] = largest(histogram, 40)
        print(f"  {short(footprint)}", flush=True)

    def timeout(self) -> float:
        return max(300.0, self.args.events / 2_000)

    def peer_idle(self, key: str) -> None:
        from bench.peers import PEERS

        channel = self.channel(f"idle-{key}")
        process = start_peer(
            key, self.bootstrap, channel["source"], channel["sink"], self.work / f"{key}-idle.log"
        )
        try:
            self.settle()
            if process.poll() is not None:
                raise RuntimeError(f"{key} exited: {(self.work / f'{key}-idle.log').read_text()}")
            footprint, _ = measure(f"{PEERS[key].name}, idle job", process.pid)
        finally:
            stop_group(process)
        self.results.idle.append(footprint)
        self.results.settings[key] = PEERS[key].settings
        print(f"  {short(footprint)}", flush=True)

    def peer_busy(self, key: str, source: str, expected: int) -> None:
        from bench.mirror import watch_drain
        from bench.peers import PEERS

        sink = f"out-{key}-{self.suffix}"
        self.topics([(sink, 1)])
        launched = time.perf_counter()
        log_path = self.work / f"{key}-busy.log"
        process = start_peer(key, self.bootstrap, source, sink, log_path)
        try:
            drain = watch_drain(process, self.bootstrap, sink, expected, self.timeout(), launched)
            time.sleep(2)
            footprint, histogram = measure(f"{PEERS[key].name}, drained", process.pid)
        except RuntimeError as exc:
            raise RuntimeError(f"{key}: {exc}\n{log_path.read_text()[-2000:]}") from None
        finally:
            stop_group(process)
        footprint.peak_rss = drain.peak_rss
        footprint.events_per_second = self.args.events / drain.drain if drain.drain else 0.0
        self.results.busy.append(footprint)
        self.results.busy_classes[footprint.label] = largest(histogram, 40)
        print(f"  {short(footprint)}", flush=True)


def short(footprint: Footprint) -> str:
    peak = f", peak RSS {footprint.peak_rss / MIB:.0f} MiB" if footprint.peak_rss else ""
    return (
        f"{footprint.label}: RSS {footprint.rss / MIB:.0f} MiB{peak}, live heap "
        f"{footprint.live_heap / MIB:.1f} MiB, committed {footprint.heap_committed / MIB:.0f} MiB"
    )


def run(args: argparse.Namespace, work: Path) -> Results:
    from bench.dataplane import create_topic, produce_backlog
    from bench.peers import fetch_peer_jars
    from tests.support.processes import start_kafka

    peers = [] if args.skip_peers else ["flink", "kstreams"]
    if peers:
        fetch_peer_jars()
    kafka, bootstrap = start_kafka(work / "kafka", work / "logs")
    try:
        bench = Bench(args, work, bootstrap)
        print("idle: Sluice's shared driver, 0 then more channels", flush=True)
        bench.sluice_steps()
        for key in peers:
            print(f"idle: {key}", flush=True)
            bench.peer_idle(key)
        if not args.skip_busy:
            source = f"backlog-{bench.suffix}"
            create_topic(bootstrap, source, PARTITIONS)
            seconds, expected = produce_backlog(bootstrap, source, args.events)
            print(f"produced {args.events:,} events in {seconds:.1f} s", flush=True)
            print("busy: Sluice's shared driver, one channel draining the backlog", flush=True)
            bench.sluice_busy(source, expected)
            for key in peers:
                print(f"busy: {key}", flush=True)
                bench.peer_busy(key, source, expected)
    finally:
        kafka.stop()
    return bench.results


# -- the report ----------------------------------------------------------------------------------


def mib(value: float) -> str:
    return f"{value / MIB:,.0f} MiB"


def mib1(value: float) -> str:
    return f"{value / MIB:,.1f} MiB"


def kib(value: float) -> str:
    return f"{value / 1024:,.0f} KiB"


def max_heap(footprint: Footprint) -> str:
    """The JVM's heap ceiling and collector, from its flags."""
    flags = footprint.flags
    ceiling = mib(int(flags["MaxHeapSize"])) if "MaxHeapSize" in flags else "?"
    collector = next(
        (
            name[3:-2]
            for name in ("UseG1GC", "UseParallelGC", "UseSerialGC")
            if flags.get(name) == "True"
        ),
        "",
    )
    return f"{ceiling} {collector}".strip()


def jar_names(settings: str) -> str:
    """``--jars`` paths shortened to the jars' names."""
    return re.sub(r"[^ ,]*/([^/ ,]+\.jar)", r"\1", settings)


def report(results: Results) -> str:
    lines = [
        f"Sluice memory benchmark, {time.strftime('%Y-%m-%d %H:%M:%S %Z')}, {os.cpu_count()} cores",
        *(f"settings, {key}: {jar_names(value)}" for key, value in results.settings.items()),
        "",
        f"Idle, after {results.settle:g} s settling "
        "(RSS before the forced GC; live heap: what a full GC leaves)",
        "| contender | max heap | RSS (process tree) | JVM RSS | heap committed | heap in use | "
        "live heap after full GC | RSS after GC | metaspace | JVM threads |",
        "|---|---|---|---|---|---|---|---|---|---|",
        *(
            f"| {f.label} | {max_heap(f)} | {mib(f.rss)} | {mib(f.jvm_rss)} | "
            f"{mib(f.heap_committed)} | {mib(f.heap_used)} | {mib1(f.live_heap)} | "
            f"{mib(f.rss_after_gc)} | {mib1(f.metaspace)} | {f.threads} |"
            for f in results.idle
        ),
    ]
    if results.busy:
        lines += [
            "",
            f"Busy: {results.events:,} events drained from the first offset, started anew "
            "(peak RSS while draining; the rest once drained)",
            "| contender | events/s | peak RSS | RSS after | heap committed | "
            "live heap after full GC | metaspace | JVM threads |",
            "|---|---|---|---|---|---|---|---|",
            *(
                f"| {f.label} | {f.events_per_second:,.0f} | {mib(f.peak_rss)} | {mib(f.rss)} | "
                f"{mib(f.heap_committed)} | {mib1(f.live_heap)} | {mib1(f.metaspace)} | "
                f"{f.threads} |"
                for f in results.busy
            ),
        ]
    lines += [
        "",
        "Channels in one shared driver (each idle, on empty topics of its own)",
        "| channels | RSS (tree) | heap committed | RSS after GC | JVM RSS after GC | "
        "outside the heap | Python RSS | live heap | metaspace | JVM threads |",
        "|---|---|---|---|---|---|---|---|---|---|",
        *(
            f"| {s.channels} | {mib(s.footprint.rss)} | {mib(s.footprint.heap_committed)} | "
            f"{mib(s.footprint.rss_after_gc)} | {mib(s.footprint.jvm_rss_after_gc)} | "
            f"{mib(off_heap(s.footprint))} | {mib(s.footprint.python_rss)} | "
            f"{mib1(s.footprint.live_heap)} | {mib1(s.footprint.metaspace)} | "
            f"{s.footprint.threads} |"
            for s in results.steps
        ),
    ]
    each, first = results.per_channel, results.first_channel
    if each:
        lines += [
            "",
            "Each idle channel (slope over the steps with at least one channel):",
            f"  live heap {kib(each['live_heap'])}; RSS after the GC "
            f"{mib1(each['rss_after_gc'])}: the JVM {mib1(each['jvm_rss_after_gc'])} (its heap "
            f"committed {mib1(each['heap_committed_after_gc'])}, outside the heap "
            f"{mib1(each['off_heap_after_gc'])}), its Python {mib1(each['python_rss'])}",
            f"  metaspace {kib(each['metaspace'])}, {each['threads']:.1f} JVM threads; RSS "
            f"before the GC {mib1(each['rss'])} (heap committed {mib1(each['heap_committed'])}: "
            "as the collector last sized it)",
        ]
    if first:
        lines.append(
            f"The first channel (one-off costs included): live heap {kib(first['live_heap'])}, "
            f"RSS after the GC {mib1(first['rss_after_gc'])} (before {mib1(first['rss'])}), "
            f"metaspace {kib(first['metaspace'])}, {first['threads']:.0f} JVM threads"
        )
    if results.classes:
        lines += [
            "",
            "Where a channel's live heap goes: the classes that grew most, per channel",
            "| class | bytes per channel | instances per channel |",
            "|---|---|---|",
            *(
                f"| {g.name} | {kib(g.bytes_per_channel)} | {g.instances_per_channel:,.0f} |"
                for g in results.classes
            ),
            "",
            "| package | bytes per channel | instances per channel |",
            "|---|---|---|",
            *(
                f"| {g.name} | {kib(g.bytes_per_channel)} | {g.instances_per_channel:,.0f} |"
                for g in results.packages
            ),
        ]
    if results.markers:
        lines += [
            "",
            "Objects per channel: "
            + ", ".join(f"{name} {count:,.1f}" for name, count in results.markers.items()),
        ]
    if results.threads:
        lines += [
            "",
            "JVM threads each channel adds: "
            + ", ".join(f"{name} ({count:.1f})" for name, count in results.threads[:8]),
        ]
    lines += [f"note: {note}" for note in results.notes]
    return "\n".join(lines)


def save(results: Results, text: str) -> None:
    RESULTS_DIR.mkdir(exist_ok=True)
    stamp = time.strftime("%Y%m%d-%H%M%S")
    (RESULTS_DIR / f"memory-{stamp}.txt").write_text(text + "\n")
    (RESULTS_DIR / f"memory-{stamp}.json").write_text(
        json.dumps(asdict(results), indent=2, default=str)
    )


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--events", type=int, default=1_000_000, help="the busy runs' backlog")
    parser.add_argument("--settle", type=float, default=30.0, help="seconds before measuring")
    parser.add_argument("--steps", type=int, nargs="+", default=[0, 1, 10, 20, 40])
    parser.add_argument("--quick", action="store_true", help="200,000 events, 10 s, 0 1 5 10")
    parser.add_argument("--skip-busy", action="store_true")
    parser.add_argument("--skip-peers", action="store_true")
    parser.add_argument(
        "--session-conf",
        action="append",
        default=[],
        help="spark.NAME=VALUE set in each Sluice channel's session too (an experiment)",
    )
    parser.add_argument(
        "--driver-conf",
        action="append",
        default=[],
        help="spark.NAME=VALUE added to the Sluice drivers' spark-submit (an experiment)",
    )
    parser.add_argument(
        "--busy-max-per-trigger",
        type=int,
        help="the busy Sluice channel's max_events_per_trigger (default: none, as a channel's: "
        "the backlog in one batch); small, the drain runs many batches",
    )
    parser.add_argument(
        "--sessions-only",
        action="store_true",
        help="the steps host each channel's session without its query: what a session costs",
    )
    parser.add_argument(
        "--fill-progress",
        action="store_true",
        help="every idle trigger reports progress (noDataProgressEventInterval=0): each query's "
        "recent progress is full within a minute, as an idle channel's is after ~17 minutes",
    )
    args = parser.parse_args(argv)
    if args.sessions_only:  # a look at the steps' sessions: nothing else is measured
        args.skip_busy = args.skip_peers = True
    if args.fill_progress:
        args.session_conf.append("spark.sql.streaming.noDataProgressEventInterval=0")
    if args.quick:
        args.events, args.settle, args.steps = 200_000, 10.0, [0, 1, 5, 10]
    args.steps = sorted(set(args.steps))
    return args


def main(argv: list[str] | None = None) -> None:
    args = parse_args(argv)
    work = Path(tempfile.mkdtemp(prefix="sluice-bench-memory-", dir="/var/tmp"))
    try:
        results = run(args, work)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    text = report(results)
    print("\n" + text)
    save(results, text)


if __name__ == "__main__":
    os.chdir(REPO_ROOT)
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))  # run the finally: stop the children
    main()
