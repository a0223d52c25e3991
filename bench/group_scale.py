"""``make bench-group`` (``python -m bench.group_scale``): the runtime group at scale, simulated
(issue 28's scale targets).

A real single-node Kafka and a real Redis of its own; a runtime group of its own with the
production defaults (``GroupConfig``: 64 slots, 10 s session, 1 s heartbeat, 3 s fence margin,
``placement="group"``); ``--channels`` (5,000) connectors' desired state written through the
real ``SparkRuntime(..., group=config).deploy_many`` in chunks; ``--workers`` (20) simulated
runtime workers (:mod:`runtime_adapter.host.simulated`): each an OS process running the real
``RuntimeWorker`` loop (converge, claims, releases, its ``GroupMember``) whose drivers are
light stand-ins reporting each connector RUNNING once placed and every status interval (10 s).
Once all are RUNNING, each on the worker that claimed it:

a. **steady state**: the CPU of each worker process with its drivers over ``--cpu-seconds``
   (30), from ``/proc/<pid>/stat``: median and max (% of one core);
b. **a stop and a start**: ``set_target_state`` of one connector to STOPPED → its status
   STOPPED, then RUNNING → RUNNING (``--repeat`` times, 5, the median);
c. **``kill -9`` of a runtime host**: a worker process and its drivers killed at once; the
   time until every one of its connectors is claimed by a live worker, and until it is also
   reported RUNNING by that worker; no connector may run in two workers' drivers at once and
   none may be lost. ``--kills`` (3) times, a different victim each time, each restarted (same
   worker id) and its share back before the next kill. Where the seconds go is read from the
   broker's log (the session expired, the group stabilised) and the workers' (slots assigned,
   read to their end).

Targets (issue 28): ``kill -9`` → all its channels owned elsewhere ≤ 15 s; a start or stop
visible in status ≤ 2 s. A table is printed (figure, value, target, verdict) and saved with the
details in ``bench-results/group-scale-<time>.{txt,json}``. Bounded: ``--budget`` (600 s) for
the whole run; every process it started is stopped on the way out, also on failure or Ctrl-C.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import signal
import statistics
import sys
import tempfile
import time
import traceback
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from confluent_kafka import KafkaException

from bench.control import RESULTS_DIR, Figure
from runtime_adapter.base import ConnectorStatus, Deployment
from runtime_adapter.group import GroupConfig, client_id_of, slot_of
from runtime_adapter.spark import SparkRuntime
from runtime_adapter.states import State, TargetState
from tests.support.processes import Service, start_kafka, start_redis
from tests.support.simulated import SimulatedWorkers, children_of, cpu_seconds, slot_owners

KILL_TARGET = 15.0
START_STOP_TARGET = 2.0
CHANNEL_SPEC = {
    "source": {"type": "generator", "config": {"rate": 5}},
    "transforms": [{"type": "filter", "config": {"pattern": {"type": ["order"]}}}],
    "sink": {"type": "preview", "config": {"max_events": 10}},
}


STEPS = {
    "expired": "the coordinator expires its session (broker's log): the session timeout",
    "stabilized": "the group rebalanced (broker's log): members rejoin at their next heartbeat",
    "assigned": "its last slot assigned to another member (workers' logs)",
    "ready": "its last slot read to its end by its new owner (workers' logs)",
}
"""Where a ``kill -9``'s seconds go, each counted from the kill."""


class OutOfTime(RuntimeError):
    pass


@dataclass
class Budget:
    """The whole run's time: every wait is bounded by what is left of it."""

    seconds: float
    started: float = field(default_factory=time.monotonic)

    def left(self) -> float:
        return self.seconds - (time.monotonic() - self.started)

    def wait(
        self, condition: Callable[[], Any], timeout: float, what: str, interval: float = 0.2
    ) -> Any:
        allowed = min(timeout, max(self.left(), 0.0))
        deadline = time.monotonic() + allowed
        while True:
            value = condition()
            if value:
                return value
            if time.monotonic() >= deadline:
                limit = "its timeout" if allowed == timeout else "the run's --budget"
                raise OutOfTime(f"gave up waiting for {what} after {allowed:.0f} s ({limit})")
            time.sleep(interval)


@contextmanager
def terminated_as_interrupt() -> Iterator[None]:
    """SIGTERM ends the run as Ctrl-C does: through every ``finally`` (processes stopped)."""

    def _raise(signum: int, _frame: Any) -> None:
        raise KeyboardInterrupt

    previous = signal.signal(signal.SIGTERM, _raise)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)


