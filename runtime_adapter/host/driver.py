"""The driver entry point: one long-lived Spark driver running many connectors' queries.

A runtime worker starts it with ``spark-submit runtime_adapter/host/driver.py --driver-id D
--worker-id W --isolation shared|dedicated --capacity N --team T``. The driver starts its
SparkSession once (the JVM, the SparkContext: the seconds a start used to cost every
channel) and then, every :data:`TICK` seconds, reads the connectors its worker placed in it
(``{p}:placement:{driver}``, :mod:`runtime_adapter.store`) with their desired state, and makes
its hosted connectors match: a new placement gets a
:class:`~runtime_adapter.host.hosted.HostedConnector` (its own session, scheduler pool,
checkpoint and thread), a placement that is gone or
changed (a restart: a new generation; a new revision) releases its connector, whose thread
stops the query; its next pass starts it again, from its checkpoint. A bus's new revision that
changes its rules alone is the exception: its running query takes it
(:meth:`~runtime_adapter.host.hosted.HostedConnector.take_revision`), no restart. It
heartbeats (``{p}:drivers``) with the connectors it hosts and its team.

A driver runs the connectors of its team only (``--team``; ``""``: those deployed before
teams): a placement of another team's connector (stale state; its worker never makes one) is
refused (logged), and a hosted connector whose deployment moved to another team is released.

A connector's failure ends that connector only. The driver exits when its worker retires
it (``{p}:retire``), on SIGTERM, or when its parent process dies; its connectors' queries
stop first. A driver that dies without that (``kill -9``, an out-of-memory JVM) is found by
its worker, which reports each of its connectors FAILED with the cause.
"""

from __future__ import annotations

import argparse
import logging
import os
import signal
import sys
import time
from pathlib import Path
from typing import Any, cast

from runtime_adapter.base import Deployment, DriverInfo, ExecutorInfo
from runtime_adapter.config import RuntimeConfig
from runtime_adapter.host.executors import ExecutorWatch
from runtime_adapter.host.hosted import HostedConnector
from runtime_adapter.host.link import HostFiles
from runtime_adapter.logs import configure_logging, set_process_context
from runtime_adapter.store import STORE_ERRORS, Outage, Placement, RedisStore, StoreWatch

log = logging.getLogger("sluice.driver")

TICK = 1.0
"""Seconds between two reads of the driver's placements (and heartbeats); a nudge from the
worker or the console (a placement, a target changed) starts a pass at once."""
RELEASE_WAIT = 45.0
"""How long a driver that is shutting down waits for its connectors' queries to stop."""


