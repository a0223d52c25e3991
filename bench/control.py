"""``make bench-control``: how fast the control plane sees and does things (issue 4 targets).

Two parts, each printed as a table of figures beside its target and saved in bench-results/:

* **database** (in-process Django on a throwaway PostgreSQL, the production database): one
  reconcile pass with N channels (default 1,000) and a simulated runtime reporting every
  connector RUNNING with 4 tasks whose offsets move each pass; one
  ``GET /api/v1/channels/?expand=status`` (the default page of 50, and all N at once).
* **live** (the real stack: Redis, Kafka, web, Celery worker and beat, two runtime workers,
  with the production reconcile interval): create → RUNNING with a cold driver; resume from
  PAUSED → RUNNING; ``kill -9`` of a driver → FAILED in the API; ``kill -9`` of the runtime
  worker hosting a channel → RUNNING on the other worker.

Targets: failure visible ≤ 5 s, resume ≤ 2 s, reconcile of 1,000 channels ≤ 1 s, list with
status ≤ 200 ms. Each live figure is the median of ``--repeat`` runs (worker death: one run).

A third part, **rules** (``--part rules``; in ``all`` too): a rule added to a running bus →
its first matching event delivered (issue 15's target: ≤ 2 batches, or a resume with no event
lost), on the real stack with events flowing all along. Measured from the ``start`` that
deploys the new revision to the first event of the new rule's target topic read by a consumer,
in seconds and in micro-batches (the batch running when the revision was deployed, from the
query's checkpoint, to the batch that had started when the event was read).
"""

from __future__ import annotations

import argparse
import contextlib
import gc
import json
import os
import signal
import statistics
import sys
import tempfile
import threading
import time
import uuid
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from bench import stack
from bench.stack import django_on_postgres
from tests.support.processes import REPO_ROOT
from tests.support.stack import kill_driver

RESULTS_DIR = REPO_ROOT / "bench-results"
TASKS_PER_CONNECTOR = 4
CHANNEL_SPEC = {
    "source": {"type": "generator", "config": {"rate": 5}},
    "transforms": [],
    "sink": {"type": "preview", "config": {"max_events": 10}},
}


@dataclass
class Figure:
    name: str
    seconds: float
    target: float | None = None
    runs: int = 1
    note: str = ""
    unit: str = "s"
    """``s`` (``seconds`` is a duration), ``batches`` (a count of micro-batches) or ``core``
    (a share of one CPU core)."""

    @property
    def verdict(self) -> str:
        if self.target is None:
            return ""
        return "met" if self.seconds <= self.target else "NOT met"

    def row(self) -> str:
        if self.unit == "s":
            show = _duration
        elif self.unit == "core":
            show = lambda n: f"{n * 100:.1f} % core"  # noqa: E731
        else:
            show = lambda n: f"{n:g} {self.unit}"  # noqa: E731
        target = f"≤ {show(self.target)}" if self.target is not None else "—"
        ratio = f"{self.seconds / self.target:.2f}x target" if self.target else ""
        return (
            f"{self.name:<52} {show(self.seconds):>10}  {target:>9}  {ratio:>13}  "
            f"{self.verdict:<7} {self.note}"
        )


def _duration(seconds: float) -> str:
    return f"{seconds * 1000:.0f} ms" if seconds < 1 else f"{seconds:.2f} s"


# -- database part -------------------------------------------------------------------------


