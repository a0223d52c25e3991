"""The runtime worker: ``python -m runtime_adapter.worker``.

A long-lived agent on a runtime host. Every ``heartbeat_interval`` seconds it
heartbeats to Redis and converges its drivers to the assignment the console
wrote there:

* an assigned connector whose target is RUNNING or PAUSED and that has no
  driver here gets one (``spark-submit`` of :mod:`runtime_adapter.driver`);
* a driver whose connector was unassigned, deleted, restarted (newer generation)
  or redeployed (another revision) is stopped; a restarted or redeployed one is
  started again;
* a connector whose target is STOPPED loses its driver and is reported STOPPED;
* a driver that dies without reporting is reported FAILED with the tail of its log.

Drivers stop by themselves when they stop owning their connector; the worker
escalates to SIGTERM and then SIGKILL of the driver's process group after a
grace period. Drivers are started with a parent-death signal, so a killed
worker does not leave drivers behind.
"""

from __future__ import annotations

import contextlib
import ctypes
import logging
import os
import signal
import socket
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO

import redis

from runtime_adapter.base import ConnectorStatus, Deployment, WorkerInfo
from runtime_adapter.config import REPO_ROOT, RuntimeConfig
from runtime_adapter.driver import decrypted_spec, format_trace, mask_secrets
from runtime_adapter.logs import configure_logging, log_context, set_process_context
from runtime_adapter.privileges import become_runtime_user, driver_environment
from runtime_adapter.states import State, TargetState
from runtime_adapter.store import RedisStore

log = logging.getLogger("sluice.worker")

DRIVER_SCRIPT = Path(__file__).with_name("driver.py")
LOG_TAIL_BYTES = 8_000
_PR_SET_PDEATHSIG = 1


def _die_with_parent() -> None:  # runs in the child between fork and exec
    with contextlib.suppress(OSError):
        ctypes.CDLL("libc.so.6", use_errno=True).prctl(_PR_SET_PDEATHSIG, signal.SIGTERM)


def _channel_of(deployment: Deployment | None) -> str | None:
    return deployment.channel if deployment is not None else None


def spark_submit_path() -> str:
    import pyspark

    return str(Path(pyspark.__file__).parent / "bin" / "spark-submit")


@dataclass
class DriverProcess:
    """A driver this worker started, and what it was started for."""

    connector_id: str
    generation: int
    revision: int
    process: subprocess.Popen
    log_path: Path
    log_file: IO[bytes]
    stop_requested_at: float | None = None
    signals_sent: list[str] = field(default_factory=list)

    def exited(self) -> bool:
        return self.process.poll() is not None

    def log_tail(self) -> str:
        with self.log_path.open("rb") as handle:
            handle.seek(0, os.SEEK_END)
            size = handle.tell()
            handle.seek(max(size - LOG_TAIL_BYTES, 0))
            return handle.read().decode("utf-8", errors="replace")


