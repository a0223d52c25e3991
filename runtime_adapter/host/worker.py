"""The runtime worker: ``python -m runtime_adapter.host.worker``.

A long-lived agent on a runtime host. It keeps a small pool of long-lived Spark drivers
(:mod:`runtime_adapter.host.driver`, started with ``spark-submit``) and places its connectors'
queries in them. Every ``heartbeat_interval`` seconds it heartbeats to Redis and converges
to the assignment the console wrote there:

* a connector assigned here whose target is RUNNING or PAUSED is placed in a driver of its
  team (``{p}:placement:{driver}``; every driver hosts one team's connectors only, ``""``
  those deployed before teams): a ``shared`` one (the default) in a shared driver of its team
  with room, the fullest first, a new one started when none has room; a ``dedicated`` one in
  a driver of its own. A new driver is started only within the team's driver quota on this
  worker (cores and memory, :meth:`RuntimeWorker.over_quota`); else the connector is reported
  UNASSIGNED with the quota named, and placed once the team's drivers here hold less;
* a restart (a newer generation) or a redeploy (another revision) is placed again, in the same
  shared driver (the driver restarts that query alone); a dedicated driver is replaced on a
  restart;
* a connector unassigned, deleted or whose target is STOPPED is taken out of its driver,
  which stops its query (and reports STOPPED); one that is not in any driver and whose
  target is STOPPED is reported STOPPED here;
* a connector whose run ended (FAILED; an available-now run that finished) is taken out
  and not placed again until a restart or a stop;
* a driver that dies (``kill -9``, an out-of-memory JVM) or stops heartbeating for
  ``driver_session_timeout`` seconds (then it is killed) takes its connectors to FAILED with
  the cause named and the tail of its log; the restart policy brings them back;
* except when a shared driver's log names the connector whose task's fatal error ended the
  JVM (its last words, :func:`offender`): that connector alone is FAILED, the others are
  placed again at once; after :data:`QUARANTINE_AFTER` such crashes it runs only in a driver
  of its own (quarantined) until a new revision.

``warm_drivers`` shared drivers (per team with connectors here) are kept running even with
nothing placed, so a new channel starts in about a second; other empty ones retire after
``driver_idle_seconds``. A driver is retired
through the store (it stops its queries and exits), then SIGTERM, then SIGKILL of its process
group after a grace period. Drivers are started with a parent-death signal, so a killed
worker does not leave drivers behind.
"""

from __future__ import annotations

import contextlib
import ctypes
import faulthandler
import logging
import os
import re
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterable
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import IO

import redis

from runtime_adapter.base import (
    ConnectorStatus,
    Deployment,
    DriverInfo,
    WorkerInfo,
)
from runtime_adapter.config import REPO_ROOT, RuntimeConfig, RuntimeSettings
from runtime_adapter.group import GroupConfig
from runtime_adapter.host.crashes import QUARANTINE_AFTER, CrashBook
from runtime_adapter.host.failures import decrypted_spec, format_trace, mask_secrets
from runtime_adapter.host.link import HostFiles
from runtime_adapter.host.membership import Membership, SelfFence, SlotOwner
from runtime_adapter.host.privileges import become_runtime_user, driver_environment
from runtime_adapter.host.status_relay import StatusRelay
from runtime_adapter.logs import configure_logging, log_context, set_process_context
from runtime_adapter.states import State, TargetState
from runtime_adapter.store import (
    STORE_ERRORS,
    Outage,
    Placement,
    RedisStore,
    ReportOutcome,
    StoreWatch,
    status_from_text,
)

log = logging.getLogger("sluice.worker")

DRIVER_SCRIPT = Path(__file__).with_name("driver.py")
LOG_TAIL_BYTES = 8_000
LAST_WORDS_BYTES = 1_000_000
"""How far back from a dead driver's log end its last words are looked for (its queries'
failures, written after them, run to tens of kilobytes)."""
FENCED = "fenced"
"""How a driver killed by the self-fence is marked (``killed_for``)."""
_PR_SET_PDEATHSIG = 1
_HOSTED_TARGETS = (TargetState.RUNNING, TargetState.PAUSED)
PRUNE_EVERY = 60.0
"""Seconds between two removals of the status files of connectors that left this worker."""


MEMORY_WATCH = "Sluice's memory watch stopped connector"
"""What the failure of a connector that a driver's memory watch stopped says."""
LAST_WORDS = re.compile(r"^sluice-last-words connector=(\S+) stage=\d+ tid=(\d+) ", re.M)
"""The line Sluice's listener (``LastWords.java``) writes when a task's fatal error ends the
JVM: the connector whose task it was, and the task's id."""
FIRST_UNCAUGHT = re.compile(
    r"(?<!\[Container in shutdown\] )Uncaught exception in thread .*\(TID (\d+)\)"
)
"""Spark's log line for the first task thread in its handler (those after it are marked as
arriving in shutdown)."""


def _die_with_parent() -> None:  # runs in the child between fork and exec
    with contextlib.suppress(OSError):
        ctypes.CDLL("libc.so.6", use_errno=True).prctl(_PR_SET_PDEATHSIG, signal.SIGTERM)


def spark_submit_path() -> str:
    import pyspark

    return str(Path(pyspark.__file__).parent / "bin" / "spark-submit")


def offender(driver: DriverProcess, tail: str) -> str | None:
    """The connector whose task's fatal error ended the driver's JVM, as its last words in
    the log name it (None: it ended otherwise, or nothing names one). The words are written
    only by a task thread in Spark's uncaught-exception handler, whatever the log level."""
    if driver.killed_for:
        return None  # killed by this worker: not a task's doing
    words: dict[str, str] = {tid: connector for connector, tid in LAST_WORDS.findall(tail)}
    if len(set(words.values())) == 1:
        return next(iter(words.values()))
    # Several tasks died at once (a heap exhausted fails others' allocations too): the one
    # Spark's handler took first is the cause; when the log does not say, nobody is blamed.
    first = FIRST_UNCAUGHT.search(tail)
    return words.get(first.group(1)) if first else None


def isolation_of(deployment: Deployment) -> str:
    """A real-time query holds its cores for as long as it runs: always a driver of its own."""
    runtime = deployment.spec.get("runtime") or {}
    if runtime.get("isolation") == "dedicated" or real_time(deployment):
        return "dedicated"
    return "shared"


def real_time(deployment: Deployment) -> bool:
    return (deployment.spec.get("runtime") or {}).get("mode") == "real-time"


_SIZE_MB = {"k": 1 / 1024, "m": 1, "g": 1024, "t": 1024 * 1024}


def memory_mb(size: str) -> int:
    """A Spark memory size (``2g``, ``512m``; no unit: MiB) in MiB; 0 when unreadable."""
    text = size.strip().lower().removesuffix("b")
    unit = text[-1:] if text[-1:] in _SIZE_MB else "m"
    number = text[:-1] if text[-1:] in _SIZE_MB else text
    try:
        return int(float(number) * _SIZE_MB[unit])
    except ValueError:
        return 0


def local_cores(master: str, worker_cores: int) -> int:
    """The task slots of a local Spark master: ``local[N]`` (or ``local[N,F]``) N,
    ``local[*]`` ``worker_cores``, ``local`` 1."""
    found = re.fullmatch(r"local(?:\[(\*|\d+)(?:,\d+)?\])?", master.strip())
    if found is None:
        return worker_cores  # (not a local master: the caller counts a standalone one)
    slots = found.group(1)
    if slots is None:
        return 1
    return worker_cores if slots == "*" else max(int(slots), 1)


def memory_available_mb(meminfo: Path = Path("/proc/meminfo")) -> int | None:
    """The host's available memory in MiB (``MemAvailable``), None where it cannot be read."""
    try:
        for line in meminfo.read_text().splitlines():
            if line.startswith("MemAvailable:"):
                return int(line.split()[1]) // 1024
    except (OSError, ValueError, IndexError):
        return None
    return None