class DriverHost:
    """Hosts the connectors its worker placed in this driver (see the module docstring)."""

    def __init__(
        self,
        store: RedisStore,
        config: RuntimeConfig,
        *,
        driver_id: str,
        worker_id: str,
        isolation: str = "shared",
        capacity: int = 1,
        memory: str = "",
        cores: int = 0,
        link: HostFiles | None = None,
        team: str = "",
    ) -> None:
        self.store = store
        self.link: HostFiles | RedisStore = link or store
        """Where its placements come from and its heartbeats and statuses go: its worker's
        host files when the group places (no Redis on that path), else the store."""
        self.config = config
        self.driver_id = driver_id
        self.worker_id = worker_id
        self.isolation = isolation
        self.capacity = capacity
        self.memory = memory
        self.cores = cores
        self.team = team
        self.refused: dict[str, Placement] = {}
        """Placements of another team's connector, refused (and reported once)."""
        self.started_at = time.time()
        self.parent_pid = os.getppid()
        self.hosted: dict[str, HostedConnector] = {}
        # The placement each ended run (failed, stopped, finished) was for: not run again
        # until its worker places the connector anew.
        self.ended: dict[str, Placement] = {}
        self.spark: Any = None
        self.application_id: str | None = None
        self.executor_watch = ExecutorWatch()
        self.store_watch = StoreWatch()
        self.outage = Outage("driver")
        self.stopping = False

    def start_spark(self) -> None:
        from pyspark.sql import SparkSession

        from pipelines.sql_guard import harden_session

        self.spark = SparkSession.builder.getOrCreate()
        harden_session(self.spark)  # before any query: no reflection, files or ${...} in SQL
        self.spark.sparkContext.setLogLevel(self.config.spark_log_level)
        self.application_id = self.spark.sparkContext.applicationId

    def executors(self) -> list[ExecutorInfo]:
        return self.executor_watch.current(self.spark.sparkContext if self.spark else None)

    def heartbeat(self, ready: bool = True) -> None:
        self.link.driver_heartbeat(
            DriverInfo(
                driver_id=self.driver_id,
                worker_id=self.worker_id,
                pid=os.getpid(),
                isolation=self.isolation,
                started_at=self.started_at,
                last_heartbeat=time.time(),
                capacity=self.capacity,
                memory=self.memory,
                connectors=sorted(self.hosted),
                application_id=self.application_id,
                cores=self.cores,
                ready=ready,
                team=self.team,
            )
        )

    def alive(self) -> bool:
        return not self.stopping and os.getppid() == self.parent_pid

    def tick(self) -> bool:
        """One pass; False when the worker retired this driver.

        While the store has lost the console's desired state (emptied, not re-sent yet:
        :class:`~runtime_adapter.store.StoreWatch`), or its worker has not yet written its
        placements back under the store's current token, the driver holds still: its
        connectors run on as they are, none is released for being absent from the store.
        """
        epoch = self.link.epoch()
        waiting = epoch is not None and self.link.placed_under(self.driver_id) != epoch
        if self.store_watch.holds(epoch, waiting):
            self.heartbeat()
            return True
        placements, deployments = self.link.placed_deployments(self.driver_id)
        placements = self.of_its_team(placements, deployments)
        for cid, hosted in list(self.hosted.items()):
            placement = placements.get(cid)
            if placement != hosted.placement:
                # A bus's new revision that changes its rules alone is taken by its running
                # query; else moved, restarted, redeployed, stopped or deleted: released.
                if placement is None or not hosted.take_revision(placement, deployments.get(cid)):
                    hosted.release()
            else:
                deployment = deployments.get(cid)
                # A new revision reaches the store before its worker places it here: until
                # then the connector keeps the deployment of the revision it was placed with
                # (its thread would take the newer one for another owner's and stop).
                if (
                    deployment is None
                    or placement is None
                    or deployment.revision == placement.revision
                ):
                    hosted.update(deployment)
            if hosted.done.is_set():
                del self.hosted[cid]
                # Every connector a driver hosts was given its placement (below).
                self.ended[cid] = cast(Placement, hosted.placement)
        for cid, placement in list(self.ended.items()):
            if placements.get(cid) != placement:
                del self.ended[cid]
        for cid, placement in placements.items():
            deployment = deployments.get(cid)
            if cid in self.hosted or self.ended.get(cid) == placement or deployment is None:
                continue
            hosted = HostedConnector(
                self.store,
                self.config,
                link=self.link,
                connector_id=cid,
                worker_id=self.worker_id,
                generation=placement.generation,
                driver_id=self.driver_id,
                placement=placement,
                spark=self.spark,
                executors=self.executors,
            )
            self.hosted[cid] = hosted
            hosted.start(deployment)
            log.info("hosting connector %s (generation %s)", cid, placement.generation)
        self.heartbeat()
        return not self.link.retired(self.driver_id)

    def of_its_team(
        self, placements: dict[str, Placement], deployments: dict[str, Deployment]
    ) -> dict[str, Placement]:
        """``placements`` without those of another team's connectors, each refused with an
        error in the log, once (its worker never places one here: only stale state can)."""
        kept: dict[str, Placement] = {}
        for cid, placement in placements.items():
            deployment = deployments.get(cid)
            if deployment is None or deployment.team == self.team:
                kept[cid] = placement
                continue
            if self.refused.get(cid) == placement:
                continue
            self.refused[cid] = placement
            why = (
                f"driver {self.driver_id} of team {self.team or '(none)'} refused connector "
                f"{cid} of team {deployment.team or '(none)'}: a team's channels run only in "
                "its own drivers"
            )
            # Not reported: the connector's status is its owner's to write, and a stale
            # placement's connector may well run, rightly, in a driver of its own team.
            log.error("%s", why)
        for cid in set(self.refused) - set(placements):
            del self.refused[cid]
        return kept

    def run(self) -> int:
        self.heartbeat(ready=False)
        self.start_spark()
        log.info(
            "driver %s up (%s, up to %d connectors, application %s)",
            self.driver_id,
            self.isolation,
            self.capacity,
            self.application_id,
        )
        while self.alive():
            started = time.monotonic()
            try:
                if not self.tick():
                    log.info("driver %s retired by its worker", self.driver_id)
                    break
                self.outage.over()
            except STORE_ERRORS as exc:
                self.outage.failed(exc)  # the queries keep running; said every 30 s
            except Exception:
                # Redis away, a record this code cannot read: the queries keep running.
                log.exception("driver %s: a pass failed; retrying", self.driver_id)
            self.pause(TICK - (time.monotonic() - started))
        self.shutdown()
        return 0

    def pause(self, seconds: float) -> None:
        """Wait for the next pass: ``seconds``, or less when the worker nudges this driver."""
        try:
            self.link.wait_nudge(self.driver_id, seconds)
        except Exception:  # Redis away: the next pass says so
            time.sleep(max(seconds, 0.05))

    def shutdown(self) -> None:
        """Stop every hosted query (each in its own thread, side by side), then return."""
        for hosted in self.hosted.values():
            hosted.release()
        deadline = time.monotonic() + RELEASE_WAIT
        for hosted in self.hosted.values():
            hosted.done.wait(max(deadline - time.monotonic(), 0.1))
        log.info("driver %s stopped", self.driver_id)


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description="Run Sluice connectors' streaming queries.")
    parser.add_argument("--driver-id", required=True)
    parser.add_argument("--worker-id", required=True)
    parser.add_argument("--isolation", choices=("shared", "dedicated"), default="shared")
    parser.add_argument("--capacity", type=int, default=1)
    parser.add_argument("--memory", default="")
    parser.add_argument("--cores", type=int, default=0)
    parser.add_argument("--team", default="", help="the team whose connectors alone it runs")
    parser.add_argument(
        "--link", default="", help="its worker's host folder (the group places); else the store"
    )
    return parser.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    configure_logging("driver")
    args = parse_args(argv)
    set_process_context(worker=args.worker_id)
    config = RuntimeConfig.from_env()
    host = DriverHost(
        RedisStore.from_url(config.redis_url, config.key_prefix),
        config,
        driver_id=args.driver_id,
        worker_id=args.worker_id,
        isolation=args.isolation,
        capacity=args.capacity,
        memory=args.memory,
        cores=args.cores,
        link=HostFiles(Path(args.link)) if args.link else None,
        team=args.team,
    )

    def _graceful(signum: int, _frame: Any) -> None:
        host.stopping = True

    signal.signal(signal.SIGTERM, _graceful)
    return host.run()


if __name__ == "__main__":
    sys.exit(main())
