"""Simulated drivers: the runtime worker's real loop with stand-in drivers, to run thousands of
channels without Spark (``make bench-group``, tests).

:class:`SimulatedDriverWorker` is a :class:`~runtime_adapter.host.worker.RuntimeWorker` in
every respect (its loop, its membership of the runtime group, its claims, releases and
fences) but the driver it starts: ``python -m runtime_adapter.host.simulated driver …``, a
small Python process (:class:`SimulatedDriver`) that hosts up to its capacity of connectors
and runs no query. Towards its worker and the store it behaves as a real driver
(:mod:`runtime_adapter.host.driver`) does:

* every :data:`TICK` seconds, or at once when nudged, it reads its placements and the targets
  of what it hosts; a new placement is reported RUNNING (PAUSED for a paused target) at
  once, a placement taken away stops hosting its connector (listed in the heartbeat
  ``stop_seconds`` more, as a query that takes that long to stop) and, when its target is
  STOPPED, is reported STOPPED;
* it reports each hosted connector again every ``SLUICE_STATUS_INTERVAL`` seconds, as a
  connector's :class:`~runtime_adapter.host.reporter.StatusReporter` does, all of a pass's
  reports in one pipeline (thousands of channels cost Redis a few requests a second);
* a report the store refuses (it names another owner) ends that connector here, as a real
  connector's query stops;
* it heartbeats with the connectors it hosts, and exits when retired, on SIGTERM, or when its
  worker dies.

``python -m runtime_adapter.host.simulated`` runs a simulated runtime worker configured from
the environment as ``python -m runtime_adapter.host.worker`` is (``SLUICE_WORKER_ID``,
``REDIS_URL``, ``SLUICE_RUNTIME_*``…); ``SLUICE_CHANNELS_PER_DRIVER`` sets how many
connectors one stand-in driver hosts.
"""

from __future__ import annotations

import argparse
import logging
import os
import signal
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from runtime_adapter.base import ConnectorStatus, Deployment, DriverInfo
from runtime_adapter.config import RuntimeConfig
from runtime_adapter.host.link import HostFiles
from runtime_adapter.host.worker import RuntimeWorker
from runtime_adapter.host.worker import main as worker_main
from runtime_adapter.logs import configure_logging, set_process_context
from runtime_adapter.states import State, TargetState
from runtime_adapter.store import STORE_ERRORS, Outage, Placement, RedisStore, ReportOutcome

log = logging.getLogger("sluice.driver")

TICK = 1.0
"""Seconds between two passes of a simulated driver (a nudge starts one at once), as a real
driver's :data:`~runtime_adapter.host.driver.TICK`."""


class SimulatedDriverWorker(RuntimeWorker):
    """A runtime worker whose drivers are :class:`SimulatedDriver` processes."""

    stop_seconds: float = 0.0
    """How long a simulated query takes to stop (its driver lists it that long)."""

    def driver_command(
        self,
        driver_id: str,
        isolation: str,
        capacity: int,
        name: str,
        cores: int = 0,
        team: str = "",
    ) -> list[str]:
        return [
            self.config.python,
            "-m",
            "runtime_adapter.host.simulated",
            "driver",
            *self.driver_arguments(driver_id, isolation, capacity, team),
            "--stop-seconds",
            str(self.stop_seconds),
        ]


@dataclass
class _Hosted:
    placement: Placement
    state: State
    reported_at: float = float("-inf")
    """When (monotonic) its status was last written; -inf: due now."""