# -- reading the runtime ---------------------------------------------------------------------


@dataclass
class Fleet:
    """The bench's view of the runtime: the console's adapter, the workers, the ids."""

    runtime: SparkRuntime
    workers: SimulatedWorkers
    group: GroupConfig
    ids: list[str]

    def snapshot(
        self, ids: list[str] | None = None
    ) -> tuple[dict[str, str | None], dict[str, ConnectorStatus]]:
        wanted = self.ids if ids is None else ids
        return self.runtime.owners(wanted), self.runtime.status(wanted)

    def running_where_claimed(self, ids: list[str] | None = None, since: float = 0.0) -> list[str]:
        """The ids not (yet) RUNNING on a live worker that claimed them (reported after
        ``since``, wall clock)."""
        owners, statuses = self.snapshot(ids)
        live = self.workers.live()
        return [
            cid
            for cid in (self.ids if ids is None else ids)
            if not _running_on(owners.get(cid), statuses.get(cid), live, since)
        ]

    def placement_errors(self) -> list[str]:
        """Claims that do not match the group's assignment, slots owned twice, connectors
        hosted by two workers' drivers: each a line (empty: none)."""
        errors = []
        try:
            assignment = slot_owners(self.group, timeout=10)
        except KafkaException as exc:  # a loaded broker: not known yet
            return [f"the group could not be described: {exc}"]
        seen: dict[int, str] = {}
        for client, slots in assignment.items():
            for slot in slots:
                if slot in seen:
                    errors.append(f"slot {slot} assigned to {seen[slot]} and {client}")
                seen[slot] = client
        owners = self.runtime.owners(self.ids)
        for cid in self.ids:
            owner = owners.get(cid)
            slot = slot_of(cid, self.group.slots)
            if owner is None or slot not in assignment.get(client_id_of(owner), frozenset()):
                errors.append(f"{cid} claimed by {owner}, slot {slot} owned by {seen.get(slot)}")
        errors += [f"{cid} hosted by {who}" for cid, who in self.doubly_hosted().items()]
        return errors

    def doubly_hosted(self) -> dict[str, list[str]]:
        """Connectors listed by live drivers of two workers (a dead worker's stale heartbeats
        are not counted)."""
        live = self.workers.live()
        hosts: dict[str, set[str]] = {}
        for info in self.runtime.store.drivers():
            if info.worker_id in live and _alive(info.pid):
                for cid in info.connectors:
                    hosts.setdefault(cid, set()).add(info.worker_id)
        return {cid: sorted(who) for cid, who in hosts.items() if len(who) > 1}


def _running_on(
    owner: str | None, status: ConnectorStatus | None, live: set[str], since: float
) -> bool:
    """RUNNING, reported by its claimed owner, a live worker, after ``since`` and recently
    (a status older than twice its report interval is not reporting, as the console says:
    its driver may be gone)."""
    return (
        owner is not None
        and owner in live
        and status is not None
        and status.state == State.RUNNING
        and status.worker_id == owner
        and status.updated_at >= since
        and time.time() - status.updated_at <= 2 * max(status.report_interval, 1.0)
    )


def _alive(pid: int) -> bool:
    return cpu_seconds(pid) is not None


# -- the parts -------------------------------------------------------------------------------


def deploy(fleet: Fleet, chunk: int) -> float:
    started = time.monotonic()
    for first in range(0, len(fleet.ids), chunk):
        fleet.runtime.deploy_many(
            [
                Deployment(cid, cid, 1, CHANNEL_SPEC, TargetState.RUNNING)
                for cid in fleet.ids[first : first + chunk]
            ]
        )
    return time.monotonic() - started


def steady_cpu(fleet: Fleet, seconds: float, services: dict[str, Service]) -> dict[str, Any]:
    """CPU (% of one core) of each worker with its drivers, and of Redis and Kafka, over
    ``seconds``."""

    def tree(pid: int) -> list[int]:
        found, todo = [], [pid]
        while todo:
            current = todo.pop()
            found.append(current)
            todo += children_of(current)
        return found

    groups: dict[str, dict[str, list[int]]] = {
        w: {
            "worker": [fleet.workers.processes[w].pid],
            "drivers": children_of(fleet.workers.processes[w].pid),
        }
        for w in sorted(fleet.workers.live())
    }
    for name, service in services.items():
        groups[f"({name})"] = {"service": tree(service.process.pid)}

    def read() -> dict[str, dict[str, float]]:
        return {
            g: {part: sum(cpu_seconds(p) or 0.0 for p in pids) for part, pids in parts.items()}
            for g, parts in groups.items()
        }

    before, started = read(), time.monotonic()
    time.sleep(seconds)
    after, took = read(), time.monotonic() - started
    return {
        g: {part: 100 * (after[g][part] - before[g][part]) / took for part in parts}
        for g, parts in groups.items()
    }


