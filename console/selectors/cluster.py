"""The cluster view: runtime workers, their Spark drivers and the channels each hosts, the
Spark cluster under them, each channel's executors.

Everything here is read live from the runtime adapter (heartbeats, driver reports and the
Spark master it asks), not from the database the reconcile loop writes: the view shows
what is there now. The console never talks to Spark itself.
"""

from __future__ import annotations

import time
from collections.abc import Collection, Iterable
from dataclasses import dataclass, field

from console.choices import ShownState, WorkerService, WorkerState
from console.errors import runtime_errors
from console.models import Connector, Team, Worker
from console.runtime import get_runtime
from console.selectors import reporting
from runtime_adapter.base import DriverInfo, ExecutorInfo, SparkCluster, WorkerInfo


@dataclass(frozen=True)
class DriverView:
    """A Spark driver of a runtime worker and the channels whose queries it hosts now."""

    driver_id: str
    isolation: str
    pid: int
    started_at: float
    last_heartbeat: float
    heartbeat_age: float
    capacity: int
    memory: str
    cores: int
    application_id: str | None
    connectors: list[str]
    """The connector ids it hosts, as its heartbeat says."""
    channels: list[str]
    """The names of the channels those connectors belong to (the ones the console knows)."""
    team: str = ""
    """The team whose channels alone it runs (``""``: those deployed before teams)."""


@dataclass(frozen=True)
class RuntimeWorkerView:
    """A runtime worker, judged ALIVE or DEAD by its last heartbeat (as reconcile does)."""

    worker_id: str
    host: str
    pid: int
    state: str
    started_at: float
    last_heartbeat: float
    heartbeat_age: float
    connectors: list[str]
    drivers: list[DriverView] = field(default_factory=list)
    service: str = WorkerService.IN_SERVICE
    """IN_SERVICE, DRAINING or DRAINED, as the console last recorded it."""


@dataclass(frozen=True)
class ChannelExecutors:
    """Where one channel's connector runs: its worker, Spark application and executors."""

    name: str
    connector_id: str
    state: str
    worker_id: str | None
    application_id: str | None
    executors: list[ExecutorInfo]
    driver_id: str | None = None


@dataclass(frozen=True)
class Cluster:
    runtime_workers: list[RuntimeWorkerView]
    spark: SparkCluster
    channels: list[ChannelExecutors] = field(default_factory=list)
    now: float = 0.0


def _age(now: float, last_heartbeat: float) -> float:
    return round(max(now - last_heartbeat, 0.0), 3)


def _kept(connectors: Iterable[str], shown: set[str] | None) -> list[str]:
    return sorted(cid for cid in connectors if shown is None or cid in shown)


def _driver_view(
    info: DriverInfo, now: float, names: dict[str, str], shown: set[str] | None
) -> DriverView:
    connectors = _kept(info.connectors, shown)
    return DriverView(
        driver_id=info.driver_id,
        isolation=info.isolation,
        pid=info.pid,
        started_at=info.started_at,
        last_heartbeat=info.last_heartbeat,
        heartbeat_age=_age(now, info.last_heartbeat),
        capacity=info.capacity,
        memory=info.memory,
        cores=info.cores,
        application_id=info.application_id,
        connectors=connectors,
        channels=sorted(names[cid] for cid in connectors if cid in names),
        team=info.team,
    )


def _driver_shown(info: DriverInfo, teams: set[str] | None, shown: set[str] | None) -> bool:
    """Whether a driver is in the view: every one for a site admin (``teams`` None); else
    those of the caller's teams (by name), and a pre-teams driver (no team) only while it
    runs one of their connectors. Another team's driver is not named at all."""
    if teams is None:
        return True
    if info.team:
        return info.team in teams
    return shown is not None and any(cid in shown for cid in info.connectors)


def _worker_view(
    info: WorkerInfo,
    drivers: list[DriverView],
    now: float,
    shown: set[str] | None,
    state: str = WorkerState.ALIVE,
    service: str = WorkerService.IN_SERVICE,
) -> RuntimeWorkerView:
    age = _age(now, info.last_heartbeat)
    return RuntimeWorkerView(
        worker_id=info.worker_id,
        host=info.host,
        pid=info.pid,
        state=state,
        started_at=info.started_at,
        last_heartbeat=info.last_heartbeat,
        heartbeat_age=age,
        connectors=_kept(info.connectors, shown),
        drivers=sorted(drivers, key=lambda d: d.driver_id),
        service=service,
    )


def _shown(stored: str, judged: reporting.Reporting) -> str:
    """What the store says, unless the console has had no new report for too long (the same
    judgement as the channel's state: the report read now may be the stale one)."""
    if not judged.reporting and stored in reporting.REFRESHED_STATES:
        return ShownState.NOT_REPORTING
    return stored


def workers():
    """The runtime workers as the control loop last recorded them, with their connectors."""
    return Worker.objects.prefetch_related("connectors__channel")


def cluster_view(teams: Collection[int] | None = None) -> Cluster:
    """The runtime workers (each with its Spark drivers and the channels they host), the
    Spark cluster and the driver and executors of every deployed channel.

    With ``teams`` (ids; ``None``: every team) only those teams' channels, connectors and
    drivers are named anywhere in it: a worker that also hosts another team's shows only
    these, and another team's drivers not at all.

    Raises :class:`RuntimeUnavailable` when the runtime's store cannot be reached; a Spark
    master that does not answer is not an error here: ``spark.error`` says why.
    """
    runtime = get_runtime()
    now = time.time()
    deployed = Connector.objects.select_related("channel")
    if teams is not None:
        deployed = deployed.filter(channel__team_id__in=list(teams))
    connectors = list(deployed.only("runtime_id", "channel__name", *reporting.ROW_FIELDS))
    at = reporting.now()
    with runtime_errors():
        infos = runtime.workers()
        driver_infos = runtime.drivers()
        statuses = runtime.status([c.runtime_id for c in connectors]) if connectors else {}
    names = {c.runtime_id: c.channel.name for c in connectors}
    shown = None if teams is None else set(names)  # a site admin: every connector reported
    team_names = (
        None
        if teams is None
        else set(Team.objects.filter(pk__in=list(teams)).values_list("name", flat=True))
    )
    drivers: dict[str, list[DriverView]] = {}
    for driver in driver_infos:
        if not _driver_shown(driver, team_names, shown):
            continue
        drivers.setdefault(driver.worker_id, []).append(_driver_view(driver, now, names, shown))
    # The control loop's judgment (its own observation of the heartbeats, never this host's
    # clock against the worker's); one it has not judged yet registered: ALIVE.
    known = {w[0]: w[1:] for w in Worker.objects.values_list("worker_id", "state", "service")}
    workers = sorted(
        (
            _worker_view(
                info,
                drivers.get(info.worker_id, []),
                now,
                shown,
                *known.get(info.worker_id, (WorkerState.ALIVE, WorkerService.IN_SERVICE)),
            )
            for info in infos
        ),
        key=lambda w: w.worker_id,
    )
    channels = []
    for connector in sorted(connectors, key=lambda c: c.channel.name):
        status = statuses.get(connector.runtime_id)
        if status is None:
            continue
        channels.append(
            ChannelExecutors(
                name=connector.channel.name,
                connector_id=connector.runtime_id,
                state=_shown(str(status.state), reporting.of_connector(connector, at=at)),
                worker_id=status.worker_id,
                application_id=status.application_id,
                executors=list(status.executors),
                driver_id=status.driver_id,
            )
        )
    return Cluster(workers, runtime.spark_cluster(), channels, now)