class SimulatedRuntime:
    """A runtime adapter whose workers and connectors are all alive and RUNNING."""

    def __init__(self, workers: Iterable[str]) -> None:
        from runtime_adapter.base import WorkerInfo

        now = time.time()
        self.worker_infos = [WorkerInfo(w, "bench", 1, now, now) for w in workers]
        self.assigned: dict[str, str | None] = {}
        self.generation: dict[str, int] = {}
        self.pass_number = 0

    def deploy(self, deployment: Any) -> None:
        self.assigned.setdefault(deployment.connector_id, deployment.worker_id)

    places = False

    def assign(self, connector_id: str, worker_id: str | None) -> None:
        self.assigned[connector_id] = worker_id

    def owners(self, connector_ids: Iterable[str]) -> dict[str, str | None]:
        return {c: self.assigned[c] for c in connector_ids if c in self.assigned}

    def set_draining(self, worker_ids: set[str]) -> None:
        pass

    def set_target_state(self, connector_id: str, target_state: Any) -> None:
        pass

    def restart(self, connector_id: str) -> int:
        self.generation[connector_id] = self.generation.get(connector_id, 0) + 1
        return self.generation[connector_id]

    def delete(self, connector_id: str) -> None:
        self.assigned.pop(connector_id, None)

    def deploy_many(self, deployments: list[Any]) -> None:
        for deployment in deployments:
            self.deploy(deployment)

    def set_target_states(self, connector_ids: list[str], target_state: Any) -> None:
        pass

    def restart_many(self, connector_ids: list[str]) -> dict[str, int]:
        return {connector_id: self.restart(connector_id) for connector_id in connector_ids}

    def delete_many(self, connector_ids: list[str]) -> None:
        for connector_id in connector_ids:
            self.delete(connector_id)

    def workers(self) -> list[Any]:
        now = time.time()
        return [replace(info, last_heartbeat=now) for info in self.worker_infos]

    def forget_worker(self, worker_id: str) -> None:
        pass

    def drivers(self) -> list[Any]:
        return []  # no worker is draining here: nothing waits on a driver

    def preview(self, connector_id: str, limit: int = 50) -> list[dict]:
        return []

    def take_samples(self, connector_ids: Iterable[str]) -> dict[str, list[dict]]:
        return {}

    def status(self, connector_ids: Iterable[str]) -> dict[str, Any]:
        self.pass_number += 1
        return {
            cid: self.running(cid, self.pass_number * 100)
            for cid in connector_ids
            if self.assigned.get(cid) is not None
        }

    def running(self, cid: str, moved: int) -> Any:
        """``cid`` RUNNING on its worker, its tasks' offsets at ``moved``."""
        from runtime_adapter.base import ConnectorStatus, TaskStatus
        from runtime_adapter.states import State

        worker = self.assigned[cid]
        tasks = [
            TaskStatus(task, State.RUNNING, worker, "orders", task, moved, moved + 10, 10, 5.0)
            for task in range(TASKS_PER_CONNECTOR)
        ]
        return ConnectorStatus(
            cid,
            State.RUNNING,
            worker,
            self.generation.get(cid, 0),
            "",
            time.time(),
            tasks,
            report_interval=10.0,
        )

    feed: Any = None

    def status_feed(self) -> Any:
        return self.feed

    epoch: str | None = None

    def desired_summary(self) -> Any:
        from runtime_adapter.base import DesiredSummary

        return DesiredSummary(self.epoch, len(self.assigned))

    def desired_connectors(self) -> set[str]:
        return set(self.assigned)

    def restore(self, restorations: list[Any]) -> None:
        for restoration in restorations:
            self.deploy(restoration.deployment)

    def set_epoch(self, token: str) -> None:
        self.epoch = token


class SimulatedFeed:
    """The status feed of a runtime group at steady state, one read per pass (a second of
    simulated time): ``changed`` connectors with news each second (their offsets moved), and
    each worker's vouch for all of its connectors every 5 s (half the report interval)."""

    def __init__(self, runtime: SimulatedRuntime, changed: int) -> None:
        self.runtime, self.changed = runtime, changed
        self.ids = sorted(runtime.assigned)
        self.reads = 0
        self.pending: list[Any] = []
        """News the next read brings as well (a stop, a start)."""

    def read(self, cursor: Any, *, budget: float = 0.5) -> Any:
        from runtime_adapter.base import FeedBatch, StatusNews, Vouch

        self.reads += 1
        start = (self.reads * self.changed) % len(self.ids)
        chosen = (self.ids * 2)[start : start + self.changed]
        news = [
            StatusNews(cid, self.runtime.running(cid, self.reads * 100), True, 1) for cid in chosen
        ]
        news += self.pending
        self.pending = []
        vouches = []
        if self.reads % 5 == 0:
            by_worker: dict[str, set[str]] = {}
            for cid, worker in self.runtime.assigned.items():
                by_worker.setdefault(worker or "", set()).add(cid)
            vouches = [
                Vouch(worker, dict.fromkeys(ids, 1.0), 10.0, 1, at=time.time())
                for worker, ids in by_worker.items()
            ]
        return FeedBatch(news, vouches, {0: self.reads}, True)


