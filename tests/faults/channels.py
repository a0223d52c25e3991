"""Channels of the fault tests and what they delivered, read back by event id.

Events are the numbered orders of :mod:`tests.support.orders` (``seq`` is the event's id);
a channel filters the orders out of its source topic into a Kafka topic or a files folder.
"""

from __future__ import annotations

import contextlib
import json
import os
import threading
import time
import uuid
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from confluent_kafka import Consumer, Producer

from runtime_adapter.dead_letters import committed_files
from runtime_adapter.kafka import TopicReplication, create_topic
from tests.faults.conftest import MIN_ISR, REPLICATION, FaultWorld
from tests.support.orders import PATTERN, payload, selected
from tests.support.processes import wait_until

FIGURES_FILE = "SLUICE_FAULT_FIGURES"
"""The environment variable naming a file the tests append their figures to, one JSON object
per line (``bench/faults.py`` sets it; unset, nothing is written)."""


def record_figures(test: str, **figures: Any) -> None:
    """Append what ``test`` measured to the file ``SLUICE_FAULT_FIGURES`` names, if any."""
    path = os.environ.get(FIGURES_FILE)
    if path:
        with open(path, "a", encoding="utf-8") as out:
            out.write(json.dumps({"test": test, **figures}, default=str) + "\n")


def make_topic(world: FaultWorld, name: str, partitions: int = 3) -> str:
    """A topic replicated 3 times, ``min.insync.replicas`` 2 (the runtime's own factory)."""
    replication = TopicReplication(REPLICATION, MIN_ISR)
    create_topic(world.cluster.bootstrap, name, partitions=partitions, replication=replication)
    return name


def kafka_sink(world: FaultWorld, topic: str) -> dict[str, Any]:
    config = {"bootstrap_servers": world.bridge_bootstrap, "topic": topic}
    return {"type": "kafka", "config": config}


def files_sink(folder: Path) -> dict[str, Any]:
    return {"type": "files", "config": {"path": str(folder), "format": "jsonl"}}


def create_channel(
    world: FaultWorld,
    name: str,
    source: str,
    sink: dict[str, Any],
    batch_limit: int | None = None,
    runtime: dict[str, Any] | None = None,
) -> None:
    """Kafka ``source`` (from its start, through the bridge) → the orders filter → ``sink``,
    started; a micro-batch reads at most ``batch_limit`` events when given; ``runtime``: the
    spec's runtime section (a real-time channel's mode)."""
    source_config: dict[str, Any] = {
        "bootstrap_servers": world.bridge_bootstrap,
        "topics": [source],
        "starting_offsets": "earliest",
    }
    if batch_limit is not None:
        source_config["max_events_per_trigger"] = batch_limit
    spec = {
        "source": {"type": "kafka", "config": source_config},
        "transforms": [{"type": "filter", "config": {"pattern": PATTERN}}],
        "sink": sink,
    }
    if runtime is not None:
        spec["runtime"] = runtime
    body = {"name": name, "spec": spec, "target_state": "RUNNING"}
    created = world.stack.session().post(f"{world.stack.api}/channels/", json=body, timeout=30)
    assert created.status_code == 201, created.text


def start_pairs(
    world: FaultWorld, prefix: str, pairs: int, folder: Path
) -> tuple[str, dict[str, str | Path]]:
    """``pairs`` Kafka → Kafka and as many Kafka → files channels on one new source topic,
    created RUNNING: the source, and each channel's sink (its topic, or its folder)."""
    suffix = uuid.uuid4().hex[:6]
    source = make_topic(world, f"{prefix}-in-{suffix}")
    sinks: dict[str, str | Path] = {}
    for index in range(pairs):
        sinks[f"{prefix}-kafka{index}-{suffix}"] = make_topic(
            world, f"{prefix}-out{index}-{suffix}"
        )
        sinks[f"{prefix}-files{index}-{suffix}"] = folder / f"outbox{index}"
    for name, target in sinks.items():
        sink = files_sink(target) if isinstance(target, Path) else kafka_sink(world, target)
        create_channel(world, name, source, sink)
    return source, sinks


def delivered(
    world: FaultWorld, sinks: dict[str, str | Path], expected: set[int], timeout: float = 240
) -> dict[str, Counter[int]]:
    """Each channel's delivered event ids (with their counts) once every expected one is in
    its sink, or at ``timeout``."""
    found: dict[str, Counter[int]] = {}
    for name, target in sinks.items():
        if isinstance(target, Path):
            found[name] = files_seqs(target, expected, timeout=timeout)
        else:
            found[name] = kafka_seqs(world, target, expected, timeout=timeout)
    return found