RETAINED_UI_ITEMS = 50
"""How many SQL executions, jobs and stages a driver's status store keeps (Spark: 1,000)."""


@dataclass
class DriverProcess:
    """A driver this worker started, and what it hosts."""

    driver_id: str
    isolation: str
    capacity: int
    process: subprocess.Popen[bytes]
    log_path: Path
    log_file: IO[bytes]
    launched_at: float
    placed: set[str] = field(default_factory=set)
    empty_since: float | None = None
    retire_requested_at: float | None = None
    signals_sent: list[str] = field(default_factory=list)
    killed_for: str = ""
    cores: int = 0
    """Cores a real-time query holds in this driver (0: none reserved)."""
    team: str = ""
    """The team whose connectors alone it hosts (``""``: those deployed before teams)."""
    held_cores: int = 0
    """The cores it holds on this worker, counted against its team's driver quota
    (:meth:`RuntimeWorker.driver_cores`)."""
    memory_mib: int = 0
    """Its JVM's memory in MiB, counted against its team's driver quota."""
    up: bool = False
    """Whether it has heartbeated ready (its SparkSession started)."""

    def exited(self) -> bool:
        return self.process.poll() is not None

    @property
    def retiring(self) -> bool:
        return self.retire_requested_at is not None

    def has_room(self) -> bool:
        return not self.retiring and not self.exited() and len(self.placed) < self.capacity

    def log_tail(self, size: int = LOG_TAIL_BYTES) -> str:
        with self.log_path.open("rb") as handle:
            handle.seek(0, os.SEEK_END)
            end = handle.tell()
            handle.seek(max(end - size, 0))
            return handle.read().decode("utf-8", errors="replace")


def exit_cause(driver: DriverProcess, code: int | None, tail: str) -> str:
    """One line naming why a driver ended, for its connectors' traces."""
    who = f"driver {driver.driver_id} (pid {driver.process.pid})"
    if driver.killed_for:
        return f"{who} {driver.killed_for}"
    if "java.lang.OutOfMemoryError" in tail:
        return f"{who} ran out of memory (java.lang.OutOfMemoryError); exit code {code}"
    if "java.lang.StackOverflowError" in tail:
        return f"{who} overflowed a thread's stack (java.lang.StackOverflowError); exit code {code}"
    if code is not None and code < 0:
        try:
            name = signal.Signals(-code).name
        except ValueError:
            name = f"signal {-code}"
        return f"{who} was killed by {name}"
    return f"{who} exited with code {code} without reporting a failure"