def database_figures(channels: int, repeat: int, work: Path) -> list[Figure]:
    with django_on_postgres(work):
        return _measure_database(channels, repeat)


def _loop_share(
    runtime: SimulatedRuntime, seconds: int, start: float
) -> tuple[float, float, float, float]:
    """Run one pass a second of simulated time for ``seconds`` (resyncs and fleet health
    refreshes included), after one pass not measured (the first after a change of mode reads
    everything): the CPU seconds per second (a share of one core, for this process's Python
    and Django; the database's own is not counted), the median pass's CPU, the median CPU of
    the passes that refreshed the fleet's health levels (every 5 s), and the slowest pass's
    wall time. The loop's clock starts at ``start`` (after the passes already made) and goes
    on a second a pass, whatever the wall clock says."""
    from console import services

    services.reconcile(now=start - 1)
    cpu, walls = [], []
    for n in range(seconds):
        began, wall = time.process_time(), time.perf_counter()
        services.reconcile(now=start + n)
        cpu.append(time.process_time() - began)
        walls.append(time.perf_counter() - wall)
    fleet = statistics.median(cpu[n] for n in range(0, seconds, 5))
    return sum(cpu) / seconds, statistics.median(cpu), fleet, max(walls)


RELAY_INTERVAL = 0.5
"""Seconds between two writes of a worker's status relay (``StatusRelay.interval``)."""


def _seen_in_status(runtime: SimulatedRuntime, feed: SimulatedFeed, now: float) -> list[float]:
    """A user's stop, then start, of one channel of the fleet, each reported by the runtime
    through the feed: the wall time of the pass that reads the report (the channel's state
    checked after it), for each."""
    from dataclasses import replace as with_changes

    from console import services
    from console.models import Channel, Connector, ConnectorState
    from runtime_adapter.base import StatusNews
    from runtime_adapter.states import State

    channel = Channel.objects.get(name="bench-0000")
    cid = Connector.objects.get(channel=channel).runtime_id
    walls = []
    for act, reported, shown in (
        (services.stop_channel, State.STOPPED, ConnectorState.STOPPED),
        (services.start_channel, State.RUNNING, ConnectorState.RUNNING),
    ):
        act(channel)
        runtime.generation[cid] = Connector.objects.get(runtime_id=cid).generation
        status = with_changes(runtime.running(cid, 1), state=reported, tasks=[])
        feed.pending.append(StatusNews(cid, status, True, 1))
        began = time.perf_counter()
        services.reconcile(now=now)
        walls.append(time.perf_counter() - began)
        now += 1
        state = Connector.objects.get(runtime_id=cid).state
        if state != shown:
            raise AssertionError(f"after {act.__name__} and its report: {state}, not {shown}")
    return walls


