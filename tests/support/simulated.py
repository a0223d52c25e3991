"""Simulated runtime workers (``python -m runtime_adapter.host.simulated``), each a process of
its own that a test or a benchmark can ``kill -9`` with its stand-in drivers, as a runtime
host dies: the real worker loop, membership, claims and releases, no Spark.

Used by ``bench/group_scale.py`` (``make bench-group``) and
``tests/unit/runtime_adapter/test_simulated.py``.
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import signal
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

from runtime_adapter.group import GroupConfig
from tests.support.processes import REPO_ROOT

_PR_SET_PDEATHSIG = 1


def _die_with_parent() -> None:  # in the child between fork and exec: no orphan worker
    with contextlib.suppress(OSError):
        ctypes.CDLL("libc.so.6", use_errno=True).prctl(_PR_SET_PDEATHSIG, signal.SIGTERM)


def group_env(group: GroupConfig) -> dict[str, str]:
    """The ``SLUICE_*`` variables that make a runtime worker a member of ``group``."""
    env = {
        "SLUICE_KAFKA_BOOTSTRAP": group.bootstrap,
        "SLUICE_RUNTIME_MEMBERSHIP": "true",
        "SLUICE_RUNTIME_GROUP_ID": group.group_id,
        "SLUICE_RUNTIME_CONFIG_TOPIC": group.config_topic,
        "SLUICE_RUNTIME_STATUS_TOPIC": group.status_topic,
        "SLUICE_RUNTIME_SLOTS": str(group.slots),
        "SLUICE_RUNTIME_SESSION_TIMEOUT": str(group.session_timeout),
        "SLUICE_RUNTIME_HEARTBEAT_INTERVAL": str(group.heartbeat_interval),
        "SLUICE_RUNTIME_FENCE_MARGIN": str(group.fence_margin),
        "SLUICE_RUNTIME_PLACEMENT": group.placement,
    }
    if group.replication_factor is not None:
        env["SLUICE_TOPIC_REPLICATION_FACTOR"] = str(group.replication_factor)
    if group.min_insync_replicas is not None:
        env["SLUICE_TOPIC_MIN_INSYNC_REPLICAS"] = str(group.min_insync_replicas)
    return env


def children_of(pid: int) -> list[int]:
    """The processes whose parent is ``pid`` now (from /proc)."""
    found = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            stat = Path(f"/proc/{entry}/stat").read_text()
        except OSError:
            continue
        # pid (comm) state ppid …: comm may hold spaces and parentheses
        fields = stat[stat.rindex(")") + 2 :].split()
        if int(fields[1]) == pid:
            found.append(int(entry))
    return found


def cpu_seconds(pid: int) -> float | None:
    """User and system CPU seconds of process ``pid`` so far (None: gone)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    fields = stat[stat.rindex(")") + 2 :].split()
    if fields[0] == "Z":
        return None
    utime, stime = int(fields[11]), int(fields[12])
    return (utime + stime) / os.sysconf("SC_CLK_TCK")


@dataclass
class SimulatedWorkers:
    """Simulated runtime workers of ``group`` on the store at ``redis_url``/``prefix``; their
    output in ``log_dir/<worker>.log`` (drivers' logs under ``var``). ``env``: more settings
    (``SLUICE_CHANNELS_PER_DRIVER``, ``SLUICE_WORKER_HEARTBEAT_INTERVAL``…)."""

    group: GroupConfig
    redis_url: str
    prefix: str
    var: Path
    log_dir: Path
    env: dict[str, str] = field(default_factory=dict)
    processes: dict[str, subprocess.Popen[bytes]] = field(default_factory=dict)

    def start(self, worker_id: str) -> subprocess.Popen[bytes]:
        self.log_dir.mkdir(parents=True, exist_ok=True)
        env = {
            **os.environ,
            "REDIS_URL": self.redis_url,
            "SLUICE_REDIS_PREFIX": self.prefix,
            "SLUICE_WORKER_ID": worker_id,
            "SLUICE_VAR_DIR": str(self.var / worker_id),
            "SLUICE_CHANNELS_PER_DRIVER": "1000",
            "SLUICE_WARM_DRIVERS": "1",
            "SLUICE_DRIVER_STOP_GRACE": "2",
            "PYTHONPATH": str(REPO_ROOT),
            **group_env(self.group),
            **self.env,
        }
        with (self.log_dir / f"{worker_id}.log").open("ab") as log:
            process = subprocess.Popen(
                [sys.executable, "-m", "runtime_adapter.host.simulated"],
                cwd=REPO_ROOT,
                env=env,
                stdout=log,
                stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL,
                start_new_session=True,
                preexec_fn=_die_with_parent,
            )
        self.processes[worker_id] = process
        return process

    def alive(self, worker_id: str) -> bool:
        process = self.processes.get(worker_id)
        return process is not None and process.poll() is None

    def live(self) -> set[str]:
        return {w for w in self.processes if self.alive(w)}

    def pids(self, worker_id: str) -> list[int]:
        """The worker's process and its drivers' (its children)."""
        process = self.processes[worker_id]
        if process.poll() is not None:
            return []
        return [process.pid, *children_of(process.pid)]

    def kill(self, worker_id: str) -> float:
        """``kill -9`` the worker and its drivers, as their host dies; when (wall clock)."""
        pids = self.pids(worker_id)
        at = time.time()
        for pid in pids:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
        self.processes[worker_id].wait(timeout=10)
        return at

    def stop(self, worker_id: str, timeout: float = 20.0) -> None:
        """SIGTERM (the worker retires its drivers and leaves the group), SIGKILL after
        ``timeout``."""
        process = self.processes[worker_id]
        if process.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                process.send_signal(signal.SIGTERM)
            with contextlib.suppress(subprocess.TimeoutExpired):
                process.wait(timeout=timeout)
        if process.poll() is None:
            for pid in self.pids(worker_id):
                with contextlib.suppress(ProcessLookupError):
                    os.kill(pid, signal.SIGKILL)
            process.wait(timeout=10)

    def stop_all(self, timeout: float = 20.0) -> None:
        """Stop every worker still running, side by side."""
        running = [w for w in self.processes if self.alive(w)]
        for worker_id in running:
            with contextlib.suppress(ProcessLookupError):
                self.processes[worker_id].send_signal(signal.SIGTERM)
        deadline = time.monotonic() + timeout
        for worker_id in running:
            with contextlib.suppress(subprocess.TimeoutExpired):
                self.processes[worker_id].wait(timeout=max(deadline - time.monotonic(), 0.1))
        for worker_id in running:
            self.stop(worker_id, timeout=0)


def slot_owners(group: GroupConfig, timeout: float = 5.0) -> dict[str, frozenset[int]]:
    """The slots each member of ``group`` is assigned now, by client id, as its coordinator
    describes the group (a member between two rebalances may show none)."""
    from confluent_kafka.admin import AdminClient

    admin = AdminClient({"bootstrap.servers": group.bootstrap})
    future = admin.describe_consumer_groups([group.group_id], request_timeout=timeout)
    description = future[group.group_id].result(timeout=timeout + 1)
    return {
        member.client_id: frozenset(
            tp.partition
            for tp in (member.assignment.topic_partitions if member.assignment else [])
            if tp.topic == group.config_topic
        )
        for member in description.members
    }
