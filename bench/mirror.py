"""Pass-through contenders: Kafka → Kafka with no transform, timed the same way for all.

* **MirrorMaker 2** - Kafka Connect's ``MirrorSourceConnector`` run by MM2's dedicated driver
  (``org.apache.kafka.connect.mirror.MirrorMaker``), from ``.cache/jars/connect-mirror``
  (``scripts/fetch-jars.sh connect-mirror``, Maven Central, the broker's Kafka version). Its
  ``mm2.properties`` names two cluster aliases that are both the bench's broker and replicates
  the bench topic ``T`` from one to the other: ``DefaultReplicationPolicy`` renames it
  ``<alias>.T``, a new topic on the same broker. The alias is new on every run, so the run's
  Connect group, its internal topics (offsets, configs, status) and its target topic are new
  too: each run copies the whole backlog. Heartbeats, checkpoints, offset syncs, topic-config
  and ACL syncing are off (they are MM2's own bookkeeping, not the copy); replication factor 1.
* **Sluice pass-through** - a channel ``kafka (json) → kafka (json)`` with no transforms
  (``bench.spark_job --mode sluice-pass``), drained with ``availableNow``.
* **Spark byte copy** - ``key``/``value`` straight from Spark's Kafka source to its sink
  (``--mode plain-pass``): the floor Structured Streaming itself sets.

Every contender is a child process told nothing about the clock: this module polls the
target topic's end offsets every 0.1 s and takes the time from the first record written to
the last (``drain`` rate), and from the launch to the last (``wall``, start-up included).
Each run is bounded (``timeout``) and stopped by this module; everything is on 127.0.0.1.

``python -m bench.mirror --bootstrap B --source T --events N`` runs MM2 once and prints JSON.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import uuid
from dataclasses import dataclass, replace
from pathlib import Path

from confluent_kafka import Consumer, KafkaException, TopicPartition

from bench.proctree import PeakRss
from tests.support.processes import REPO_ROOT

MM2_JARS = REPO_ROOT / ".cache" / "jars" / "connect-mirror"
MM2_LOG4J = REPO_ROOT / "bench" / "mm2-log4j2.properties"
POLL_SECONDS = 0.1


@dataclass
class Drain:
    """One pass-through run: when its first and last records reached the target topic."""

    events: int
    wall: float
    """Seconds from the launch of the process to the last record written."""
    drain: float
    """Seconds from the first record written to the last."""
    startup: float
    """Seconds from the launch to the first record written."""
    cpu: float = 0.0
    """CPU seconds (user + system) the contender's processes used from the first record
    written to the last: less swayed by other load on the machine than ``drain``."""
    peak_rss: int = 0
    """The most resident memory (bytes) of the contender's process tree from its launch to
    its last record written (:class:`bench.proctree.PeakRss`)."""
    written: int = 0
    """Records in the target topic; ``events`` is what the rates count: the same for a copy,
    the source's events for a filter (:func:`counting_input`)."""
    second_half: float = 0.0
    """Seconds from the moment the target held half its records to the last: the drain's
    second half, once the JIT has compiled the hot code and the caches are warm (a long-lived
    pipeline's steady state; a cold JVM's first seconds go largely to its JIT compiler)."""
    second_half_cpu: float = 0.0
    """CPU seconds of the process tree over :attr:`second_half`."""
    jit_cpu: float = 0.0
    """CPU seconds of the JVMs' JIT compiler threads within :attr:`cpu` (:func:`tree_cpu`)."""

    @property
    def rate(self) -> float:
        return self.events / self.drain if self.drain else 0.0

    @property
    def cpu_rate(self) -> float:
        """Events per CPU second while draining."""
        return self.events / self.cpu if self.cpu else 0.0

    @property
    def jit_share(self) -> float:
        """The share of the drain's CPU that went to compiling code (a cold JVM's JIT)."""
        return self.jit_cpu / self.cpu if self.cpu else 0.0

    @property
    def steady_rate(self) -> float:
        """Events per second over the drain's second half."""
        return self.events / 2 / self.second_half if self.second_half else 0.0

    @property
    def steady_cpu_rate(self) -> float:
        """Events per CPU second over the drain's second half."""
        return self.events / 2 / self.second_half_cpu if self.second_half_cpu else 0.0