def _measure_database(channels: int, repeat: int) -> list[Figure]:
    from django.contrib.auth import get_user_model
    from django.test import Client

    from console import services
    from console.runtime import set_runtime

    runtime = SimulatedRuntime(["bench-w1", "bench-w2"])
    set_runtime(runtime)
    started = time.perf_counter()
    for n in range(channels):
        channel = services.create_channel(name=f"bench-{n:04d}", spec=CHANNEL_SPEC)
        services.start_channel(channel)
    setup = time.perf_counter() - started
    print(f"  {channels} channels created and started in {setup:.1f} s", flush=True)

    # What the Celery worker does at its start (console/celery.py): the heap so far, Django's
    # and this bench's setup (the simulated runtime, another process in production), is out
    # of the garbage collector's sight; full collections scan what the passes make.
    gc.collect()
    gc.freeze()
    first = _timed(services.reconcile)
    steady = [_timed(services.reconcile) for _ in range(repeat)]
    from console.permissions import VIEWER, grant_role

    user = get_user_model().objects.create_user("bench", password="bench-password")
    grant_role(user, VIEWER)
    client = Client(HTTP_HOST="localhost")
    client.force_login(user)

    def list_with_status(query: str) -> Callable[[], None]:
        def call() -> None:
            response = client.get(f"/api/v1/channels/?expand=status{query}")
            assert response.status_code == 200, response.content[:500]

        return call

    page = [_timed(list_with_status("")) for _ in range(repeat)]
    everything = [_timed(list_with_status(f"&limit={channels}")) for _ in range(repeat)]
    note = f"{channels} channels, {channels * TASKS_PER_CONNECTOR} tasks"

    # The same fleet placed by the runtime group, the loop following its status feed: 1 % of
    # the channels with news each second (busy ones moving their offsets), vouches for all.
    changed = max(1, channels // 100)
    start = time.time() + 3600
    share_all, median_all, fleet_all, slowest_all = _loop_share(runtime, 60, start)
    runtime.places = True
    runtime.feed = SimulatedFeed(runtime, changed)
    share_feed, median_feed, fleet_feed, slowest_feed = _loop_share(runtime, 60, start + 61)
    stop_pass, start_pass = _seen_in_status(runtime, runtime.feed, start + 122)
    from django.conf import settings

    schedule = float(settings.SLUICE_RECONCILE_INTERVAL)
    loop_note = "60 passes, 1 a second; CPU of the loop's process, not the database's"
    seen_note = (
        f"at most: the relay's {RELAY_INTERVAL} s, the {schedule:g} s schedule and the pass "
        f"that reads it ({{:.2f}} s measured)"
    )
    return [
        Figure(f"reconcile pass, first (places {channels})", first, 1.0, 1, note),
        Figure("reconcile pass, steady (offsets moved)", statistics.median(steady), 1.0, repeat),
        Figure("GET ?expand=status, default page (50)", statistics.median(page), 0.2, repeat),
        Figure(
            f"GET ?expand=status, all {channels}",
            statistics.median(everything),
            None,
            repeat,
            "no target: the API pages by 50",
        ),
        Figure(
            "control loop, every status read each pass: CPU share",
            share_all,
            0.10,
            60,
            f"{loop_note}; median pass {median_all:.2f} s CPU, with the fleet's health "
            f"{fleet_all:.2f} s, slowest {slowest_all:.2f} s",
            unit="core",
        ),
        Figure(
            f"control loop, following the status feed ({changed} news/s): CPU share",
            share_feed,
            0.10,
            60,
            f"{loop_note}; median pass {median_feed * 1000:.0f} ms CPU, with the fleet's health "
            f"{fleet_feed * 1000:.0f} ms, slowest {slowest_feed:.2f} s",
            unit="core",
        ),
        Figure(
            "a stop seen in status, following the feed",
            RELAY_INTERVAL + schedule + stop_pass,
            2.0,
            1,
            seen_note.format(stop_pass),
        ),
        Figure(
            "a start seen in status, following the feed",
            RELAY_INTERVAL + schedule + start_pass,
            2.0,
            1,
            seen_note.format(start_pass),
        ),
    ]


def _timed(call: Callable[[], Any]) -> float:
    started = time.perf_counter()
    call()
    return time.perf_counter() - started


# -- live part -----------------------------------------------------------------------------


@contextlib.contextmanager
def live_stack(work: Path, runtime_workers: int = 1) -> Iterator[Any]:
    """The whole stack (:func:`bench.stack.live_stack`) reconciling every 2 s."""
    with stack.live_stack(
        work, runtime_workers, extra_env={"SLUICE_RECONCILE_INTERVAL": "2"}
    ) as running:
        yield running


def live_figures(repeat: int, work: Path) -> list[Figure]:
    with live_stack(work, runtime_workers=2) as stack:
        return _measure_live(stack, repeat)


def _measure_live(stack: Any, repeat: int) -> list[Figure]:
    http = stack.session()

    def status(name: str) -> dict[str, Any]:
        return http.get(f"{stack.api}/channels/{name}/status", timeout=5).json()

    def until(name: str, check: Callable[[dict[str, Any]], bool], timeout: float) -> float:
        started = time.perf_counter()
        while time.perf_counter() - started < timeout:
            if check(status(name)):
                return time.perf_counter() - started
            time.sleep(0.05)
        raise TimeoutError(f"{name}: last status {status(name)}\n{stack.logs()}")

    def post(path: str, body: dict[str, Any] | None = None) -> None:
        response = http.post(f"{stack.api}/{path}", json=body, timeout=10)
        assert response.status_code in (201, 202), response.text

    running = lambda s: s["state"] == "RUNNING"  # noqa: E731
    cold, resume, failure = [], [], []
    for n in range(repeat):
        name = f"control-{n}"
        started = time.perf_counter()
        post(
            "channels/",
            {
                "name": name,
                "spec": CHANNEL_SPEC,
                "target_state": "RUNNING",
                "restart_policy": {"type": "never"},
            },
        )
        cold.append(time.perf_counter() - started + until(name, running, 180))
        print(f"  {name}: create → RUNNING {cold[-1]:.1f} s", flush=True)

        post(f"channels/{name}/pause")
        until(name, lambda s: s["state"] == "PAUSED", 60)
        started = time.perf_counter()
        post(f"channels/{name}/resume")
        resume.append(time.perf_counter() - started + until(name, running, 60))
        print(f"  {name}: resume → RUNNING {resume[-1]:.2f} s", flush=True)

        kill_driver(stack, name)
        failure.append(until(name, lambda s: s["state"] == "FAILED", 60))
        print(f"  {name}: kill -9 driver → FAILED {failure[-1]:.2f} s", flush=True)
        post(f"channels/{name}/stop")

    name = "control-moved"
    post("channels/", {"name": name, "spec": CHANNEL_SPEC, "target_state": "RUNNING"})
    until(name, running, 180)
    host = status(name)["worker_id"]
    role = "runtime-" + host.rsplit("-", 1)[1]
    started = time.perf_counter()
    os.kill(stack.services[role].process.pid, signal.SIGKILL)
    moved = until(name, lambda s: s["state"] == "RUNNING" and s["worker_id"] != host, 240)
    print(f"  {name}: kill -9 of worker {host} → RUNNING elsewhere {moved:.1f} s", flush=True)
    timeout = float(stack.env.get("SLUICE_WORKER_SESSION_TIMEOUT", "10"))
    return [
        Figure("create → RUNNING (warm shared driver)", statistics.median(cold), None, repeat),
        Figure("resume from PAUSED → RUNNING", statistics.median(resume), 2.0, repeat),
        Figure("kill -9 of a driver → FAILED in the API", statistics.median(failure), 5.0, repeat),
        Figure(
            "kill -9 of a runtime worker → RUNNING elsewhere",
            moved,
            None,
            1,
            f"includes the {timeout:.0f} s session timeout and a cold driver",
        ),
    ]


# -- rules part: a rule added to a running bus -------------------------------------------


def _with_progress(read: Any, timeout: float = 30.0) -> Any:
    """The first status ``read()`` gives with a progress report (a status written between
    two batches of a query that has just taken a revision may have none yet)."""
    deadline = time.monotonic() + timeout
    while (status := read()) is None or status.progress is None:
        if time.monotonic() > deadline:
            raise TimeoutError("the bus reported no progress")
        time.sleep(0.1)
    return status


BUS_RATE = 400
"""Events per second the bus reads while rules are added (one in three matches a new rule)."""


def rule_figures(repeat: int, work: Path) -> list[Figure]:
    with live_stack(work) as stack:
        return _measure_rule_added(stack, repeat, work / "var" / "checkpoints")


class SteadyEvents:
    """Sends the order stream (tests.support.orders) at :data:`BUS_RATE` events/s until
    stopped."""

    def __init__(self, bootstrap: str, topic: str) -> None:
        from confluent_kafka import Producer

        self.producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 5})
        self.topic = topic
        self.stopping = threading.Event()
        self.thread = threading.Thread(target=self.run, daemon=True)
        self.thread.start()

    def run(self) -> None:
        from tests.support.orders import payload

        seq, started = 0, time.monotonic()
        while not self.stopping.is_set():
            due = int((time.monotonic() - started) * BUS_RATE)
            while seq < due:
                self.producer.produce(self.topic, payload(seq))
                seq += 1
            self.producer.poll(0)
            time.sleep(0.01)
        self.producer.flush(30)

    def stop(self) -> None:
        self.stopping.set()
        self.thread.join(60)