class RuntimeWorker:
    """Keeps a pool of drivers and converges their placements to this worker's assignment.

    With ``group`` (the runtime's Kafka group) it runs channels only while it is a member of
    the group (:mod:`runtime_adapter.host.membership`), and kills every driver it has when its
    membership is lost or it cannot reach the group's coordinator (the self-fence). When the
    group places channels (``group.places``) it runs those of the slots it owns, whatever
    worker the console named, and claims them in the store (:meth:`owned_deployments`).
    """

    def __init__(
        self, config: RuntimeConfig, store: RedisStore, group: GroupConfig | None = None
    ) -> None:
        self.config = config
        self.store = store
        """The console's store: the desired state and claims when the console places
        channels; when the group places, only what the console shows (heartbeats, claims,
        status copies, drain requests), each written or read at best."""
        self.files: HostFiles | None = None
        """The link to this worker's drivers when the group places (:mod:`.link`): files on
        this host, no Redis between them."""
        if group is not None and group.places:
            self.files = HostFiles.of_worker(config.var_dir, config.worker_id)
        self.link: HostFiles | RedisStore = self.files or store
        """Where placements, driver heartbeats and statuses go between worker and drivers."""
        self.woken = threading.Event()
        """Wakes the loop when the link is files (the store's nudges are not waited on)."""
        self.owner: SlotOwner | None = None
        self.membership: Membership | None = None
        self.release_timeout = 0.0
        self.relay: StatusRelay | None = None
        """Writes its connectors' status news to the status topic (the group places)."""
        if group is not None:
            self.owner = SlotOwner(self) if group.places else None
            listener = self.owner or SelfFence(self.fence)
            self.membership = Membership(group, config.worker_id, listener)
            if group.places:
                self.relay = StatusRelay(
                    group, config.worker_id, self.membership.ownership, self.relay_texts
                )
            # A revocation is answered within the fence window, or the member fences itself.
            self.release_timeout = max(group.fence_after - 2.0, 1.0)
        self.worker_id = config.worker_id
        self.started_at = time.time()
        self.ownership_lock = threading.Lock()
        """Held while a connector is claimed or placed (the loop's thread); :meth:`release`
        takes it once, so nothing of the slots being let go of is claimed or placed after."""
        self.pass_losses = 0
        """The owner's :attr:`~SlotOwner.losses` when this pass began (:meth:`may_run`)."""
        self.nudges: set[str] = set()
        """Drivers whose placements this pass changed: nudged once, at the end of the step
        (:meth:`flush_nudges`), not once per connector."""
        self.drivers: dict[str, DriverProcess] = {}
        self.placed: dict[str, tuple[str, Placement]] = {}
        # Runs that ended here (by generation): not placed again until a restart or a stop.
        self.failed: dict[str, int] = {}
        self.finished: dict[str, int] = {}
        # Connectors taken out of a driver because their target is STOPPED: (driver, when).
        self.stopping: dict[str, tuple[str, float]] = {}
        self.next_driver = 1
        self.running = True
        # Real-time connectors: source partitions by (connector, revision); why one waits.
        self.partition_counts: dict[tuple[str, int], int] = {}
        self.unplaceable_reasons: dict[str, str] = {}
        self.short_of_quota: set[str] = set()
        """Teams a connector of which this pass could not place for the team's driver quota:
        no spare driver is started for them (it would take the room the connector waits for)."""
        self.store_watch = StoreWatch()
        self.epoch: str | None = None
        self.outage = Outage(f"runtime worker {config.worker_id}")
        self.heard: dict[str, tuple[float, float]] = {}
        """Driver id → its last heartbeat's time as it wrote it, and when (monotonic) this
        worker first read that heartbeat: a driver is silent for as long as its heartbeat
        has not changed, by this worker's own clock."""
        self.store_back_at = 0.0
        """When (monotonic) the store last answered after an outage: no driver's silence is
        counted from before it (a driver cannot heartbeat to a store that is away)."""
        self.drained = False
        """The console's last word on draining this worker (kept while the store is away)."""
        self.claimed: set[str] = set()
        """Connectors claimed in the console's store (the group places): not claimed again."""
        self.mirrored: dict[str, str] = {}
        """Each owned connector's status text as last copied to the console's store."""
        self.counts: dict[str, tuple[int, int]] = {}
        """The console's counts (dead letters, sink retries) as last read, for the relay."""
        self.unforgotten: set[str] = set()
        """Drivers gone whose heartbeat the console's store still holds (it was away)."""
        self.current: dict[str, Deployment] = {}
        """What this worker runs, as this pass read it (its drivers are handed it)."""
        self.pruned_at = 0.0
        """When (monotonic) the status files of connectors gone from here were last removed."""
        self.crashes = CrashBook(
            HostFiles.root_of(config.var_dir, config.worker_id) / "crashes.json"
        )
        """How many shared drivers each connector's tasks brought down (:mod:`.crashes`)."""

    # -- driver processes ---------------------------------------------------------------------

    def driver_command(
        self,
        driver_id: str,
        isolation: str,
        capacity: int,
        name: str,
        cores: int = 0,
        team: str = "",
    ) -> list[str]:
        # --jars are served by the driver to its executors, so on a standalone master the
        # Kafka connector reaches every executor without being installed on the workers.
        jars = ",".join(str(path) for path in self.config.spark_jars())
        host = self.config.resolved_driver_host()
        memory = self.driver_memory(isolation)
        master = self.config.spark_master
        if cores and master.startswith("local"):
            master = f"local[{cores}]"  # one task slot per source partition, no more
        command = [
            spark_submit_path(),
            "--master",
            master,
            "--name",
            name,
            "--driver-memory",
            memory,
            "--conf",
            "spark.ui.enabled=false",
            # Spark keeps its last 1,000 SQL executions, jobs and stages in memory with the UI
            # off; nothing reads them (the runtime reads executors): ~23 MiB of a busy
            # driver's heap (make bench-memory).
            *("--conf", f"spark.sql.ui.retainedExecutions={RETAINED_UI_ITEMS}"),
            *("--conf", f"spark.ui.retainedJobs={RETAINED_UI_ITEMS}"),
            *("--conf", f"spark.ui.retainedStages={RETAINED_UI_ITEMS}"),
            "--conf",
            f"spark.driver.host={host}",
            "--conf",
            f"spark.driver.bindAddress={self.config.driver_bind_address or host}",
            "--conf",
            "spark.sql.shuffle.partitions=2",
            "--conf",
            "spark.sql.streaming.stopGracefullyOnShutdown=true",
            # Each connector's jobs run in a pool of their own, shared fairly.
            "--conf",
            "spark.scheduler.mode=FAIR",
        ]
        if self.config.standalone:
            command += self.standalone_options(cores)
        if any(self.config.functions_dir.glob("*.jar")):
            # Names the connector whose task's fatal error ends the JVM (see offender()), and
            # stops the one that fills its memory (see the memory watch in docs/runtime.md).
            command += ["--conf", "spark.extraListeners=io.sluice.spark.LastWords"]
            command += self.memory_watch_options(memory)
        if jars:
            command += ["--jars", jars]
        arguments = self.driver_arguments(driver_id, isolation, capacity, team)
        return [*command, str(DRIVER_SCRIPT), *arguments, "--memory", memory, "--cores", str(cores)]

    def memory_watch_options(self, memory: str) -> list[str]:
        """The driver's memory watch (``MemoryWatch.java``) and its limits."""
        rss = self.config.driver_rss_limit_mb or (2 * memory_mb(memory) + 1024)
        return [
            "--conf",
            "spark.plugins=io.sluice.spark.MemoryWatch",
            "--conf",
            f"spark.sluice.memoryWatch.heapFraction={self.config.driver_heap_limit_percent / 100}",
            "--conf",
            f"spark.sluice.memoryWatch.rssMiB={rss}",
        ]

    def driver_arguments(
        self, driver_id: str, isolation: str, capacity: int, team: str = ""
    ) -> list[str]:
        """What every driver of this worker is told on its command line (a real one, and the
        stand-ins of the simulated mode and the tests), its team among it: it runs no other
        team's connector."""
        return [
            "--driver-id",
            driver_id,
            "--worker-id",
            self.worker_id,
            "--isolation",
            isolation,
            "--capacity",
            str(capacity),
            *(["--team", team] if team else []),
            *(["--link", str(self.files.root)] if self.files is not None else []),
        ]

    def driver_memory(self, isolation: str) -> str:
        if isolation == "dedicated":
            return self.config.driver_memory
        return self.config.shared_driver_memory

    def driver_cores(self, cores: int = 0) -> int:
        """The cores a driver holds, as its team's driver quota counts them: a real-time
        query's reserved ones (its master is ``local[cores]``), else its Spark master's
        task slots (``local[N]``: N; ``local[*]``: this worker's ``worker_cores``; ``local``:
        1), or on a standalone master the ``spark.cores.max`` it is started with."""
        if cores:
            return cores
        if self.config.standalone:
            return max(self.config.max_cores, self.config.executor_cores)
        return local_cores(self.config.spark_master, self.config.worker_cores)

    def standalone_options(self, cores: int = 0) -> list[str]:
        """What a driver needs on a standalone master: executor size and a cap on cores.

        Without ``spark.cores.max`` a standalone master gives an application every free
        core, and the next driver would wait for one forever.
        """
        config = self.config
        return [
            "--executor-memory",
            config.executor_memory,
            "--conf",
            f"spark.executor.cores={config.executor_cores}",
            "--conf",
            f"spark.cores.max={max(cores or config.max_cores, config.executor_cores)}",
            # Python run on executors (the http sink's senders) imports ``pipelines``.
            "--conf",
            f"spark.executorEnv.PYTHONPATH={REPO_ROOT}",
        ]

    def driver_env(self) -> dict[str, str]:
        env = driver_environment(os.environ)
        env.setdefault("SPARK_LOCAL_IP", self.config.resolved_driver_host())
        env["PYSPARK_PYTHON"] = self.config.python
        env["PYSPARK_DRIVER_PYTHON"] = self.config.python
        env["REDIS_URL"] = self.config.redis_url
        env["SLUICE_REDIS_PREFIX"] = self.config.key_prefix
        env["SLUICE_CHECKPOINT_ROOT"] = str(self.config.checkpoint_root)
        env["PYTHONPATH"] = os.pathsep.join(
            p for p in (str(REPO_ROOT), env.get("PYTHONPATH", "")) if p
        )
        return env

    def launch(
        self, isolation: str, name: str | None = None, cores: int = 0, team: str = ""
    ) -> DriverProcess:
        """Start a driver of ``team`` (``shared``, or ``dedicated`` to one connector;
        ``cores`` reserved for a real-time query). The team's driver quota is checked before
        (:meth:`over_quota`)."""
        driver_id = f"{self.worker_id}.d{self.next_driver}"
        self.next_driver += 1
        # A driver of this id an earlier run of this worker started may have left placements
        # behind (it died before its first heartbeat): the new one starts with none of them.
        self.link.forget_driver(driver_id)
        capacity = 1 if isolation == "dedicated" else self.config.channels_per_driver
        log_dir = self.config.var_dir / "logs" / "drivers"
        log_dir.mkdir(parents=True, exist_ok=True)
        log_path = log_dir / f"{driver_id}.log"
        log_file = log_path.open("ab")
        log_file.write(
            f"\n=== {time.strftime('%Y-%m-%dT%H:%M:%S')} worker {self.worker_id} starts "
            f"{isolation} driver {driver_id}\n".encode()
        )
        log_file.flush()  # the header must precede the driver's own output
        process = subprocess.Popen(
            self.driver_command(
                driver_id, isolation, capacity, name or f"sluice-{driver_id}", cores, team
            ),
            env=self.driver_env(),
            stdout=log_file,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            start_new_session=True,
            preexec_fn=_die_with_parent,
        )
        driver = DriverProcess(
            driver_id,
            isolation,
            capacity,
            process,
            log_path,
            log_file,
            time.time(),
            cores=cores,
            team=team,
            held_cores=self.driver_cores(cores),
            memory_mib=memory_mb(self.driver_memory(isolation)),
        )
        self.drivers[driver_id] = driver
        log.info(
            "started %s driver %s of team %r (pid %s)", isolation, driver_id, team, process.pid
        )
        return driver

    def retire(self, driver: DriverProcess) -> None:
        """Escalate: the driver stops itself via the store, then SIGTERM, then SIGKILL."""
        now = time.time()
        if driver.retire_requested_at is None:
            driver.retire_requested_at = now
            self.link.retire(driver.driver_id)
            self.link.nudge(driver.driver_id)
            log.info("retiring driver %s", driver.driver_id)
            return
        waited = now - driver.retire_requested_at
        grace = self.config.driver_stop_grace
        for sig, after in ((signal.SIGTERM, grace), (signal.SIGKILL, grace + 10)):
            if waited >= after and sig.name not in driver.signals_sent:
                driver.signals_sent.append(sig.name)
                log.warning("driver %s did not stop; sending %s", driver.driver_id, sig.name)
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(driver.process.pid, sig)

    def kill(self, driver: DriverProcess, why: str) -> None:
        """SIGKILL a driver that cannot be trusted any more (its connectors will be FAILED)."""
        if driver.killed_for:
            return
        driver.killed_for = why
        log.error("driver %s %s", driver.driver_id, why)
        with contextlib.suppress(ProcessLookupError):
            os.killpg(driver.process.pid, signal.SIGKILL)

    def reap(self, driver: DriverProcess, deployments: dict[str, Deployment]) -> None:
        """Forget an exited driver; each connector it still hosted is FAILED with the cause."""
        code = driver.process.returncode
        driver.log_file.close()
        del self.drivers[driver.driver_id]
        self.link.forget_driver(driver.driver_id)
        if self.files is not None:
            self.unforgotten.add(driver.driver_id)  # the console's copy: at the next pass
        log.info("driver %s exited with %s", driver.driver_id, code)
        orphans = [cid for cid, (did, _) in self.placed.items() if did == driver.driver_id]
        if driver.killed_for.startswith(FENCED):
            for cid in orphans:  # not failed: placed again once the worker is a member
                del self.placed[cid]
            return
        if not orphans:
            return
        tail = driver.log_tail()
        cause = exit_cause(driver, code, tail)
        # The queries' failures follow the last words in the log: read further back.
        culprit = (
            offender(driver, driver.log_tail(LAST_WORDS_BYTES))
            if driver.isolation == "shared"
            else None
        )
        if culprit is not None and culprit in orphans:
            self.spare_neighbours(driver, culprit, orphans)
            cause = self.blame(culprit, deployments.get(culprit), cause)
            orphans = [culprit]
        for cid in orphans:
            _, placement = self.placed.pop(cid)
            deployment = deployments.get(cid)
            if deployment is None or deployment.worker_id != self.worker_id:
                continue
            if deployment.generation != placement.generation:
                continue  # restarted meanwhile: placed again below
            if deployment.target_state not in _HOSTED_TARGETS:
                continue
            self.failed[cid] = placement.generation
            with log_context(connector=cid, channel=deployment.channel):
                log.error("connector %s failed with its driver: %s", cid, cause)
            # The driver's log (Spark's and the JVM's output too) may quote its secrets.
            masked = mask_secrets(tail, _secrets_of(deployment))
            self.report(cid, placement.generation, State.FAILED, format_trace(cause, masked))

    def spare_neighbours(self, driver: DriverProcess, culprit: str, orphans: list[str]) -> None:
        """The connectors a named offender's crash took down with it are placed again at
        once (this pass, in another shared driver), from their checkpoints: not FAILED."""
        for cid in orphans:
            if cid != culprit:
                del self.placed[cid]
                log.warning(
                    "connector %s lost driver %s to connector %s's task: placed again",
                    cid,
                    driver.driver_id,
                    culprit,
                )

    def blame(self, cid: str, deployment: Deployment | None, cause: str) -> str:
        """Count a shared driver's crash against ``cid``; the cause its trace gives."""
        count = self.crashes.crashed(cid, deployment.revision if deployment is not None else 0)
        cause = f"{cause}, in a task of connector {cid}; the other connectors it hosted run on"
        if count >= QUARANTINE_AFTER:
            return (
                f"{cause}. Quarantined: it brought down {count} shared drivers, so it runs "
                "in a Spark driver of its own from its next start (until a new revision)"
            )
        return f"{cause} (crash {count}; at {QUARANTINE_AFTER} it runs in a driver of its own)"

    def quarantine(self, cid: str, deployment: Deployment) -> str:
        """Why ``cid`` runs in a driver of its own against its spec (empty: it does not)."""
        if isolation_of(deployment) == "dedicated" or not self.crashes.quarantined(
            cid, deployment.revision
        ):
            return ""
        count = self.crashes.count(cid, deployment.revision)
        return (
            f"Quarantined: its tasks brought down or overfilled {count} shared Spark drivers "
            f"in revision {deployment.revision}, so it runs in a driver of its own until a "
            "new revision"
        )

    def isolation(self, cid: str, deployment: Deployment) -> str:
        """``dedicated`` for a quarantined connector, else as its spec says."""
        if self.crashes.quarantined(cid, deployment.revision):
            return "dedicated"
        return isolation_of(deployment)

    def report(self, cid: str, generation: int, state: State, trace: str = "") -> None:
        self.link.report(
            ConnectorStatus(
                connector_id=cid,
                state=state,
                worker_id=self.worker_id,
                generation=generation,
                trace=trace,
            )
        )

    # -- the loop -------------------------------------------------------------------------------

    def heartbeat(self) -> None:
        self.store.heartbeat(
            WorkerInfo(
                worker_id=self.worker_id,
                host=socket.gethostname(),
                pid=os.getpid(),
                started_at=self.started_at,
                last_heartbeat=time.time(),
                connectors=sorted(self.placed),
                drivers=sorted(self.drivers),
            )
        )

    def tell_the_console(self) -> None:
        """When the group places: copy to the console's store what it shows (this worker's
        heartbeat, its drivers', its connectors' statuses as they change), and claim what it
        could not claim before. At best: a store that is away is waited out (said every 30 s),
        and nothing of the runtime waits on it."""
        assert self.files is not None
        try:
            self.heartbeat()
            infos = [i for i in self.files.drivers() if i.worker_id == self.worker_id]
            for info in infos:
                self.store.driver_heartbeat(info)
            for driver_id in sorted(self.unforgotten):
                self.store.forget_driver(driver_id)
                self.unforgotten.discard(driver_id)
            self.mirror_statuses()
        except STORE_ERRORS as exc:
            self.outage.failed(exc)
        else:
            self.outage.over()

    def mirror_statuses(self) -> None:
        """Copy the statuses of the connectors this worker owns that changed since the last
        copy to the console's store; one the store refuses (its claim is not there: emptied,
        or written while it was away) is claimed again at the next pass."""
        assert self.files is not None
        owned = set(self.current)
        for cid in set(self.mirrored) - owned:
            del self.mirrored[cid]
        texts = self.files.status_texts(owned)
        changed = {cid: t for cid, t in texts.items() if self.mirrored.get(cid) != t}
        if not changed:
            return
        ids = sorted(changed)
        outcomes = self.store.report_many([status_from_text(changed[cid]) for cid in ids])
        for cid, outcome in zip(ids, outcomes, strict=True):
            if outcome == ReportOutcome.WRITTEN:
                self.mirrored[cid] = changed[cid]
            else:
                self.claimed.discard(cid)

    def relay_texts(self, connector_ids: Iterable[str]) -> dict[str, str]:
        """The statuses the relay writes to the status topic (read from the drivers' files),
        with the console's counts as last read (a store that is away keeps them as they
        were: the counts wait in the drivers meanwhile)."""
        assert self.files is not None
        ids = list(connector_ids)
        with contextlib.suppress(*STORE_ERRORS):  # (said by the worker's loop)
            self.counts.update(self.store.counts(ids))
        return self.files.status_texts(ids, self.counts)

    def forget_previous_drivers(self) -> None:
        """Drop what an earlier run of this worker left in the store (its drivers died
        with it: they are started with a parent-death signal)."""
        for info in self.store.drivers():
            if info.worker_id == self.worker_id:
                self.store.forget_driver(info.driver_id)

    def fence(self, why: str) -> None:
        """Stop every query of this worker now, by force: SIGKILL each driver's process
        group (a query killed resumes from its checkpoint wherever it runs next). Called from
        the group member's threads; its channels are not reported FAILED (:meth:`reap`)."""
        for driver in list(self.drivers.values()):
            if driver.exited():
                continue
            if not driver.killed_for.startswith(FENCED):
                driver.killed_for = f"{FENCED}: {why}"
                log.error("driver %s killed: %s", driver.driver_id, why)
            with contextlib.suppress(ProcessLookupError):
                os.killpg(driver.process.pid, signal.SIGKILL)

    def in_group(self) -> bool:
        """True when the worker may run channels: a member of the runtime's group now (or
        membership is off)."""
        if self.membership is None:
            return True
        self.membership.join()
        return self.membership.live()

    def out_of_group(self, deployments: dict[str, Deployment]) -> None:
        """Not a member (not yet joined, or fenced): no query runs here. Drivers still up are
        killed; those that exited are forgotten, their channels not reported FAILED."""
        if self.drivers and any(not d.exited() for d in self.drivers.values()):
            self.fence("not a member of the runtime group")
        for driver in list(self.drivers.values()):
            if driver.exited():
                self.reap(driver, deployments)

    def converge(self) -> None:
        """One level-triggered pass: make this host's drivers match the assignment.

        While the store has lost the console's desired state (emptied, not re-sent yet) the
        worker holds still: its drivers run on with what they run, and it writes back the
        placements it made (the drivers read them there); it converges again once the
        console has re-sent everything (:class:`~runtime_adapter.store.StoreWatch`).
        """
        epoch = self.link.epoch()
        if epoch != self.epoch:
            self.epoch = epoch
            self.write_back_placements()
        if self.store_watch.holds(epoch):
            return
        if self.owner is None:
            deployments = self.store.deployments()
        else:
            self.pass_losses = self.owner.losses  # before reading what it owns
            # The config topic's desired state, run here: the worker is the slot's owner.
            deployments = {
                cid: replace(d, worker_id=self.worker_id)
                for cid, d in self.owner.deployments().items()
            }
        draining = self.owner is not None and self.leaving()
        if draining:
            mine: dict[str, Deployment] = {}  # drained: its slots go to the others
        elif not self.in_group():
            self.out_of_group(deployments)
            return
        elif self.owner is not None:
            owned = self.owned_deployments(deployments)
            if owned is None:
                return  # slots were let go of meanwhile: the next pass (at once) starts anew
            mine = owned
        else:
            mine = {cid: d for cid, d in deployments.items() if d.worker_id == self.worker_id}
        self.current = mine
        infos = {i.driver_id: i for i in self.link.drivers() if i.worker_id == self.worker_id}
        self.watch_drivers(infos, deployments)
        self.forget_ended_runs(mine)
        if self.relay is not None:
            self.relay.own(set(mine), self.owner.slots() if self.owner is not None else None)
        statuses = self.link.statuses(set(mine) | set(self.placed))
        if self.files is not None and time.monotonic() - self.pruned_at >= PRUNE_EVERY:
            self.pruned_at = time.monotonic()
            self.files.keep_statuses(set(mine) | set(self.placed) | set(self.stopping))
        self.note_ended_runs(statuses)
        self.update_placements(mine)
        self.place_new(mine)
        if self.relay is not None:
            self.relay.capacity(self.capacity(len(mine), draining))
        self.report_stopped(mine, statuses, infos)
        self.keep_pool()

    def leaving(self) -> bool:
        """Whether the console drains this worker (the group places channels): it leaves the
        group, so that the coordinator gives its slots to the others once their channels have
        stopped here, and joins again when put back in service."""
        if self.membership is None:
            return False  # no group to leave (a test playing the member's part)
        try:
            self.drained = self.worker_id in self.store.draining()
        except STORE_ERRORS as exc:
            self.outage.failed(exc)  # the console cannot ask meanwhile: its last word stands
        drained = self.drained
        if drained and self.membership.joined():
            log.info("drained by the console: leaving the runtime group")
            self.membership.leave()
        return drained

    def owned_deployments(self, deployments: dict[str, Deployment]) -> dict[str, Deployment] | None:
        """The connectors of the slots this worker owns (the group placed them here), each
        claimed in the console's store for this worker (at best: a store that is away is
        claimed in once it is back): the claim is what the console shows as the connector's
        worker, and what the store checks the status copies against (a previous owner's are
        refused from then on). None when slots were taken away meanwhile (what was read is
        stale: a late claim would take a connector from its new owner)."""
        assert self.owner is not None
        mine = {cid: deployments[cid] for cid in self.owner.owned() if cid in deployments}
        self.claimed &= set(mine)
        with self.ownership_lock:
            if self.owner.losses != self.pass_losses:
                return None
            claims = sorted(
                cid
                for cid in mine
                if cid not in self.claimed and self.owner.owns(cid)  # (not deleted)
            )
            if claims:
                try:
                    self.store.assign_many(claims, self.worker_id)
                except STORE_ERRORS as exc:
                    self.outage.failed(exc)  # the channels run anyway: claimed when it is back
                    claims = []
        self.claimed.update(claims)
        for cid in claims:
            with log_context(connector=cid, channel=mine[cid].channel):
                log.info("took %s over (its slot is this worker's)", cid)
        return mine

    def release(self, connector_ids: frozenset[str], why: str) -> None:
        """Called by the group member before it lets go of slots (:class:`SlotOwner`):
        return once none of ``connector_ids`` runs in a driver of this worker. The loop
        takes them out of their drivers (they are no longer owned); past
        :attr:`release_timeout` the drivers still running one are killed (their other
        connectors are placed again), so the member answers the coordinator in time.

        The slots are already out of :attr:`owner` when this is called: once a claim or
        placement under way has ended (:attr:`ownership_lock`), none of ``connector_ids`` is
        claimed or placed here any more, and a pass of the loop that was under way stops at
        its next connector (:meth:`may_run`), so the next one takes them out at once."""
        with self.ownership_lock:
            pass
        self.wake()
        deadline = time.monotonic() + self.release_timeout
        log.info("releasing %d connector(s): %s", len(connector_ids), why)
        while time.monotonic() < deadline:
            if not self.running_here(connector_ids):
                return
            time.sleep(0.05)
        for driver in list(self.drivers.values()):
            if not driver.exited() and driver.placed & connector_ids:
                if not driver.killed_for:
                    driver.killed_for = f"{FENCED}: did not stop in time for {why}"
                    log.error("driver %s killed: %s", driver.driver_id, driver.killed_for)
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(driver.process.pid, signal.SIGKILL)
        for driver in list(self.drivers.values()):
            with contextlib.suppress(subprocess.TimeoutExpired):
                if driver.killed_for.startswith(FENCED):
                    driver.process.wait(timeout=5)

    def running_here(self, connector_ids: frozenset[str]) -> bool:
        """Whether a live driver of this worker still has one of ``connector_ids`` placed, or
        lists one in its heartbeat (a driver lists a connector until its query stopped); a
        store that cannot be read counts as yes."""
        live = [d for d in list(self.drivers.values()) if not d.exited()]
        if any(d.placed & connector_ids for d in live):
            return True
        try:
            listed = {i.driver_id: i for i in self.link.drivers()}
        except STORE_ERRORS:
            return True
        return any(
            set(listed[d.driver_id].connectors) & connector_ids
            for d in live
            if d.driver_id in listed
        )

    def wake(self) -> None:
        """Wake this worker's loop now (what it owns changed)."""
        if self.files is not None:
            self.woken.set()
            return
        with contextlib.suppress(*STORE_ERRORS):
            self.store.nudge(self.worker_id)

    def write_back_placements(self) -> None:
        """Write every placement this worker made to the store again, as they were (the
        store was emptied or replaced: its drivers must find them there, unchanged, or they
        would release their connectors)."""
        for cid, (driver_id, placement) in self.placed.items():
            self.store.place(driver_id, cid, placement)
        if self.epoch is not None:
            for driver_id in self.drivers:
                self.store.mark_placements(driver_id, self.epoch)
        if self.placed:
            log.info("wrote back %d placements to the store", len(self.placed))
        self.store.nudge(*self.drivers)

    def silence(self, info: DriverInfo) -> float:
        """Seconds the driver's heartbeat has not changed, by this worker's monotonic clock,
        counted from the store's return at the earliest."""
        now = time.monotonic()
        heard = self.heard.get(info.driver_id)
        if heard is None or heard[0] != info.last_heartbeat:
            heard = (info.last_heartbeat, now)
            self.heard[info.driver_id] = heard
        return now - max(heard[1], self.store_back_at)

    def watch_drivers(
        self, infos: dict[str, DriverInfo], deployments: dict[str, Deployment]
    ) -> None:
        now = time.time()
        for gone in set(self.heard) - set(infos):
            del self.heard[gone]
        for driver in list(self.drivers.values()):
            if driver.exited():
                self.reap(driver, deployments)
                continue
            info = infos.get(driver.driver_id)
            if info is not None and info.ready:
                driver.up = True
            if info is None or not info.ready:
                if now - driver.launched_at > self.config.driver_start_timeout:
                    self.kill(
                        driver,
                        f"did not start its SparkSession within "
                        f"{self.config.driver_start_timeout:g} s: killed",
                    )
            elif (silence := self.silence(info)) > self.config.driver_session_timeout:
                self.kill(
                    driver,
                    f"stopped heartbeating ({silence:.0f} s silent, session timeout "
                    f"{self.config.driver_session_timeout:g} s): killed",
                )
            if driver.retiring:
                self.retire(driver)  # escalates

    def forget_ended_runs(self, mine: dict[str, Deployment]) -> None:
        for ended in (self.failed, self.finished):
            for cid, generation in list(ended.items()):
                deployment = mine.get(cid)
                if (
                    deployment is None
                    or deployment.generation != generation
                    or deployment.target_state == TargetState.STOPPED
                ):
                    del ended[cid]

    def note_ended_runs(self, statuses: dict[str, ConnectorStatus]) -> None:
        """A placed connector whose run ended in its driver (FAILED, or finished) is not
        placed again until a restart or a stop."""
        for cid, (driver_id, placement) in list(self.placed.items()):
            status = statuses.get(cid)
            if status is None or status.generation != placement.generation:
                continue
            if status.worker_id != self.worker_id or status.updated_at < placement.placed_at:
                continue  # another worker's, or from a run before this placement
            if status.state == State.FAILED:
                if cid not in self.failed and MEMORY_WATCH in status.trace:
                    self.overfilled(cid, driver_id, placement)
                self.failed[cid] = placement.generation
            elif status.state == State.STOPPED and status.finished:
                self.finished[cid] = placement.generation

    def overfilled(self, cid: str, driver_id: str, placement: Placement) -> None:
        """A shared driver's memory watch stopped ``cid`` (it would have ended the JVM):
        counted as a crash of the driver toward its quarantine."""
        driver = self.drivers.get(driver_id)
        if driver is None or driver.isolation != "shared":
            return
        count = self.crashes.crashed(cid, placement.revision)
        log.warning(
            "connector %s stopped by the memory watch of driver %s (%d of %d before it runs "
            "in a driver of its own)",
            cid,
            driver_id,
            count,
            QUARANTINE_AFTER,
        )

    def wanted(self, cid: str, deployment: Deployment | None) -> bool:
        return (
            deployment is not None
            and deployment.target_state in _HOSTED_TARGETS
            and cid not in self.failed
            and cid not in self.finished
        )

    def update_placements(self, mine: dict[str, Deployment]) -> None:
        """Take out what is no longer wanted; place again what was restarted or redeployed."""
        for cid, (driver_id, placement) in list(self.placed.items()):
            deployment = mine.get(cid)
            driver = self.drivers[driver_id]
            if not self.wanted(cid, deployment):
                self.unplace(cid)
                if deployment is not None and deployment.target_state == TargetState.STOPPED:
                    self.stopping[cid] = (driver_id, time.time())
                continue
            assert deployment is not None  # wanted() is False for None
            if self.isolation(cid, deployment) != driver.isolation:
                self.unplace(cid)  # placed anew below, in a driver of the other kind
                continue
            if deployment.team != driver.team:
                self.unplace(cid)  # moved to another team: placed anew in one of its drivers
                continue
            if (deployment.generation, deployment.revision) == (
                placement.generation,
                placement.revision,
            ):
                continue
            if driver.isolation == "dedicated" and deployment.generation != placement.generation:
                self.unplace(cid)  # a restart of a dedicated connector replaces its JVM
                continue
            with self.ownership_lock:
                if self.may_run(cid):
                    self.place(cid, deployment, driver)
        self.flush_nudges()

    def place_new(self, mine: dict[str, Deployment]) -> None:
        self.short_of_quota.clear()
        try:
            for cid, deployment in sorted(mine.items()):
                if cid in self.placed or not self.wanted(cid, deployment):
                    continue
                if self.owner is not None and self.owner.losses != self.pass_losses:
                    break  # slots let go of meanwhile: the next pass starts at once
                self.stopping.pop(cid, None)
                with log_context(connector=cid, channel=deployment.channel):
                    self.place_one(cid, deployment)
        finally:
            self.flush_nudges()

    def place_one(self, cid: str, deployment: Deployment) -> None:
        cores = 0
        if real_time(deployment):
            cores = self.cores_for(cid, deployment)
            if not cores:
                return  # UNASSIGNED with the reason; tried again next pass
        with self.ownership_lock:
            if not self.may_run(cid):
                return
            driver: DriverProcess | None
            if self.isolation(cid, deployment) == "dedicated":
                driver = self.launch_within_quota(cid, deployment, "dedicated", cores)
            else:
                driver = self.shared_driver(
                    deployment.team,
                    alone=self.crashes.count(cid, deployment.revision) > 0,
                ) or self.launch_within_quota(cid, deployment, "shared")
            if driver is not None:
                self.place(cid, deployment, driver)

    def team_drivers(self, team: str) -> list[DriverProcess]:
        """The team's drivers on this worker that still run (retiring ones among them:
        they hold their cores and memory until they exit)."""
        return [d for d in self.drivers.values() if d.team == team and not d.exited()]

    def over_quota(self, deployment: Deployment, cores: int, memory_mib: int) -> str:
        """Why one more driver of ``deployment``'s team holding ``cores`` and ``memory_mib``
        would exceed the team's driver quota on this worker (``""``: it would not). The
        quota (:attr:`Deployment.policy`'s ``drivers``) is per worker: the cores and memory
        of the team's live drivers here, the new one's added."""
        quota = (deployment.policy or {}).get("drivers") or {}
        team = deployment.team
        drivers = self.team_drivers(team)
        for figure, unit, limit, field_name, held in (
            ("cores", "", quota.get("cores"), "max_driver_cores", cores),
            ("memory", " MiB", quota.get("memory_mib"), "max_driver_memory_mib", memory_mib),
        ):
            if not isinstance(limit, int) or isinstance(limit, bool):
                continue
            total = held + sum(d.held_cores if figure == "cores" else d.memory_mib for d in drivers)
            if total > limit:
                what = f"{total} cores" if figure == "cores" else f"{total} MiB of memory"
                return (
                    f"team {team}'s drivers on worker {self.worker_id} would hold {what}, "
                    f"over its quota of {limit}{unit} ({field_name}): not started"
                )
        return ""

    def launch_within_quota(
        self, cid: str, deployment: Deployment, isolation: str, cores: int = 0
    ) -> DriverProcess | None:
        """A new driver of ``deployment``'s team for ``cid``; None when the team's driver
        quota has no room for it (``cid`` is then reported UNASSIGNED with the quota named,
        and placed at a later pass once the team's drivers here hold less). Empty shared
        drivers of the team that stand in the way (kept spare or warm) are retired first."""
        new_cores = self.driver_cores(cores)
        new_memory = memory_mb(self.driver_memory(isolation))
        why = self.over_quota(deployment, new_cores, new_memory)
        if why:
            idle = [
                d
                for d in self.team_drivers(deployment.team)
                if d.isolation == "shared" and not d.placed and not d.retiring
            ]
            freed_cores = sum(d.held_cores for d in idle)
            freed_memory = sum(d.memory_mib for d in idle)
            if idle and not self.over_quota(
                deployment, new_cores - freed_cores, new_memory - freed_memory
            ):
                for driver in idle:
                    self.retire(driver)  # room once they exited: placed at a later pass
            self.short_of_quota.add(deployment.team)
            self.unplaceable(cid, deployment, why)
            return None
        name = f"sluice-{deployment.channel}" if isolation == "dedicated" else None
        return self.launch(isolation, name=name, cores=cores, team=deployment.team)

    def may_run(self, cid: str) -> bool:
        """Whether this pass may still claim or place ``cid``: always, unless the group
        places channels; then only while its slot is owned and no slot was let go of since
        the pass began (its view of what it owns would be stale)."""
        return self.owner is None or (
            self.owner.losses == self.pass_losses and self.owner.owns(cid)
        )

    def flush_nudges(self) -> None:
        """Wake the drivers whose placements changed: they act on all of them in one pass."""
        if self.files is not None:
            self.files.hand_over(self.current)  # a driver's new file is its nudge
            self.nudges.clear()
        elif self.nudges:
            wake, self.nudges = sorted(self.nudges), set()
            self.store.nudge(*wake)

    def cores_held(self) -> int:
        """The cores this worker's real-time queries hold now (their live drivers')."""
        return sum(d.cores for d in self.drivers.values() if not d.exited())

    def capacity(self, connectors: int, draining: bool) -> dict[str, int | bool]:
        """What this worker tells the console of its capacity and load (its own record in
        the status topic): the console moves a real-time channel its owner has no cores for
        to a worker that has them."""
        figures: dict[str, int | bool] = {
            "cores": self.config.worker_cores,
            "cores_held": self.cores_held(),
            "connectors": connectors,
            "draining": draining,
        }
        available = memory_available_mb()
        if available is not None:
            figures["memory_available_mb"] = available
        return figures

    def cores_for(self, cid: str, deployment: Deployment) -> int:
        """The cores a real-time connector needs (one per source partition) when this worker
        has them free; else 0, and the connector is reported UNASSIGNED with the reason (a
        real-time query short of cores would run, silently reading only some partitions)."""
        try:
            needed = self.partitions_of(cid, deployment)
        except Exception as exc:  # brokers away, no such topic yet: say so, try again
            self.unplaceable(cid, deployment, f"real-time mode: cannot count its cores: {exc}")
            return 0
        held = self.cores_held()
        free = self.config.worker_cores - held
        if needed > free:
            self.unplaceable(
                cid,
                deployment,
                f"real-time mode needs {needed} cores (one per source partition) and worker "
                f"{self.worker_id} has {max(free, 0)} of {self.config.worker_cores} free "
                f"({held} held by real-time channels): not started",
                cores_needed=needed,
            )
            return 0
        return needed

    def partitions_of(self, cid: str, deployment: Deployment) -> int:
        key = (cid, deployment.revision)
        if key not in self.partition_counts:
            from runtime_adapter.offsets import kafka_source, source_partitions

            source = kafka_source(decrypted_spec(deployment.spec)[0])
            if source is None:
                raise ValueError("its source does not read Kafka")
            partitions = source_partitions(source)
            if not partitions:
                raise ValueError(
                    f"its source topics {', '.join(source.topics or ())} have no partition"
                )
            self.partition_counts[key] = len(partitions)
        return self.partition_counts[key]

    def unplaceable(
        self, cid: str, deployment: Deployment, reason: str, *, cores_needed: int = 0
    ) -> None:
        """Report a connector this worker cannot place, with why (once per reason), and the
        cores it needs when it lacks cores."""
        if self.unplaceable_reasons.get(cid) == reason:
            return
        self.unplaceable_reasons[cid] = reason
        log.warning("connector %s: %s", cid, reason)
        self.link.report(
            ConnectorStatus(
                connector_id=cid,
                state=State.UNASSIGNED,
                worker_id=self.worker_id,
                generation=deployment.generation,
                reason=reason,
                cores_needed=cores_needed,
            )
        )

    def shared_driver(self, team: str, alone: bool = False) -> DriverProcess | None:
        """The fullest shared driver of ``team`` with room (the oldest on a tie); None when
        the team has none here (a new one is started within the team's quota). Another
        team's driver is never one: a crash costs no other team's connector.

        ``alone`` (a connector on probation: it has brought a shared driver down once) takes
        an empty one when there is one (a spare), so that a second crash costs no neighbour.
        """
        candidates = [
            d
            for d in self.drivers.values()
            if d.isolation == "shared" and d.team == team and d.has_room()
        ]
        if not candidates:
            return None
        empty = [d for d in candidates if not d.placed]
        if alone and empty:
            return max(empty, key=lambda d: -d.launched_at)
        return max(candidates, key=lambda d: (len(d.placed), -d.launched_at))

    def place(self, cid: str, deployment: Deployment, driver: DriverProcess) -> None:
        from pipelines.spec.secrets import install_masking_filter

        if driver.team != deployment.team:
            # Never: a connector runs only in its own team's drivers, whatever asked for this.
            log.error(
                "refused to place %s (team %r) in driver %s of team %r",
                cid,
                deployment.team,
                driver.driver_id,
                driver.team,
            )
            return
        # This process's log lines (a driver's log tail) never quote a connector's secret.
        install_masking_filter(_secrets_of(deployment))
        self.unplaceable_reasons.pop(cid, None)
        placement = Placement(
            deployment.generation,
            deployment.revision,
            time.time(),
            quarantine=self.quarantine(cid, deployment),
        )
        self.link.place(driver.driver_id, cid, placement, self.epoch)
        self.nudges.add(driver.driver_id)
        self.placed[cid] = (driver.driver_id, placement)
        driver.placed.add(cid)
        driver.empty_since = None
        log.info(
            "placed %s (generation %s, revision %s) in driver %s",
            cid,
            deployment.generation,
            deployment.revision,
            driver.driver_id,
        )

    def unplace(self, cid: str) -> None:
        driver_id, _ = self.placed.pop(cid)
        self.link.unplace(driver_id, cid)
        self.nudges.add(driver_id)
        driver = self.drivers.get(driver_id)
        if driver is not None:
            driver.placed.discard(cid)
            if not driver.placed:
                driver.empty_since = time.time()
        log.info("took %s out of driver %s", cid, driver_id)

    def report_stopped(
        self,
        mine: dict[str, Deployment],
        statuses: dict[str, ConnectorStatus],
        infos: dict[str, DriverInfo],
    ) -> None:
        """Report STOPPED for a connector stopped here once no driver runs its query."""
        for cid, deployment in mine.items():
            if deployment.target_state != TargetState.STOPPED:
                continue
            # Stopped: a later start short of cores is reported again (the console may move
            # it to a worker that has them).
            self.unplaceable_reasons.pop(cid, None)
            if cid in self.placed:
                continue
            if cid in self.stopping:
                driver_id, since = self.stopping[cid]
                info = infos.get(driver_id)
                if driver_id in self.drivers and (
                    info is None or info.last_heartbeat <= since or cid in info.connectors
                ):
                    continue  # its driver may still be stopping the query
                del self.stopping[cid]
            current = statuses.get(cid)
            if current is None or current.state != State.STOPPED:
                self.report(cid, deployment.generation, State.STOPPED)

    def pool_teams(self) -> dict[str, Deployment | None]:
        """The teams whose shared drivers this worker keeps a pool of: those with a connector
        it runs (each with one of their deployments, which carries the team's quota), or the
        pre-teams drivers' ``""`` when it runs none (an idle worker keeps its warm driver)."""
        teams: dict[str, Deployment | None] = {}
        for cid, deployment in sorted(self.current.items()):
            if self.wanted(cid, deployment):
                teams.setdefault(deployment.team, deployment)
        return teams or {"": None}

    def keep_pool(self) -> None:
        """For each team with connectors here, keep ``warm_drivers`` shared drivers of the
        team running (empty or not), and ``spare_drivers`` empty ones beside those hosting
        its connectors, within the team's driver quota; retire empty ones beyond them once
        idle long enough (every empty one of a team with no connector here), and dedicated
        ones as soon as they are empty. A team's spares are started once its drivers have
        started (a JVM's start takes cores the starts its channels wait for need)."""
        now = time.time()
        teams = self.pool_teams()
        shared = [d for d in self.drivers.values() if d.isolation == "shared" and not d.retiring]
        for team in sorted(set(teams) | {d.team for d in shared}):
            own = [d for d in shared if d.team == team]
            busy = sum(1 for d in own if d.placed)
            wanted = (
                max(self.config.warm_drivers, busy + self.config.spare_drivers)
                if team in teams
                else busy
            )
            surplus = len(own) - wanted
            empty = sorted((d for d in own if not d.placed), key=lambda d: -d.launched_at)
            for driver in empty:
                if surplus <= 0:
                    break
                idle = now - (driver.empty_since or driver.launched_at)
                if idle >= self.config.driver_idle_seconds:
                    self.retire(driver)
                    surplus -= 1
            deployment = teams.get(team)
            starting = any(not d.up for d in self.team_drivers(team))
            for _ in range(-surplus):
                if team in self.short_of_quota:
                    break  # its room goes to the connector that waits for it
                if starting and busy:
                    break  # a spare waits for the team's drivers to start: no JVM competes

                if deployment is not None and self.over_quota(
                    deployment, self.driver_cores(), memory_mb(self.driver_memory("shared"))
                ):
                    break  # no spare beyond the team's quota
                self.launch("shared", team=team)
        for driver in list(self.drivers.values()):
            if driver.isolation == "dedicated" and not driver.placed and not driver.retiring:
                self.retire(driver)

    def run(self) -> None:
        log.info(
            "runtime worker %s up (Spark master %s, %d connector jars)",
            self.worker_id,
            self.config.spark_master,
            len(self.config.spark_jars()),
        )
        if self.files is not None:
            self.files.clear()
        with contextlib.suppress(redis.RedisError):
            self.forget_previous_drivers()
        if self.relay is not None:
            self.relay.start()
        while self.running:
            started = time.monotonic()
            self.turn()
            self.pause(self.config.heartbeat_interval - (time.monotonic() - started))
        self.shutdown()

    def turn(self) -> None:
        """One turn of the loop: heartbeat, then converge. No error ends the worker (its
        drivers would die with it): a store that cannot be reached is waited out, its drivers
        running on, and no driver's silence is counted from before the store answers again."""
        try:
            if self.files is not None:
                self.converge()  # no store on its path: the console's copies come after
                self.tell_the_console()
                return
            self.heartbeat()
            back = self.outage.over()
            if back is not None:
                self.store_back_at = back
            self.converge()
        except STORE_ERRORS as exc:
            self.outage.failed(exc)  # said every 30 s
        except Exception:
            # E.g. a record this code cannot read: dying would take every driver here
            # down with the worker (parent-death signal); retry, the drivers keep running.
            log.exception("converging failed; retrying")

    def pause(self, seconds: float) -> None:
        """Wait for the next pass: ``seconds``, or less when nudged (a change to act on)."""
        if self.files is not None:
            self.woken.wait(max(seconds, 0.0))
            self.woken.clear()
            return
        try:
            self.store.wait_nudge(self.worker_id, seconds)
        except redis.RedisError:
            time.sleep(max(seconds, 0.05))

    def shutdown(self) -> None:
        """Retire every driver (their queries stop), then SIGTERM and SIGKILL the rest."""
        for driver in self.drivers.values():
            with contextlib.suppress(redis.RedisError):
                self.link.retire(driver.driver_id)
        deadline = time.time() + self.config.driver_stop_grace
        _wait_all(self.drivers.values(), deadline)
        for sig in (signal.SIGTERM, signal.SIGKILL):
            for driver in self.drivers.values():
                if not driver.exited():
                    with contextlib.suppress(ProcessLookupError):
                        os.killpg(driver.process.pid, sig)
            _wait_all(self.drivers.values(), time.time() + 5)
        for driver in self.drivers.values():
            driver.log_file.close()
            with contextlib.suppress(redis.RedisError):
                self.link.forget_driver(driver.driver_id)
            if self.files is not None:
                with contextlib.suppress(*STORE_ERRORS):
                    self.store.forget_driver(driver.driver_id)
        if self.relay is not None:
            self.relay.close()
        if self.membership is not None:
            self.membership.close()  # its queries are stopped: leave the group
        log.info("runtime worker %s stopped", self.worker_id)


