"""An in-memory :class:`RuntimeAdapter` for fast unit tests.

It records every call and answers ``status``/``workers``/``drivers`` from what a test put
in ``statuses``, ``worker_infos`` and ``driver_infos``. Real Redis-backed behaviour is
covered by the integration tests.
"""

from __future__ import annotations

import time
from collections.abc import Iterable
from dataclasses import dataclass, field, replace
from typing import Any

from runtime_adapter.base import (
    ConnectorOffsets,
    ConnectorStatus,
    Deployment,
    DesiredSummary,
    DriverInfo,
    ExecutorInfo,
    MirrorOffsetsTopic,
    OffsetChange,
    Restoration,
    RuntimeUnavailable,
    SourceOffset,
    SparkCluster,
    TaskStatus,
    WorkerInfo,
)
from runtime_adapter.states import State, TargetState


@dataclass
class FakeRuntime:
    deployments: dict[str, Deployment] = field(default_factory=dict)
    assignments: dict[str, str | None] = field(default_factory=dict)
    targets: dict[str, TargetState] = field(default_factory=dict)
    statuses: dict[str, ConnectorStatus] = field(default_factory=dict)
    worker_infos: dict[str, WorkerInfo] = field(default_factory=dict)
    driver_infos: dict[str, DriverInfo] = field(default_factory=dict)
    calls: list[tuple] = field(default_factory=list)
    previews: dict[str, list[dict]] = field(default_factory=dict)
    samples: dict[str, list[dict]] = field(default_factory=dict)
    """Connector id → events sampled for discovery (set by tests, taken by take_samples)."""
    generations: dict[str, int] = field(default_factory=dict)
    status_calls: int = 0
    unavailable: BaseException | None = None
    """Set by tests: the outage (a ``ConnectionError``, a Redis error) every call then fails
    with, raised as a runtime adapter does: :class:`RuntimeUnavailable`, the outage chained."""
    checkpoints: dict[str, ConnectorOffsets] = field(default_factory=dict)
    """Channel name (or checkpoint key) → what its checkpoint holds (set by tests)."""
    offset_changes: dict[str, OffsetChange] = field(default_factory=dict)
    groups: dict[str, list[SourceOffset]] = field(default_factory=dict)
    """Consumer group → its committed offsets (set by tests)."""
    windows: dict[tuple[int, int], tuple[list[SourceOffset], list[SourceOffset]]] = field(
        default_factory=dict
    )
    """``(start_ms, end_ms)`` → what :meth:`window_offsets` answers (set by tests)."""
    mirrors: dict[MirrorOffsetsTopic, list[SourceOffset]] = field(default_factory=dict)
    """MirrorMaker 2's offsets topic → its offsets as NEXT offsets (set by tests; what
    :meth:`write_mirrormaker2_offsets` writes lands here too)."""
    cluster: SparkCluster = field(default_factory=lambda: SparkCluster("local", "local[*]"))
    """What :meth:`spark_cluster` answers (set by tests)."""
    epoch: str | None = None
    """The token :meth:`set_epoch` set (``None``: a runtime that lost, or never had, it)."""
    places: bool = False
    """Set by tests: the runtime places connectors (``assignments`` then set by tests, as a
    runtime group's owners claim them)."""
    membership: bool = False
    """Set by tests: the workers are members of a runtime group (``WorkerInfo.member``)."""
    slots: int = 8
    """The runtime's slots when it places (``home_slot``: the id's length modulo, as the
    real runtime's murmur2 is not the point here)."""
    feed: Any = None
    """Set by tests: what :meth:`status_feed` answers (a :class:`FakeFeed`)."""
    draining: set[str] = field(default_factory=set)
    """The workers :meth:`set_draining` named."""

    # -- the protocol ----------------------------------------------------------------------

    def status_feed(self) -> Any:
        return self.feed

    def home_slot(self, connector_id: str) -> int | None:
        return len(connector_id) % self.slots if self.places else None

    def relocate(
        self, connector_id: str, slot: int | None, target_state: TargetState | None = None
    ) -> Deployment | None:
        self._call("relocate", connector_id, slot, target_state)
        current = self.deployments.get(connector_id)
        if current is None:
            return None
        moved = replace(current, slot=slot, target_state=target_state or current.target_state)
        self.deployments[connector_id] = moved
        self.targets[connector_id] = moved.target_state
        return moved

    def deploy(self, deployment: Deployment) -> None:
        self._call("deploy", deployment)
        self.deployments[deployment.connector_id] = deployment
        self.targets[deployment.connector_id] = deployment.target_state
        if deployment.worker_id is not None:
            self.assignments[deployment.connector_id] = deployment.worker_id

    def assign(self, connector_id: str, worker_id: str | None) -> None:
        self._call("assign", connector_id, worker_id)
        self.assignments[connector_id] = worker_id

    def owners(self, connector_ids: Iterable[str]) -> dict[str, str | None]:
        self._call("owners")
        return {c: self.assignments.get(c) for c in connector_ids if c in self.deployments}

    def set_draining(self, worker_ids: set[str]) -> None:
        self._call("set_draining", sorted(worker_ids))
        self.draining = set(worker_ids)

    def set_target_state(self, connector_id: str, target_state: TargetState) -> None:
        self._call("set_target_state", connector_id, target_state)
        self.targets[connector_id] = target_state

    def restart(self, connector_id: str) -> int:
        """A new generation, reported RESTARTING at once (as the Spark runtime does)."""
        self._call("restart", connector_id)
        generation = self.generations.get(connector_id, 0) + 1
        self.generations[connector_id] = generation
        if connector_id in self.statuses:
            self.statuses[connector_id] = ConnectorStatus(
                connector_id=connector_id,
                state=State.RESTARTING,
                worker_id=self.assignments.get(connector_id),
                generation=generation,
            )
        return generation

    def delete(self, connector_id: str) -> None:
        self._call("delete", connector_id)
        for table in (self.deployments, self.assignments, self.targets, self.statuses):
            table.pop(connector_id, None)

    # The batch calls loop over the single ones: each connector's calls are recorded as its
    # single call would record them.

    def deploy_many(self, deployments: list[Deployment]) -> None:
        for deployment in deployments:
            self.deploy(deployment)

    def set_target_states(self, connector_ids: list[str], target_state: TargetState) -> None:
        for connector_id in connector_ids:
            self.set_target_state(connector_id, target_state)

    def restart_many(self, connector_ids: list[str]) -> dict[str, int]:
        return {connector_id: self.restart(connector_id) for connector_id in connector_ids}

    def delete_many(self, connector_ids: list[str]) -> None:
        for connector_id in connector_ids:
            self.delete(connector_id)

    def status(self, connector_ids: Iterable[str]) -> dict[str, ConnectorStatus]:
        self.status_calls += 1
        self._fail_if_unavailable()
        return {cid: self.statuses[cid] for cid in connector_ids if cid in self.statuses}

    def workers(self) -> list[WorkerInfo]:
        self._fail_if_unavailable()
        return list(self.worker_infos.values())

    def drivers(self) -> list[DriverInfo]:
        self._fail_if_unavailable()
        return sorted(self.driver_infos.values(), key=lambda d: (d.worker_id, d.driver_id))

    def forget_worker(self, worker_id: str) -> None:
        self._call("forget_worker", worker_id)
        self.worker_infos.pop(worker_id, None)
        for driver_id, info in list(self.driver_infos.items()):
            if info.worker_id == worker_id:
                del self.driver_infos[driver_id]

    def preview(self, connector_id: str, limit: int = 50) -> list[dict]:
        self._call("preview", connector_id, limit)
        self._fail_if_unavailable()
        return self.previews.get(connector_id, [])[:limit]

    def take_samples(self, connector_ids: Iterable[str]) -> dict[str, list[dict]]:
        self._fail_if_unavailable()
        return {cid: self.samples.pop(cid) for cid in list(connector_ids) if self.samples.get(cid)}

    def offsets(self, connector_id: str, channel: str) -> ConnectorOffsets:
        """As the Spark runtime: the checkpoint's offsets with a pending change laid over."""
        self._call("offsets", connector_id, channel)
        name = channel.partition(".")[0]  # the console asks by checkpoint key
        found = self.checkpoints.get(channel, self.checkpoints.get(name, ConnectorOffsets([])))
        change = self.offset_changes.get(connector_id)
        position = {(o.topic, o.partition): o.offset for o in found.offsets}
        if change is not None and change.kind == "reset":
            position = {}
        elif change is not None and change.kind == "offsets":
            position.update({(o.topic, o.partition): o.offset for o in change.offsets})
        return ConnectorOffsets(
            [SourceOffset(t, p, o) for (t, p), o in sorted(position.items())],
            found.batch_id,
            change,
        )

    def alter_offsets(self, connector_id: str, change: OffsetChange) -> None:
        self._call("alter_offsets", connector_id, change)
        self.offset_changes[connector_id] = change

    def consumer_group_offsets(self, spec: dict, group: str) -> list[SourceOffset]:
        self._call("consumer_group_offsets", group)
        return list(self.groups.get(group, []))

    def mirrormaker2_offsets(self, spec: dict, where: MirrorOffsetsTopic) -> list[SourceOffset]:
        self._call("mirrormaker2_offsets", where)
        return list(self.mirrors.get(where, []))

    def write_mirrormaker2_offsets(
        self, spec: dict, where: MirrorOffsetsTopic, offsets: list[SourceOffset]
    ) -> bool:
        self._call("write_mirrormaker2_offsets", where, tuple(offsets))
        created = where not in self.mirrors
        self.mirrors[where] = list(offsets)
        return created

    def window_offsets(
        self, spec: dict, start_ms: int, end_ms: int
    ) -> tuple[list[SourceOffset], list[SourceOffset]]:
        """From ``self.windows[(start_ms, end_ms)]`` (tests set it), else nothing to read."""
        self._call("window_offsets", start_ms, end_ms)
        return self.windows.get((start_ms, end_ms), ([], []))

    def spark_cluster(self) -> SparkCluster:
        return self.cluster

    def desired_summary(self) -> DesiredSummary:
        self._fail_if_unavailable()
        return DesiredSummary(self.epoch, len(self.deployments))

    def desired_connectors(self) -> set[str]:
        self._call("desired_connectors")
        return set(self.deployments)

    def restore(self, restorations: list[Restoration]) -> None:
        """As the Spark runtime: what is missing filled in, the generation only raised."""
        self._call("restore", tuple(restorations))
        for restoration in restorations:
            deployment = restoration.deployment
            cid = deployment.connector_id
            self.deployments.setdefault(cid, deployment)
            self.targets.setdefault(cid, deployment.target_state)
            self.assignments.setdefault(cid, deployment.worker_id)
            self.generations[cid] = max(self.generations.get(cid, 0), deployment.generation)

    def set_epoch(self, token: str) -> None:
        self._call("set_epoch", token)
        self.epoch = token

    # -- helpers for tests -----------------------------------------------------------------

    def _call(self, name: str, *args) -> None:
        self._fail_if_unavailable()
        self.calls.append((name, *args))

    def _fail_if_unavailable(self) -> None:
        outage = self.unavailable
        if isinstance(outage, RuntimeUnavailable):
            raise outage
        if outage is not None:
            raise RuntimeUnavailable(str(outage)) from outage

    def calls_named(self, name: str) -> list[tuple]:
        return [call[1:] for call in self.calls if call[0] == name]

    def heartbeat(self, worker_id: str, at: float | None = None) -> None:
        """Register or refresh a worker as if its heartbeat arrived at ``at``."""
        at = time.time() if at is None else at
        previous = self.worker_infos.get(worker_id)
        self.worker_infos[worker_id] = WorkerInfo(
            worker_id=worker_id,
            host=f"{worker_id}.example",
            pid=1000 + len(self.worker_infos),
            started_at=previous.started_at if previous else at,
            last_heartbeat=at,
            drivers=previous.drivers if previous else [],
        )

    def report(
        self,
        connector_id: str,
        state: State,
        worker_id: str | None,
        *,
        generation: int = 0,
        trace: str = "",
        tasks: list[TaskStatus] | None = None,
        updated_at: float = 1.0,
        dead_letters: int = 0,
        sink_retries: int = 0,
        executors: list[ExecutorInfo] | None = None,
        application_id: str | None = None,
        driver_id: str | None = None,
        reason: str = "",
        finished: bool = False,
        report_interval: float = 0.0,
    ) -> None:
        """Record what a driver would report for ``connector_id``."""
        self.statuses[connector_id] = ConnectorStatus(
            connector_id=connector_id,
            state=state,
            worker_id=worker_id,
            generation=generation,
            trace=trace,
            updated_at=updated_at,
            tasks=tasks or [],
            dead_letters=dead_letters,
            sink_retries=sink_retries,
            executors=executors or [],
            application_id=application_id,
            driver_id=driver_id,
            reason=reason,
            finished=finished,
            report_interval=report_interval,
        )

    def host_driver(
        self,
        driver_id: str,
        worker_id: str,
        connectors: list[str],
        *,
        isolation: str = "shared",
        capacity: int = 50,
        memory: str = "1g",
        at: float | None = None,
        application_id: str | None = None,
        team: str = "",
    ) -> None:
        """Record a driver's heartbeat: ``worker_id`` runs it, hosting ``connectors``."""
        at = time.time() if at is None else at
        self.driver_infos[driver_id] = DriverInfo(
            driver_id=driver_id,
            worker_id=worker_id,
            pid=2000 + len(self.driver_infos),
            isolation=isolation,
            started_at=at - 60,
            last_heartbeat=at,
            capacity=capacity,
            memory=memory,
            connectors=list(connectors),
            application_id=application_id,
            team=team,
        )
        worker = self.worker_infos.get(worker_id)
        if worker is not None and driver_id not in worker.drivers:
            self.worker_infos[worker_id] = replace(worker, drivers=[*worker.drivers, driver_id])