def duplicates(seqs: Counter[int]) -> int:
    return sum(count - 1 for count in seqs.values())


def tally(
    found: dict[str, Counter[int]], expected: set[int]
) -> tuple[dict[str, int], dict[str, int]]:
    """Per channel: the expected events missing, and the events delivered more than once."""
    lost = {name: len(expected - seqs.keys()) for name, seqs in found.items()}
    return lost, {name: duplicates(seqs) for name, seqs in found.items()}


def assert_none_lost_files_once(
    sinks: dict[str, str | Path], lost: dict[str, int], doubled: dict[str, int]
) -> None:
    """No channel lost an event; no files sink holds one twice (Kafka sinks: at least once)."""
    assert sum(lost.values()) == 0, f"events lost per channel: {lost}"
    files_doubled = {n: d for n, d in doubled.items() if isinstance(sinks[n], Path) and d}
    assert files_doubled == {}, f"the files sink is exactly once: {files_doubled}"


def busiest(placement: dict[str, str]) -> str:
    """The worker running the most of the channels ``placement`` maps to their workers."""
    hosts = list(placement.values())
    return max(set(hosts), key=hosts.count)


def stop_channels(world: FaultWorld, names: list[str]) -> None:
    for name in names:
        world.stack.session().post(f"{world.stack.api}/channels/{name}/stop", timeout=10)


def status(world: FaultWorld, name: str) -> dict[str, Any]:
    answer = world.stack.session().get(f"{world.stack.api}/channels/{name}/status", timeout=5)
    answer.raise_for_status()
    found: dict[str, Any] = answer.json()
    return found


def wait_running(
    world: FaultWorld, names: list[str], timeout: float, avoid: str | None = None
) -> float:
    """Wait until every channel of ``names`` is RUNNING on a worker other than ``avoid``;
    the seconds it took. Fails with the statuses and the logs."""
    started = time.monotonic()

    def running() -> bool:
        found = [status(world, name) for name in names]
        return all(s["state"] == "RUNNING" and s["worker_id"] not in (None, avoid) for s in found)

    try:
        wait_until(running, timeout, interval=0.5, what=f"{names} RUNNING")
    except TimeoutError:
        states = {name: status(world, name) for name in names}
        raise AssertionError(f"not RUNNING: {states}\n{world.logs()}") from None
    return time.monotonic() - started


def wanted(stop: int) -> set[int]:
    """The event ids the filter selects among ``0 … stop - 1``."""
    return {seq for seq in range(stop) if selected(seq)}


def kafka_seqs(
    world: FaultWorld, topic: str, expected: set[int], timeout: float, settle: float = 3
) -> Counter[int]:
    """Every event id in ``topic`` (counted: duplicates show), read until all of ``expected``
    arrived and ``settle`` seconds more, or ``timeout`` seconds passed."""
    consumer = Consumer(
        {
            "bootstrap.servers": world.cluster.bootstrap,
            "group.id": f"check-{uuid.uuid4().hex}",
            "auto.offset.reset": "earliest",
            "enable.auto.commit": False,
        }
    )
    consumer.subscribe([topic])
    seqs: Counter[int] = Counter()
    deadline, settle_until = time.monotonic() + timeout, None
    try:
        while time.monotonic() < (settle_until or deadline):
            message = consumer.poll(0.5)
            if message is not None and not message.error():
                seqs[json.loads(message.value())["seq"]] += 1
            if settle_until is None and expected <= seqs.keys():
                settle_until = time.monotonic() + settle
    finally:
        consumer.close()
    return seqs


def files_seqs(folder: Path, expected: set[int], timeout: float) -> Counter[int]:
    """Every event id in the files sink's committed files (what its ``_spark_metadata`` log
    lists, as Spark's readers see them), read until all of ``expected`` are there."""

    def read() -> Counter[int]:
        if not folder.is_dir():
            return Counter()
        return Counter(
            json.loads(line)["seq"]
            for path in committed_files(folder)
            for line in path.read_text().splitlines()
            if line.strip()
        )

    deadline = time.monotonic() + timeout
    while True:
        seqs = read()
        if expected <= seqs.keys() or time.monotonic() > deadline:
            return seqs
        time.sleep(1)