class RuntimeWorker:
    """Hosts connector drivers and converges them to this worker's assignment."""

    def __init__(self, config: RuntimeConfig, store: RedisStore) -> None:
        self.config = config
        self.store = store
        self.worker_id = config.worker_id
        self.started_at = time.time()
        self.drivers: dict[str, DriverProcess] = {}
        # Drivers that failed: not started again until a restart (new generation) or a stop.
        self.failed: dict[str, int] = {}
        self.running = True

    # -- driver processes ---------------------------------------------------------------------

    def driver_command(self, deployment: Deployment) -> list[str]:
        # --jars are served by the driver to its executors, so on a standalone master the
        # Kafka connector reaches every executor without being installed on the workers.
        jars = ",".join(str(path) for path in self.config.spark_jars())
        host = self.config.resolved_driver_host()
        command = [
            spark_submit_path(),
            "--master",
            self.config.spark_master,
            "--name",
            f"sluice-{deployment.channel}",
            "--driver-memory",
            self.config.driver_memory,
            "--conf",
            "spark.ui.enabled=false",
            "--conf",
            f"spark.driver.host={host}",
            "--conf",
            f"spark.driver.bindAddress={self.config.driver_bind_address or host}",
            "--conf",
            "spark.sql.shuffle.partitions=2",
            "--conf",
            "spark.sql.streaming.stopGracefullyOnShutdown=true",
        ]
        if self.config.standalone:
            command += self.standalone_options()
        if jars:
            command += ["--jars", jars]
        command += [
            str(DRIVER_SCRIPT),
            "--connector-id",
            deployment.connector_id,
            "--worker-id",
            self.worker_id,
            "--generation",
            str(deployment.generation),
        ]
        return command

    def standalone_options(self) -> list[str]:
        """What a driver needs on a standalone master: executor size and a cap on cores.

        Without ``spark.cores.max`` a standalone master gives an application every free
        core, and the next connector would wait for one forever.
        """
        config = self.config
        return [
            "--executor-memory",
            config.executor_memory,
            "--conf",
            f"spark.executor.cores={config.executor_cores}",
            "--conf",
            f"spark.cores.max={max(config.max_cores, config.executor_cores)}",
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

    def launch(self, deployment: Deployment) -> None:
        from pipelines.spec.secrets import install_masking_filter

        # This process's log lines never quote a secret of a connector it hosts.
        install_masking_filter(_secrets_of(deployment))
        log_dir = self.config.var_dir / "logs" / "connectors"
        log_dir.mkdir(parents=True, exist_ok=True)
        log_path = log_dir / f"{deployment.connector_id}.log"
        log_file = log_path.open("ab")
        log_file.write(
            f"\n=== {time.strftime('%Y-%m-%dT%H:%M:%S')} worker {self.worker_id} starts "
            f"generation {deployment.generation}\n".encode()
        )
        log_file.flush()  # the header must precede the driver's own output
        process = subprocess.Popen(
            self.driver_command(deployment),
            env=self.driver_env(),
            stdout=log_file,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            start_new_session=True,
            preexec_fn=_die_with_parent,
        )
        self.drivers[deployment.connector_id] = DriverProcess(
            deployment.connector_id,
            deployment.generation,
            deployment.revision,
            process,
            log_path,
            log_file,
        )
        log.info(
            "started driver for %s (generation %s, pid %s)",
            deployment.connector_id,
            deployment.generation,
            process.pid,
        )

    def request_stop(self, driver: DriverProcess) -> None:
        """Escalate: the driver stops itself via Redis, then SIGTERM, then SIGKILL."""
        now = time.time()
        if driver.stop_requested_at is None:
            driver.stop_requested_at = now
            return
        waited = now - driver.stop_requested_at
        grace = self.config.driver_stop_grace
        for sig, after in ((signal.SIGTERM, grace), (signal.SIGKILL, grace + 10)):
            if waited >= after and sig.name not in driver.signals_sent:
                driver.signals_sent.append(sig.name)
                log.warning("driver %s did not stop; sending %s", driver.connector_id, sig.name)
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(driver.process.pid, sig)

    def reap(self, driver: DriverProcess, deployment: Deployment | None) -> None:
        """Forget an exited driver; report FAILED if it died without saying why."""
        code = driver.process.returncode
        driver.log_file.close()
        del self.drivers[driver.connector_id]
        stopped_by_us = driver.stop_requested_at is not None
        if code != 0 and not stopped_by_us:
            self.failed[driver.connector_id] = driver.generation
        log.info("driver for %s exited with %s", driver.connector_id, code)
        if deployment is None or deployment.worker_id != self.worker_id:
            return
        if stopped_by_us or deployment.generation != driver.generation:
            return
        if deployment.target_state == TargetState.STOPPED:
            self.report(driver.connector_id, driver.generation, State.STOPPED)
            return
        current = self.store.statuses([driver.connector_id]).get(driver.connector_id)
        if code != 0 and (current is None or current.state != State.FAILED):
            summary = f"driver process exited with code {code} without reporting a failure"
            # The driver's log (Spark's and the JVM's output too) may quote its secrets.
            tail = mask_secrets(driver.log_tail(), _secrets_of(deployment))
            self.report(
                driver.connector_id,
                driver.generation,
                State.FAILED,
                format_trace(summary, tail),
            )

    def report(self, cid: str, generation: int, state: State, trace: str = "") -> None:
        self.store.report(
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
                connectors=sorted(self.drivers),
            )
        )

    def converge(self) -> None:
        """One level-triggered pass: make this host's drivers match the assignment."""
        deployments = self.store.deployments()
        mine = {cid: d for cid, d in deployments.items() if d.worker_id == self.worker_id}
        for cid, driver in list(self.drivers.items()):
            deployment = mine.get(cid)
            with log_context(connector=cid, channel=_channel_of(deployments.get(cid))):
                if driver.exited():
                    self.reap(driver, deployments.get(cid))
                    continue
                wanted = (
                    deployment is not None
                    and deployment.generation == driver.generation
                    and deployment.revision == driver.revision
                    and deployment.target_state != TargetState.STOPPED
                )
                if not wanted:
                    self.request_stop(driver)
        for cid, generation in list(self.failed.items()):
            deployment = mine.get(cid)
            if (
                deployment is None
                or deployment.generation != generation
                or deployment.target_state == TargetState.STOPPED
            ):
                del self.failed[cid]
        statuses = self.store.statuses(list(mine))
        for cid, deployment in mine.items():
            if cid in self.drivers:
                continue
            if deployment.target_state == TargetState.STOPPED:
                current = statuses.get(cid)
                if current is None or current.state != State.STOPPED:
                    self.report(cid, deployment.generation, State.STOPPED)
                continue
            if cid in self.failed:
                continue  # wait for a restart or a stop before trying again
            with log_context(connector=cid, channel=deployment.channel):
                self.launch(deployment)

    def run(self) -> None:
        log.info(
            "runtime worker %s up (Spark master %s, %d connector jars)",
            self.worker_id,
            self.config.spark_master,
            len(self.config.spark_jars()),
        )
        while self.running:
            started = time.monotonic()
            try:
                self.heartbeat()
                self.converge()
            except redis.RedisError as exc:
                log.warning("Redis unavailable, retrying: %s", exc)
            except Exception:
                # E.g. a record this code cannot read: dying would take every driver here
                # down with the worker (parent-death signal); retry, the drivers keep running.
                log.exception("converging failed; retrying")
            elapsed = time.monotonic() - started
            time.sleep(max(self.config.heartbeat_interval - elapsed, 0.05))
        self.shutdown()

    def shutdown(self) -> None:
        """Stop every driver: SIGTERM, then SIGKILL after the grace period."""
        for driver in self.drivers.values():
            with contextlib.suppress(ProcessLookupError):
                os.killpg(driver.process.pid, signal.SIGTERM)
        deadline = time.time() + self.config.driver_stop_grace
        for driver in self.drivers.values():
            try:
                driver.process.wait(timeout=max(deadline - time.time(), 0.1))
            except subprocess.TimeoutExpired:
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(driver.process.pid, signal.SIGKILL)
        log.info("runtime worker %s stopped", self.worker_id)


def _secrets_of(deployment: Deployment) -> list[str]:
    """The plaintext secrets of ``deployment``; none when they cannot be decrypted (then
    no process could have used, or quoted, them)."""
    try:
        return decrypted_spec(deployment.spec)[1]
    except ValueError as exc:
        log.warning("cannot decrypt the secrets of %s: %s", deployment.connector_id, exc)
        return []


def main() -> None:
    configure_logging("runtime-worker")
    config = RuntimeConfig.from_env()
    set_process_context(worker=config.worker_id)
    become_runtime_user(
        config.runtime_user,
        folders=[config.checkpoint_root, config.var_dir / "logs" / "connectors"],
        needed=[REPO_ROOT, Path(config.python), Path(sys.base_prefix), *config.spark_jars()],
    )
    worker = RuntimeWorker(config, RedisStore.from_url(config.redis_url, config.key_prefix))

    def _stop(signum: int, _frame: object) -> None:
        worker.running = False

    signal.signal(signal.SIGTERM, _stop)
    signal.signal(signal.SIGINT, _stop)
    try:
        worker.run()
    except KeyboardInterrupt:
        worker.shutdown()
    sys.exit(0)


if __name__ == "__main__":
    main()