def counting_input(drain: Drain, events: int) -> Drain:
    """``drain`` with its rates counted in the ``events`` read from the source: a contender
    that filters writes fewer records than it reads, and its rate is of the events it read
    (the drain window is still the first record written to the last)."""
    return replace(drain, events=events)


_TICK = os.sysconf("SC_CLK_TCK")


JIT_THREADS = ("C1 CompilerThre", "C2 CompilerThre")
"""How HotSpot's JIT compiler threads are named in ``/proc`` (``comm``, cut at 15 bytes)."""


def _stat_fields(text: str) -> tuple[str, list[str]]:
    """``(comm, the fields after it)`` of a ``/proc/.../stat`` line."""
    return text[text.index("(") + 1 : text.rindex(")")], text[text.rindex(")") + 2 :].split()


def _cpu_seconds(fields: list[str]) -> float:
    return (int(fields[11]) + int(fields[12])) / _TICK  # utime, stime


def tree_cpu(root: int) -> float:
    """CPU seconds (user + system) used so far by ``root`` and every process under it."""
    return tree_cpu_and_jit(root)[0]


def tree_cpu_and_jit(root: int) -> tuple[float, float]:
    """CPU seconds used so far by ``root`` and every process under it, and of that the JIT
    compiler threads' (:data:`JIT_THREADS`) of the JVMs among them."""
    parents: dict[int, int] = {}
    used: dict[int, float] = {}
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            text = stat.read_text()
        except OSError:  # gone meanwhile
            continue
        _, fields = _stat_fields(text)
        pid = int(stat.parent.name)
        parents[pid] = int(fields[1])
        used[pid] = _cpu_seconds(fields)
    total, jit, todo = 0.0, 0.0, [root]
    while todo:
        pid = todo.pop()
        total += used.get(pid, 0.0)
        jit += _jit_cpu(pid)
        todo.extend(child for child, parent in parents.items() if parent == pid)
    return total, jit


def _jit_cpu(pid: int) -> float:
    """CPU seconds of ``pid``'s JIT compiler threads (0 for a process that is not a JVM)."""
    jit = 0.0
    for stat in Path(f"/proc/{pid}/task").glob("*/stat"):
        try:
            comm, fields = _stat_fields(stat.read_text())
        except OSError:
            continue
        if comm.startswith(JIT_THREADS):
            jit += _cpu_seconds(fields)
    return jit


def mm2_properties(bootstrap: str, topic: str, alias: str, tasks: int) -> str:
    """MM2's dedicated-mode configuration: ``alias`` → ``target`` on the same broker."""
    settings = {
        "clusters": f"{alias}, target",
        f"{alias}.bootstrap.servers": bootstrap,
        "target.bootstrap.servers": bootstrap,
        f"{alias}->target.enabled": "true",
        f"{alias}->target.topics": topic,
        f"target->{alias}.enabled": "false",
        "tasks.max": str(tasks),
        # one broker: every topic MM2 creates has one replica
        "replication.factor": "1",
        "offset.storage.replication.factor": "1",
        "config.storage.replication.factor": "1",
        "status.storage.replication.factor": "1",
        "checkpoints.topic.replication.factor": "1",
        "heartbeats.topic.replication.factor": "1",
        # the copy only: no heartbeats, checkpoints, offset syncs, group/config/ACL syncing
        # (with checkpoints and offset syncs off MM2 refuses its MirrorCheckpointConnector's
        # configuration and logs it as an ERROR at start: that connector then never runs)
        "emit.heartbeats.enabled": "false",
        "emit.checkpoints.enabled": "false",
        "emit.offset-syncs.enabled": "false",
        "sync.group.offsets.enabled": "false",
        "refresh.groups.enabled": "false",
        "sync.topic.configs.enabled": "false",
        "sync.topic.acls.enabled": "false",
        # the source topic exists before MM2 starts; Connect's own defaults everywhere else
        # (producer: acks=all, linger.ms=5, batch.size=16384; consumer: max.poll.records=500)
    }
    return "".join(f"{key} = {value}\n" for key, value in settings.items())