def _wait_all(drivers: Iterable[DriverProcess], deadline: float) -> None:
    for driver in drivers:
        with contextlib.suppress(subprocess.TimeoutExpired):
            driver.process.wait(timeout=max(deadline - time.time(), 0.1))


def _secrets_of(deployment: Deployment) -> list[str]:
    """The plaintext secrets of ``deployment``; none when they cannot be decrypted (then
    no process could have used, or quoted, them)."""
    try:
        return decrypted_spec(deployment.spec)[1]
    except ValueError as exc:
        log.warning("cannot decrypt the secrets of %s: %s", deployment.connector_id, exc)
        return []


def main(worker_type: type[RuntimeWorker] = RuntimeWorker) -> None:
    """Run a runtime worker configured from the environment (``worker_type``: another kind,
    such as :class:`~runtime_adapter.host.simulated.SimulatedDriverWorker`)."""
    configure_logging("runtime-worker")
    config = RuntimeConfig.from_env()
    set_process_context(worker=config.worker_id)
    become_runtime_user(
        config.runtime_user,
        # (host/: the link to its drivers when the group places, runtime_adapter.host.link)
        folders=[
            config.checkpoint_root,
            config.var_dir / "logs" / "drivers",
            config.var_dir / "host",
        ],
        needed=[REPO_ROOT, Path(config.python), Path(sys.base_prefix), *config.spark_jars()],
    )
    settings = RuntimeSettings.load()
    group = GroupConfig.from_settings(settings) if settings.runtime_membership else None
    worker = worker_type(config, RedisStore.from_url(config.redis_url, config.key_prefix), group)

    def _stop(signum: int, _frame: object) -> None:
        worker.running = False

    signal.signal(signal.SIGTERM, _stop)
    signal.signal(signal.SIGINT, _stop)
    # ``kill -USR1 <pid>``: every thread's stack to the worker's stderr (its log), the
    # process running on: what a worker that looks stuck is doing.
    faulthandler.register(signal.SIGUSR1, all_threads=True)
    try:
        worker.run()
    except KeyboardInterrupt:
        worker.shutdown()
    sys.exit(0)


if __name__ == "__main__":
    main()