def _batch_starts(checkpoint: Path) -> dict[int, float]:
    """Each micro-batch's start (Unix seconds) from the query's checkpoint offset log."""
    starts: dict[int, float] = {}
    offsets = checkpoint / "offsets"
    for path in offsets.iterdir() if offsets.is_dir() else []:
        if path.name.isdigit():
            with contextlib.suppress(OSError, ValueError, IndexError):
                meta = json.loads(path.read_text().splitlines()[1])
                starts[int(path.name)] = meta["batchTimestampMs"] / 1000
    return starts


def _batch_at(starts: dict[int, float], moment: float) -> int:
    """The id of the batch that had started last at ``moment``."""
    return max((batch for batch, start in starts.items() if start <= moment), default=-1)


def _first_arrival(bootstrap: str, topic: str, timeout: float) -> float:
    """When the first record of ``topic`` is read (Unix seconds); polled every 10 ms."""
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
    deadline = time.monotonic() + timeout
    try:
        while time.monotonic() < deadline:
            message = consumer.poll(0.01)
            if message is not None and not message.error():
                return time.time()
    finally:
        consumer.close()
    raise TimeoutError(f"nothing arrived in {topic} within {timeout:g} s")


def _measure_rule_added(stack: Any, repeat: int, checkpoints: Path) -> list[Figure]:
    from confluent_kafka.admin import AdminClient, NewTopic

    from runtime_adapter.store import RedisStore

    http = stack.session()
    store = RedisStore.from_url(stack.redis_url, stack.env.get("SLUICE_REDIS_PREFIX", "sluice"))
    suffix = uuid.uuid4().hex[:6]
    name, source = f"bus-{suffix}", f"bus-in-{suffix}"
    targets = [f"bus-out-{n}-{suffix}" for n in range(repeat + 1)]
    admin = AdminClient({"bootstrap.servers": stack.kafka})
    made = admin.create_topics([NewTopic(source, 2, 1)] + [NewTopic(t, 1, 1) for t in targets])
    for future in made.values():
        future.result(timeout=30)

    def rule(n: int, kind: str) -> dict[str, Any]:
        sink = {"bootstrap_servers": stack.kafka, "topic": targets[n]}
        pattern = {"data": {"kind": [kind]}}
        return {
            "name": f"rule-{n}",
            "pattern": pattern,
            "sinks": [{"type": "kafka", "config": sink}],
        }

    def spec(rules: list[dict[str, Any]]) -> dict[str, Any]:
        return {
            "source": {
                "type": "kafka",
                "config": {"bootstrap_servers": stack.kafka, "topics": [source]},
            },
            "rules": rules,
        }

    def running() -> Any:
        return store.statuses([name]).get(name)

    rules = [rule(0, "order")]
    body = {"name": name, "spec": spec(rules), "target_state": "RUNNING"}
    assert http.post(f"{stack.api}/channels/", json=body, timeout=10).status_code == 201
    events = SteadyEvents(stack.kafka, source)
    try:
        _first_arrival(stack.kafka, targets[0], 240)  # the bus runs and delivers
        while (first := running()) is None or first.progress is None:
            time.sleep(0.1)
        [checkpoint] = checkpoints.glob(f"{name}*")
        seconds, batches, applied, batch_ms = [], [], [], []
        for n in range(1, repeat + 1):
            rules = [*rules, rule(n, "refund")]
            url = f"{stack.api}/channels/{name}"
            saved = http.put(f"{url}/", json={"name": name, "spec": spec(rules)}, timeout=10)
            assert saved.status_code == 200, saved.text
            time.sleep(1.0)  # mid-stream: not right after the previous change
            deployed = time.time()
            assert http.post(f"{url}/start", timeout=10).status_code == 202
            arrived = _first_arrival(stack.kafka, targets[n], 120)
            status = _with_progress(running)
            taken = status.revision
            starts = _batch_starts(checkpoint)
            seconds.append(arrived - deployed)
            batches.append(_batch_at(starts, arrived) - _batch_at(starts, deployed))
            applied.append(taken)
            recent = sorted(starts.items())[-20:]
            batch_ms.append(1000 * (recent[-1][1] - recent[0][1]) / max(len(recent) - 1, 1))
            print(
                f"  rule {n} added: first event after {seconds[-1] * 1000:.0f} ms, "
                f"{batches[-1]} batch(es); revision {taken} running, generation "
                f"{status.generation} (was {first.generation}), query run "
                f"{'the same' if status.progress['runId'] == first.progress['runId'] else 'NEW'}",
                flush=True,
            )
        restarted = _with_progress(running).progress["runId"] != first.progress["runId"]
    finally:
        events.stop()
        http.post(f"{stack.api}/channels/{name}/stop", timeout=10)
    note = (
        f"{statistics.median(seconds) * 1000:.0f} ms at {statistics.median(batch_ms):.0f} ms "
        f"a batch, {BUS_RATE} events/s; "
        + ("query RESTARTED" if restarted else "same query run, no restart")
    )
    worst = max(batches)
    return [
        Figure(
            "rule added to a running bus → first event",
            float(worst),
            2.0,
            repeat,
            f"worst of {repeat}: {batches}; {note}",
            unit="batches",
        ),
    ]