def start_stop(fleet: Fleet, budget: Budget, repeat: int) -> dict[str, list[float]]:
    """Stop one connector and start it again, ``repeat`` times (a different one each time):
    seconds from the call to its status saying so, and the call's own time."""
    found: dict[str, list[float]] = {"stop": [], "start": [], "stop call": [], "start call": []}
    step = max(len(fleet.ids) // max(repeat, 1), 1)
    for n in range(repeat):
        cid = fleet.ids[n * step + 7]
        for target, state, name in (
            (TargetState.STOPPED, State.STOPPED, "stop"),
            (TargetState.RUNNING, State.RUNNING, "start"),
        ):
            asked = time.time()
            fleet.runtime.set_target_state(cid, target)
            found[f"{name} call"].append(time.time() - asked)

            def seen(c: str = cid, s: State = state, t: float = asked) -> float | None:
                status = fleet.runtime.status([c]).get(c)
                if status is not None and status.state == s and status.updated_at >= t:
                    return time.time()
                return None

            at = budget.wait(seen, 30, f"{cid} {state}", interval=0.005)
            found[name].append(at - asked)
        time.sleep(0.5)
    return found


_LOCAL_TIME = re.compile(r"^\[?(\d{4}-\d\d-\d\d \d\d:\d\d:\d\d),(\d{3})\]?")
_MEMBER = re.compile(r"runtime group member (\S+): (assigned|ready) \[([\d, ]*)\]")


def _stamp(line: str) -> float | None:
    """The wall-clock time a log line (Python's or Kafka's, local time) begins with."""
    found = _LOCAL_TIME.match(line)
    if found is None:
        return None
    return (
        time.mktime(time.strptime(found.group(1), "%Y-%m-%d %H:%M:%S")) + int(found.group(2)) / 1000
    )


def joined_at(log: Path, since: float) -> float:
    """When (wall clock) the worker logging to ``log`` last started joining the group."""
    found = since
    for line in log.read_text(errors="replace").splitlines():
        if "joining runtime group" in line and (at := _stamp(line)) is not None and at >= since:
            found = at
    return found


def member_steps(log_dir: Path, since: float, slots: set[int]) -> dict[str, float]:
    """From the workers' logs: when the last of ``slots`` was assigned to a member, and read
    to its end, after ``since``."""
    assigned: dict[int, float] = {}
    ready: dict[int, float] = {}
    for log in log_dir.glob("*.log"):
        for line in log.read_text(errors="replace").splitlines():
            found = _MEMBER.search(line)
            if found is None:
                continue
            at = _stamp(line)
            if at is None or at < since - 0.001:
                continue
            got = {int(s) for s in found.group(3).split(",") if s.strip()} & slots
            table = assigned if found.group(2) == "assigned" else ready
            for slot in got:
                table.setdefault(slot, at)
    steps = {}
    if assigned:
        steps["assigned"] = max(assigned.values())
    if ready:
        steps["ready"] = max(ready.values())
    return steps


def broker_steps(kafka_log: Path, group_id: str, since: float) -> dict[str, float]:
    """From the broker's log: when the coordinator expired a member of ``group_id`` and when
    the group stabilised next, after ``since``."""
    steps: dict[str, float] = {}
    for line in kafka_log.read_text(errors="replace").splitlines():
        if group_id not in line:
            continue
        at = _stamp(line)
        if at is None or at < since - 0.001:
            continue
        if "expired" not in steps and "heartbeat expiration" in line:
            steps["expired"] = at
        elif "expired" in steps and "Stabilized group" in line:
            steps["stabilized"] = at
            break
    return steps


def kill_one(
    fleet: Fleet, budget: Budget, victim: str, kafka_log: Path, log_dir: Path
) -> dict[str, Any]:
    """``kill -9`` the victim and its drivers; how long until its connectors are claimed
    elsewhere, and RUNNING there; where the time went."""
    owners = fleet.runtime.owners(fleet.ids)
    theirs = [cid for cid in fleet.ids if owners.get(cid) == victim]
    slots = {slot_of(cid, fleet.group.slots) for cid in theirs}
    killed = fleet.workers.kill(victim)
    claimed_at = running_at = None
    doubles: dict[str, list[str]] = {}
    deadline = time.monotonic() + min(60.0, max(budget.left(), 0.0))
    while time.monotonic() < deadline:
        now_owners, statuses = fleet.snapshot(theirs)
        now = time.time()
        live = fleet.workers.live()
        if claimed_at is None and all(now_owners.get(c) in live for c in theirs):
            claimed_at = now
        if claimed_at is not None and all(
            _running_on(now_owners.get(c), statuses.get(c), live, killed) for c in theirs
        ):
            running_at = now
            break
        doubles.update(fleet.doubly_hosted())
        time.sleep(0.1)
    result: dict[str, Any] = {
        "victim": victim,
        "channels": len(theirs),
        "slots": sorted(slots),
        "claimed": None if claimed_at is None else claimed_at - killed,
        "running": None if running_at is None else running_at - killed,
        "doubly_hosted": doubles,
    }
    time.sleep(1.0)  # the logs flushed
    steps = {
        **broker_steps(kafka_log, fleet.group.group_id, killed),
        **member_steps(log_dir, killed, slots),
    }
    result["steps"] = {name: at - killed for name, at in sorted(steps.items(), key=lambda s: s[1])}
    return result


TROUBLE = {
    "revocations that timed out (their driver killed)": "did not stop in time for",
    "self-fences (no answer from the coordinator)": "no answer from the group coordinator",
    "loop errors in workers": "converging failed",
}


def trouble(log_dir: Path) -> list[Figure]:
    """What the workers' logs say went wrong over the whole run: each count's target is 0."""
    text = "\n".join(log.read_text(errors="replace") for log in log_dir.glob("*.log"))
    return [
        Figure(name, text.count(needle), 0, unit="", note=f'"{needle}" in the workers\' logs')
        for name, needle in TROUBLE.items()
    ]


def wait_all_running(
    fleet: Fleet, budget: Budget, timeout: float, what: str, holding: str | None = None
) -> float:
    """Wait until every connector is RUNNING where it is claimed, each claim on its slot's
    owner (and ``holding`` has claimed some); the seconds it took."""
    started = time.monotonic()

    def done() -> bool:
        if holding is not None and holding not in fleet.runtime.owners(fleet.ids).values():
            return False
        missing = fleet.running_where_claimed()
        if missing:
            return False
        return not fleet.placement_errors()

    budget.wait(done, timeout, what, interval=0.5)
    return time.monotonic() - started


# -- the report ------------------------------------------------------------------------------


def report(figures: list[Figure], settings: str, load_before: float) -> str:
    lines = [f"Sluice runtime group at scale (simulated), {time.strftime('%Y-%m-%d %H:%M:%S %Z')}"]
    lines.append(
        f"machine: {os.cpu_count()} cores, load average {load_before:.1f} before, "
        f"{os.getloadavg()[0]:.1f} at the end"
    )
    lines.append(settings)
    lines.append("")
    lines += [figure.row() for figure in figures]
    return "\n".join(lines)


def _median(values: list[float]) -> float:
    return statistics.median(values) if values else float("nan")


def run(
    args: argparse.Namespace,
    work: Path,
    budget: Budget,
    figures: list[Figure],
    details: dict[str, Any],
) -> None:
    """Every part in turn, its figures added to ``figures`` as they come (a part that fails
    leaves those of the parts before)."""
    logs = work / "logs"
    redis, redis_url = start_redis(work / "redis", logs)
    kafka: Service | None = None
    workers: SimulatedWorkers | None = None
    try:
        kafka, bootstrap = start_kafka(work / "kafka", logs)
        group = GroupConfig(
            bootstrap=bootstrap,
            group_id="bench-group",
            config_topic="bench-group.config",
            status_topic="bench-group.status",
            placement="group",
        )
        details["group"] = asdict(group)
        runtime = SparkRuntime(
            redis_url, "bench", checkpoint_root=work / "checkpoints", group=group
        )
        workers = SimulatedWorkers(
            group,
            redis_url,
            "bench",
            var=work / "var",
            log_dir=logs / "workers",
        )
        ids = [f"ch-{n:05d}" for n in range(args.channels)]
        fleet = Fleet(runtime, workers, group, ids)

        print(f"deploying {len(ids)} connectors …", flush=True)
        took = deploy(fleet, args.chunk)
        figures.append(Figure(f"deploy {len(ids):,} (deploy_many, chunks of {args.chunk})", took))
        print(f"starting {args.workers} simulated workers …", flush=True)
        worker_ids = [f"w{n:02d}" for n in range(1, args.workers + 1)]
        started = time.monotonic()
        for worker_id in worker_ids:
            workers.start(worker_id)
        wait_all_running(fleet, budget, 240, f"all {len(ids)} RUNNING")
        cold = time.monotonic() - started
        figures.append(
            Figure(
                f"cold start: {args.workers} workers → all {len(ids):,} RUNNING",
                cold,
                note="every worker joining at once, slots moving as they join",
            )
        )
        print(
            f"all RUNNING after {cold:.1f} s; steady state for {args.cpu_seconds:g} s …", flush=True
        )

        services = {"redis": redis, "kafka": kafka}
        cpu = steady_cpu(fleet, args.cpu_seconds, services)
        details["cpu"] = cpu
        per_worker = [sum(v.values()) for g, v in cpu.items() if not g.startswith("(")]
        worker_only = [v["worker"] for g, v in cpu.items() if not g.startswith("(")]
        drivers_only = [v["drivers"] for g, v in cpu.items() if not g.startswith("(")]
        figures += [
            Figure(
                "steady: CPU of a worker with its drivers, median",
                round(_median(per_worker), 1),
                unit="% core",
                note=f"worker {_median(worker_only):.1f} %, its driver "
                f"{_median(drivers_only):.1f} %; {len(per_worker)} workers, {args.cpu_seconds:g} s",
            ),
            Figure(
                "steady: CPU of a worker with its drivers, max",
                round(max(per_worker), 1),
                unit="% core",
            ),
            Figure(
                "steady: CPU of all workers and drivers together",
                round(sum(per_worker), 1),
                unit="% core",
            ),
            Figure("steady: CPU of Redis", round(sum(cpu["(redis)"].values()), 1), unit="% core"),
            Figure("steady: CPU of Kafka", round(sum(cpu["(kafka)"].values()), 1), unit="% core"),
        ]

        print(f"stop and start, {args.repeat} times …", flush=True)
        timings = start_stop(fleet, budget, args.repeat)
        details["start_stop"] = timings
        figures += [
            Figure(
                "stop → STOPPED in status, median",
                _median(timings["stop"]),
                START_STOP_TARGET,
                args.repeat,
                f"max {max(timings['stop']) * 1000:.0f} ms; the call itself "
                f"{_median(timings['stop call']) * 1000:.0f} ms",
            ),
            Figure(
                "start → RUNNING in status, median",
                _median(timings["start"]),
                START_STOP_TARGET,
                args.repeat,
                f"max {max(timings['start']) * 1000:.0f} ms; the call itself "
                f"{_median(timings['start call']) * 1000:.0f} ms",
            ),
        ]

        kills: list[dict[str, Any]] = []
        rejoins: list[dict[str, float]] = []
        details["kills"] = kills
        for n in range(args.kills):
            if budget.left() < 90:
                print("out of budget: no more kills", flush=True)
                break
            victim = worker_ids[(n * 7 + 3) % len(worker_ids)]
            print(f"kill -9 of {victim} and its drivers …", flush=True)
            result = kill_one(fleet, budget, victim, logs / "kafka.log", logs / "workers")
            errors = fleet.placement_errors()
            missing = fleet.running_where_claimed()
            result["errors_after"] = errors[:20]
            result["not_running_after"] = len(missing)
            kills.append(result)
            print(f"  {json.dumps(result)}", flush=True)
            if n + 1 < args.kills and args.restart:
                restarted = time.time()
                workers.start(victim)
                wait_all_running(fleet, budget, 120, f"{victim} back with its share", victim)
                done = time.time()
                joined = joined_at(logs / "workers" / f"{victim}.log", restarted)
                rejoins.append({"process": done - restarted, "member": done - joined})
                print(
                    f"  {victim} restarted: its share RUNNING on it {done - restarted:.1f} s "
                    f"after its start, {done - joined:.1f} s after it joined the group",
                    flush=True,
                )
        details["rejoins"] = rejoins
        if kills:
            claimed = [k["claimed"] for k in kills if k["claimed"] is not None]
            running = [k["running"] for k in kills if k["running"] is not None]
            lost = [k for k in kills if k["running"] is None]
            runs = ", ".join(
                "NEVER" if k["running"] is None else f"{k['running']:.2f}" for k in kills
            )
            note = f"runs {runs} s; {_median([k['channels'] for k in kills]):.0f} channels each"
            figures.append(
                Figure(
                    "kill -9 of a worker → its channels claimed elsewhere",
                    _median(claimed) if claimed else float("inf"),
                    KILL_TARGET,
                    len(kills),
                    f"max {max(claimed, default=float('nan')):.2f} s",
                )
            )
            figures.append(
                Figure(
                    "kill -9 of a worker → … and RUNNING there",
                    _median(running) if running and not lost else float("inf"),
                    KILL_TARGET,
                    len(kills),
                    note,
                )
            )
            for step, what in STEPS.items():
                values = [k["steps"][step] for k in kills if step in k["steps"]]
                if values:
                    figures.append(
                        Figure(f"  kill → {step}", _median(values), runs=len(values), note=what)
                    )
            doubles = sum(len(k["doubly_hosted"]) for k in kills)
            errors = sum(len(k["errors_after"]) + k["not_running_after"] for k in kills)
            figures.append(
                Figure(
                    "connectors run by two workers at once (sampled 10/s)",
                    doubles,
                    0,
                    unit="",
                    note="driver heartbeats",
                )
            )
            figures.append(
                Figure(
                    "connectors lost or misplaced after a kill",
                    errors,
                    0,
                    unit="",
                    note="claim ≠ slot owner, not RUNNING, slot owned twice",
                )
            )
        if rejoins:
            figures.append(
                Figure(
                    "restarted worker joins → its share RUNNING on it",
                    _median([r["member"] for r in rejoins]),
                    runs=len(rejoins),
                    note="cooperative: the others stop what moves, then it starts it; from its "
                    f"process's start {_median([r['process'] for r in rejoins]):.1f} s",
                )
            )
        missing = fleet.running_where_claimed()
        details["not_running_at_the_end"] = missing[:50]
        figures.append(
            Figure(
                "connectors not RUNNING where claimed at the end",
                len(missing),
                0,
                unit="",
                note="RUNNING, by its owner, reported within 2x its interval",
            )
        )
        figures += trouble(logs / "workers")
    finally:
        if workers is not None:
            workers.stop_all(timeout=20)
        if kafka is not None:
            kafka.stop()
        redis.stop()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--channels", type=int, default=5000)
    parser.add_argument("--workers", type=int, default=20)
    parser.add_argument("--chunk", type=int, default=500)
    parser.add_argument("--cpu-seconds", type=float, default=30.0)
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--kills", type=int, default=3)
    parser.add_argument(
        "--no-restart",
        dest="restart",
        action="store_false",
        help="do not restart a killed worker before the next kill",
    )
    parser.add_argument("--budget", type=float, default=600.0, help="seconds for the whole run")
    parser.add_argument("--keep", action="store_true", help="keep the work folder (logs)")
    args = parser.parse_args(argv)
    budget = Budget(args.budget)
    load_before = os.getloadavg()[0]
    settings = (
        f"{args.channels:,} channels, {args.workers} simulated workers; runtime group: production "
        "defaults (64 slots, session 10 s, heartbeat 1 s, fence margin 3 s), placement=group; "
        "worker pass 1 s, status interval 10 s; each killed worker "
        + ("restarted (same id) before the next kill" if args.restart else "left dead")
    )
    figures: list[Figure] = []
    details: dict[str, Any] = {"args": vars(args), "load_before": load_before}
    work = Path(tempfile.mkdtemp(prefix="sluice-bench-group-", dir="/var/tmp"))
    failed = 0
    try:
        with terminated_as_interrupt():
            run(args, work, budget, figures, details)
    except (Exception, KeyboardInterrupt) as exc:
        if not isinstance(exc, OutOfTime | KeyboardInterrupt):
            traceback.print_exc()
        print(f"stopped: {exc!r}; the figures so far follow", flush=True)
        failed = 1
    finally:
        print(f"logs: {work}" if args.keep else "", flush=True)
        if not args.keep:
            shutil.rmtree(work, ignore_errors=True)
    text = report(figures, settings, load_before)
    print("\n" + text)
    RESULTS_DIR.mkdir(exist_ok=True)
    stamp = time.strftime("%Y%m%dT%H%M%S")
    (RESULTS_DIR / f"group-scale-{stamp}.txt").write_text(text + "\n")
    details["figures"] = [vars(f) for f in figures]
    (RESULTS_DIR / f"group-scale-{stamp}.json").write_text(
        json.dumps(details, indent=2, default=str)
    )
    return failed


if __name__ == "__main__":
    sys.exit(main())