def mm2_command(properties: Path) -> list[str]:
    return [
        "java",
        "-Xmx1g",
        f"-Dlog4j2.configurationFile={MM2_LOG4J}",
        "-cp",
        f"{MM2_JARS}/*",
        "org.apache.kafka.connect.mirror.MirrorMaker",
        str(properties),
    ]


def fetch_jars(target: str) -> None:
    """``scripts/fetch-jars.sh TARGET``: instant when its stamp is current."""
    subprocess.run(
        ["bash", str(REPO_ROOT / "scripts" / "fetch-jars.sh"), target],
        cwd=REPO_ROOT,
        check=True,
        stdout=subprocess.DEVNULL,
    )


def fetch_mm2_jars() -> None:
    """MirrorMaker 2's classpath (``connect-mirror``)."""
    fetch_jars("connect-mirror")


class EndOffsets:
    """The sum of a topic's end offsets, asked again and again with one consumer."""

    def __init__(self, bootstrap: str):
        self.consumer = Consumer(
            {"bootstrap.servers": bootstrap, "group.id": f"bench-drain-{uuid.uuid4().hex[:8]}"}
        )

    def total(self, topic: str) -> int | None:
        """None while the topic does not exist (MM2 creates its target topic itself) or its
        partitions have no leader yet."""
        try:
            meta = self.consumer.list_topics(topic, timeout=5).topics.get(topic)
            if meta is None or meta.error is not None or not meta.partitions:
                return None
            return sum(
                self.consumer.get_watermark_offsets(TopicPartition(topic, p), timeout=5)[1]
                for p in meta.partitions
            )
        except KafkaException:  # e.g. NOT_LEADER_FOR_PARTITION just after the topic is made
            return None

    def close(self) -> None:
        self.consumer.close()


def watch_drain(
    process: subprocess.Popen,
    bootstrap: str,
    target: str,
    expected: int,
    timeout: float,
    launched: float,
) -> Drain:
    """Poll ``target`` until it holds ``expected`` records (or ``timeout``, or the process
    ends); the first and last times it grew, from ``launched`` (``perf_counter``), and the
    process tree's peak resident memory meanwhile."""
    offsets = EndOffsets(bootstrap)
    memory = PeakRss(process.pid).start()
    first = last = half = None
    count = 0
    cpu_first = cpu_last = cpu_half = jit_first = jit_last = 0.0
    try:
        while time.perf_counter() - launched < timeout:
            now_count = offsets.total(target) or 0
            now = time.perf_counter()
            if now_count > count:
                cpu, jit = tree_cpu_and_jit(process.pid)
                if first is None:
                    first, cpu_first, jit_first = now, cpu, jit
                if half is None and now_count >= expected / 2:
                    half, cpu_half = now, cpu
                last, count, cpu_last, jit_last = now, now_count, cpu, jit
            if count >= expected:
                break
            if process.poll() is not None and now_count == count:
                # the process ended: one more look after it flushed, then stop
                count = offsets.total(target) or 0
                break
            time.sleep(POLL_SECONDS)
    finally:
        offsets.close()
        peak_rss = memory.stop()
    if first is None or last is None or count < expected:
        raise RuntimeError(f"{target}: {count:,} of {expected:,} records in {timeout:.0f}s")
    return Drain(
        events=count,
        wall=last - launched,
        drain=last - first,
        startup=first - launched,
        cpu=cpu_last - cpu_first,
        peak_rss=peak_rss,
        written=count,
        second_half=last - half if half is not None else 0.0,
        second_half_cpu=cpu_last - cpu_half if half is not None else 0.0,
        jit_cpu=jit_last - jit_first,
    )


def stop(process: subprocess.Popen, grace: float = 30) -> None:
    """SIGTERM (MM2 and Spark stop cleanly on it), SIGKILL after ``grace`` seconds."""
    if process.poll() is None:
        process.send_signal(signal.SIGTERM)
        try:
            process.wait(grace)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(10)