class SimulatedDriver:
    """A stand-in driver (see the module's description)."""

    def __init__(
        self,
        store: RedisStore,
        *,
        driver_id: str,
        worker_id: str,
        isolation: str = "shared",
        capacity: int = 1,
        status_interval: float = 10.0,
        stop_seconds: float = 0.0,
        link: HostFiles | None = None,
        team: str = "",
    ) -> None:
        self.store = store
        self.files = link
        """Its worker's host files (the group places): its placements, with their
        deployments, come from there and its statuses and heartbeats go there, no store."""
        self.driver_id = driver_id
        self.worker_id = worker_id
        self.isolation = isolation
        self.capacity = capacity
        self.team = team
        self.status_interval = status_interval
        self.stop_seconds = stop_seconds
        self.started_at = time.time()
        self.parent_pid = os.getppid()
        self.hosted: dict[str, _Hosted] = {}
        self.stopping: dict[str, tuple[float, ConnectorStatus | None]] = {}
        """Connectors taken away whose simulated query still stops: until when (monotonic),
        and the STOPPED status to report then (None: moved or restarted, nothing to say)."""
        self.ended: dict[str, Placement] = {}
        """Placements whose run ended here (refused by the store): not run again."""
        self.outage = Outage(f"simulated driver {driver_id}")
        self.stopped = False

    def status(self, cid: str, generation: int, state: State) -> ConnectorStatus:
        return ConnectorStatus(
            connector_id=cid,
            state=state,
            worker_id=self.worker_id,
            generation=generation,
            driver_id=self.driver_id,
            report_interval=self.status_interval,
        )

    def tick(self) -> bool:
        """One pass; False once retired by its worker."""
        if (self.files or self.store).retired(self.driver_id):
            return False
        now = time.monotonic()
        placed: dict[str, Deployment] | None = None
        if self.files is not None:
            placements, placed = self.files.placed_deployments(self.driver_id)
        else:
            placements = self.store.placements(self.driver_id)
        for cid, placement in list(self.ended.items()):
            if placements.get(cid) != placement:
                del self.ended[cid]
        gone = [cid for cid, h in self.hosted.items() if placements.get(cid) != h.placement]
        new = [
            cid
            for cid, p in placements.items()
            if cid not in self.hosted and cid not in self.stopping and self.ended.get(cid) != p
        ]
        if placed is not None:
            deployments = placed
        else:
            deployments = self.store.deployments_of([*gone, *new]) if gone or new else {}
        for cid in gone:
            hosted = self.hosted.pop(cid)
            deployment = deployments.get(cid)
            stopped = None
            if (
                deployment is not None
                and deployment.target_state == TargetState.STOPPED
                and deployment.worker_id == self.worker_id
                and deployment.generation == hosted.placement.generation
            ):
                stopped = self.status(cid, hosted.placement.generation, State.STOPPED)
            self.stopping[cid] = (now + self.stop_seconds, stopped)
        reports: list[ConnectorStatus] = []
        for cid, (until, stopped) in list(self.stopping.items()):
            if until <= now:
                del self.stopping[cid]
                if stopped is not None:
                    reports.append(stopped)
        if placed is not None:
            targets = {cid: d.target_state for cid, d in placed.items() if cid in self.hosted}
        else:
            targets = self.store.targets_of(self.hosted)
        for cid, hosted in self.hosted.items():
            state = State.PAUSED if targets.get(cid) == TargetState.PAUSED else State.RUNNING
            if state != hosted.state:
                hosted.state, hosted.reported_at = state, float("-inf")
        for cid in new:
            deployment = deployments.get(cid)
            if deployment is None or len(self.hosted) >= self.capacity:
                continue
            state = State.PAUSED if deployment.target_state == TargetState.PAUSED else State.RUNNING
            self.hosted[cid] = _Hosted(placements[cid], state)
        due = [cid for cid, h in self.hosted.items() if now - h.reported_at >= self.status_interval]
        reports += [
            self.status(cid, self.hosted[cid].placement.generation, self.hosted[cid].state)
            for cid in due
        ]
        outcomes = (self.files or self.store).report_many(reports)
        for status, outcome in zip(reports, outcomes, strict=True):
            hosted_now = self.hosted.get(status.connector_id)
            if hosted_now is None or status.state == State.STOPPED:
                continue
            if outcome == ReportOutcome.NOT_OWNER:  # not ours to run any more
                self.ended[status.connector_id] = hosted_now.placement
                del self.hosted[status.connector_id]
            elif outcome == ReportOutcome.WRITTEN:
                hosted_now.reported_at = now
        self.heartbeat()
        return True

    def heartbeat(self) -> None:
        (self.files or self.store).driver_heartbeat(
            DriverInfo(
                driver_id=self.driver_id,
                worker_id=self.worker_id,
                pid=os.getpid(),
                isolation=self.isolation,
                started_at=self.started_at,
                last_heartbeat=time.time(),
                capacity=self.capacity,
                connectors=sorted({*self.hosted, *self.stopping}),
                team=self.team,
            )
        )

    def alive(self) -> bool:
        return not self.stopped and os.getppid() == self.parent_pid

    def run(self) -> None:
        log.info("simulated driver %s up (up to %d connectors)", self.driver_id, self.capacity)
        while self.alive():
            started = time.monotonic()
            try:
                if not self.tick():
                    log.info("simulated driver %s retired by its worker", self.driver_id)
                    break
                self.outage.over()
            except STORE_ERRORS as exc:
                self.outage.failed(exc)
            wait = TICK - (time.monotonic() - started)
            if self.stopping:
                wait = min(wait, min(u for u, _ in self.stopping.values()) - time.monotonic())
            try:
                (self.files or self.store).wait_nudge(self.driver_id, wait)
            except STORE_ERRORS:
                time.sleep(max(wait, 0.05))


def driver_main(argv: list[str]) -> None:
    parser = argparse.ArgumentParser(description="A simulated Sluice driver (no Spark).")
    parser.add_argument("--driver-id", required=True)
    parser.add_argument("--worker-id", required=True)
    parser.add_argument("--isolation", choices=("shared", "dedicated"), default="shared")
    parser.add_argument("--capacity", type=int, default=1)
    parser.add_argument("--stop-seconds", type=float, default=0.0)
    parser.add_argument("--link", default="")
    parser.add_argument("--team", default="")
    args = parser.parse_args(argv)
    configure_logging("driver")
    set_process_context(worker=args.worker_id)
    config = RuntimeConfig.from_env()
    driver = SimulatedDriver(
        RedisStore.from_url(config.redis_url, config.key_prefix),
        driver_id=args.driver_id,
        worker_id=args.worker_id,
        isolation=args.isolation,
        capacity=args.capacity,
        status_interval=config.status_interval,
        stop_seconds=args.stop_seconds,
        link=HostFiles(Path(args.link)) if args.link else None,
        team=args.team,
    )

    def _stop(signum: int, _frame: Any) -> None:
        driver.stopped = True

    signal.signal(signal.SIGTERM, _stop)
    driver.run()


def main(argv: list[str] | None = None) -> None:
    """``driver …``: a simulated driver; else a simulated runtime worker."""
    args = sys.argv[1:] if argv is None else argv
    if args[:1] == ["driver"]:
        driver_main(args[1:])
    else:
        worker_main(SimulatedDriverWorker)


if __name__ == "__main__":
    main()