# -- report --------------------------------------------------------------------------------


def report(sections: dict[str, list[Figure]]) -> str:
    lines = [f"Sluice control-plane benchmark, {time.strftime('%Y-%m-%d %H:%M:%S %Z')}"]
    lines.append(f"machine: {os.cpu_count()} cores; reconcile interval 1 s (default)")
    for title, figures in sections.items():
        lines += ["", title, "-" * len(title)]
        lines += [figure.row() for figure in figures]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--channels", type=int, default=1000)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--part", choices=["all", "database", "live", "rules"], default="all")
    args = parser.parse_args(argv)
    sections: dict[str, list[Figure]] = {}
    with tempfile.TemporaryDirectory(prefix="sluice-bench-control-", dir="/var/tmp") as tmp:
        work = Path(tmp)
        os.chmod(work, 0o755)  # PostgreSQL may run as its own user
        if args.part in ("all", "live"):
            print("live stack …", flush=True)
            sections["Live stack (2 runtime workers)"] = live_figures(args.repeat, work)
        if args.part in ("all", "rules"):
            print("a bus: rules added while it runs …", flush=True)
            sections["A running bus (1 runtime worker)"] = rule_figures(args.repeat, work)
        if args.part in ("all", "database"):
            print(f"database with {args.channels} channels …", flush=True)
            sections["Database (PostgreSQL, simulated runtime)"] = database_figures(
                args.channels, args.repeat, work
            )
    text = report(sections)
    print("\n" + text)
    RESULTS_DIR.mkdir(exist_ok=True)
    stamp = time.strftime("%Y%m%dT%H%M%S")
    (RESULTS_DIR / f"control-{stamp}.txt").write_text(text + "\n")
    data = {title: [vars(f) for f in figures] for title, figures in sections.items()}
    (RESULTS_DIR / f"control-{stamp}.json").write_text(json.dumps(data, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