def run_mm2(bootstrap: str, source: str, expected: int, *, tasks: int = 2, timeout: float = 300):
    """One MirrorMaker 2 run copying ``source`` (``expected`` records) to a new topic."""
    fetch_mm2_jars()
    workdir = Path(tempfile.mkdtemp(prefix="sluice-bench-mm2-"))
    alias = f"m{uuid.uuid4().hex[:6]}"
    properties = workdir / "mm2.properties"
    properties.write_text(mm2_properties(bootstrap, source, alias, tasks))
    log_path = workdir / "mm2.log"
    with log_path.open("w") as log:
        launched = time.perf_counter()
        process = subprocess.Popen(
            mm2_command(properties), cwd=workdir, stdout=log, stderr=subprocess.STDOUT
        )
        try:
            return watch_drain(process, bootstrap, f"{alias}.{source}", expected, timeout, launched)
        except RuntimeError as exc:
            tail = "\n".join(log_path.read_text(errors="replace").splitlines()[-40:])
            raise RuntimeError(f"MirrorMaker 2: {exc}\n{tail}") from None
        finally:
            stop(process)
            shutil.rmtree(workdir, ignore_errors=True)


def drain_command(
    command: list[str],
    bootstrap: str,
    sink: str,
    expected: int,
    timeout: float,
    what: str,
    *,
    wait: bool = False,
) -> tuple[Drain, str]:
    """Launch ``command`` and time it filling ``sink`` with ``expected`` records
    (:func:`watch_drain`); then (``wait``) let it end by itself, and stop it. Returns the drain
    and what the process printed; a failure names ``what`` with the end of its output."""
    with tempfile.TemporaryFile("w+") as out:
        launched = time.perf_counter()
        process = subprocess.Popen(
            command, cwd=REPO_ROOT, stdout=out, stderr=subprocess.STDOUT, text=True
        )
        try:
            drain = watch_drain(process, bootstrap, sink, expected, timeout, launched)
            if wait:
                process.wait(timeout)
        except (RuntimeError, subprocess.TimeoutExpired) as exc:
            out.seek(0)
            raise RuntimeError(f"{what}: {exc}\n{out.read()[-3000:]}") from None
        finally:
            stop(process)
        out.seek(0)
        return drain, out.read()


def run_spark_pass(
    bootstrap: str,
    source: str,
    sink: str,
    expected: int,
    *,
    mode: str = "sluice-pass",
    cores: int = 2,
    extra: tuple[str, ...] = (),
    timeout: float = 300,
    wait: bool = True,
) -> tuple[Drain, dict]:
    """One Spark run (``bench.spark_job``, any ``mode``) into ``sink`` (made by the caller),
    timed until it holds ``expected`` records; then (``wait``) let it end by itself, and stop
    it."""
    command = [
        sys.executable,
        "-m",
        "bench.spark_job",
        *("--mode", mode, "--cores", str(cores)),
        *("--bootstrap", bootstrap, "--source", source, "--sink", sink),
        *extra,
    ]
    drain, output = drain_command(command, bootstrap, sink, expected, timeout, mode, wait=wait)
    lines = [line for line in output.splitlines() if line.startswith("{")]
    return drain, (json.loads(lines[-1]) if lines else {})


def main() -> None:
    parser = argparse.ArgumentParser(description="One MirrorMaker 2 pass-through run")
    parser.add_argument("--bootstrap", required=True)
    parser.add_argument("--source", required=True)
    parser.add_argument("--events", type=int, required=True)
    parser.add_argument("--tasks", type=int, default=2)
    args = parser.parse_args()
    print_drain(run_mm2(args.bootstrap, args.source, args.events, tasks=args.tasks))


def print_drain(drain: Drain) -> None:
    """One drain as the JSON line a command-line run prints, with its rates."""
    rates = {"rate": drain.rate, "cpu_rate": drain.cpu_rate, "steady_rate": drain.steady_rate}
    print(json.dumps({**drain.__dict__, **rates}), flush=True)


if __name__ == "__main__":
    os.chdir(REPO_ROOT)
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))  # run the finally: stop the child
    main()