@dataclass
class StateWatch:
    """Samples the channels' states every half second in a thread, until :meth:`stop`."""

    world: FaultWorld
    names: list[str]
    samples: list[tuple[float, str, str]] = field(default_factory=list)
    _done: threading.Event = field(default_factory=threading.Event)

    def __post_init__(self) -> None:
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def _run(self) -> None:
        while not self._done.wait(0.5):
            for name in self.names:
                try:
                    state = status(self.world, name)["state"]
                except Exception as exc:  # the console itself must answer throughout too
                    state = f"no answer: {exc}"
                self.samples.append((time.monotonic(), name, state))

    def stop(self) -> list[tuple[float, str, str]]:
        """Stop sampling; every sample that was not RUNNING."""
        self._done.set()
        self._thread.join(timeout=10)
        return [sample for sample in self.samples if sample[2] != "RUNNING"]


class SteadyProducer:
    """Sends the numbered events from ``start`` on to ``topic`` at about ``rate`` a second in a
    thread, until :meth:`stop`, which returns the first number not sent."""

    def __init__(self, world: FaultWorld, topic: str, start: int, rate: float = 200) -> None:
        self._producer = Producer({"bootstrap.servers": world.cluster.bootstrap, "acks": "all"})
        self._topic, self._next, self._rate = topic, start, rate
        self._done = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def _run(self) -> None:
        while not self._done.wait(1 / self._rate):
            self._producer.produce(self._topic, payload(self._next))
            self._next += 1
            self._producer.poll(0)

    def stop(self) -> int:
        self._done.set()
        self._thread.join(timeout=10)
        assert self._producer.flush(60) == 0, "Kafka did not take every steady event"
        return self._next


def status_timeline(world: FaultWorld, name: str, since: float) -> str:
    """What the status topic holds about channel ``name`` (its connector's records) and the
    workers' own records (vouches) written after wall-clock time ``since``, committed
    transactions only, in write-time order: what a failed test's message shows of the
    runtime's side (did the relays write, and when?)."""
    from confluent_kafka import KafkaError, TopicPartition

    from runtime_adapter.group.status import VOUCH_PREFIX

    topic = world.stack.env["SLUICE_RUNTIME_STATUS_TOPIC"]
    reader = Consumer(
        {
            "bootstrap.servers": world.cluster.bootstrap,
            "group.id": f"fault-timeline-{uuid.uuid4().hex[:6]}",
            "enable.partition.eof": True,
            "isolation.level": "read_committed",
            "enable.auto.commit": False,
        }
    )
    lines: list[tuple[float, str]] = []
    try:
        partitions = reader.list_topics(topic, timeout=10).topics[topic].partitions
        reader.assign([TopicPartition(topic, p, 0) for p in partitions])
        pending, deadline = set(partitions), time.monotonic() + 30
        while pending and time.monotonic() < deadline:
            message = reader.poll(0.5)
            if message is None:
                continue
            error = message.error()
            if error is not None:
                if error.code() == KafkaError._PARTITION_EOF:
                    pending.discard(message.partition())
                continue
            key = (message.key() or b"").decode()
            at = message.timestamp()[1] / 1000
            if at < since or not (key == name or key.startswith(VOUCH_PREFIX)):
                continue
            value = json.loads(message.value()) if message.value() else None
            body = (value or {}).get("status", {})
            what = (
                "tombstone"
                if value is None
                else f"gen {value.get('generation')} "
                + (
                    f"vouches {name}: {any(name in ids for ids in body.get('ages', {}).values())}"
                    if key.startswith(VOUCH_PREFIX)
                    else f"{body.get('state')} reporting={body.get('reporting')}"
                )
            )
            stamp = time.strftime("%H:%M:%S", time.gmtime(at)) + f".{int(at * 1000) % 1000:03d}"
            lines.append((at, f"{stamp} {message.partition()}/{message.offset()} {key} {what}"))
    finally:
        reader.close()
    return "\n".join(line for _, line in sorted(lines)) or "(nothing written)"


def dump_worker_threads(world: FaultWorld) -> None:
    """Have every runtime worker write its threads' stacks to its log (``kill -USR1``, see
    ``runtime_adapter.host.worker.main``): what a failed test leaves of what they were
    doing."""
    import signal

    for host in world.hosts.values():
        for pid in host.pids():
            try:
                cmdline = Path(f"/proc/{pid}/cmdline").read_bytes()
            except OSError:
                continue
            if b"runtime_adapter.host.worker" in cmdline and b"ip\x00netns" not in cmdline:
                with contextlib.suppress(ProcessLookupError):
                    os.kill(pid, signal.SIGUSR1)
    time.sleep(1)
