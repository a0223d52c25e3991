"""The Spark runtime: connectors are Spark drivers hosted by runtime workers.

The adapter itself only records wishes in Redis (see :mod:`runtime_adapter.store`);
runtime workers (:mod:`runtime_adapter.host.worker`) converge to them and their
drivers (:mod:`runtime_adapter.host.driver`) report status back.
"""

from __future__ import annotations

import functools
import logging
import time
from collections.abc import Callable, Iterable, Mapping
from dataclasses import replace
from pathlib import Path
from typing import Any, ParamSpec, TypeVar

import redis
from confluent_kafka import KafkaException

from runtime_adapter.base import (
    ConnectorOffsets,
    ConnectorStatus,
    Deployment,
    DesiredSummary,
    DriverInfo,
    MirrorOffsetsTopic,
    OffsetChange,
    OffsetsError,
    Restoration,
    RuntimeUnavailable,
    SourceOffset,
    SparkCluster,
    StatusFeed,
    WorkerInfo,
)
from runtime_adapter.checkpoint import (
    CheckpointError,
    checkpoint_dir,
    latest_committed,
    remove_checkpoint,
)
from runtime_adapter.config import RuntimeConfig
from runtime_adapter.group.desired import DesiredStateWriter
from runtime_adapter.group.member import client_id_of
from runtime_adapter.group.settings import GroupConfig
from runtime_adapter.group.slots import slot_of
from runtime_adapter.group.status import StatusFeedReader
from runtime_adapter.group.topics import ensure_runtime_topics
from runtime_adapter.kafka import (
    BrokerUnreachable,
    TopicReplication,
    group_members,
    group_offsets,
)
from runtime_adapter.mirrormaker2 import (
    mirror_cluster_settings,
    read_mirror_offsets,
    write_mirror_offsets,
)
from runtime_adapter.offsets import client_settings, kafka_source, window_offsets
from runtime_adapter.spark_master import master_cluster
from runtime_adapter.states import State, TargetState
from runtime_adapter.store import RedisStore

log = logging.getLogger("sluice.runtime")

MEMBERS_RETRY = 5.0
"""Seconds before the runtime group's members are asked again after Kafka did not answer
(the question stays asked meanwhile: :data:`~runtime_adapter.kafka.GROUP_LOOKUP_PATIENCE`)."""
MEMBERS_WAIT = 2.0
"""Seconds a pass waits for the members; while they are unknown, :data:`MEMBERS_RECHECK`."""
MEMBERS_RECHECK = 0.3

OUTAGES: tuple[type[BaseException], ...] = (redis.RedisError, OSError, KafkaException)
"""The client libraries' errors that mean the runtime cannot be reached: each call of the
adapter turns them into :class:`RuntimeUnavailable` (``BrokerUnreachable`` already is one)."""

_P = ParamSpec("_P")
_R = TypeVar("_R")


def _reaching_the_runtime(method: Callable[_P, _R]) -> Callable[_P, _R]:
    """``method`` with :data:`OUTAGES` raised as :class:`RuntimeUnavailable` (cause chained,
    message kept), the protocol's one error for an unreachable runtime."""

    @functools.wraps(method)
    def call(*args: _P.args, **kwargs: _P.kwargs) -> _R:
        try:
            return method(*args, **kwargs)
        except OUTAGES as exc:
            raise RuntimeUnavailable(str(exc)) from exc

    return call


class SparkRuntime:
    """:class:`runtime_adapter.base.RuntimeAdapter` for Spark Structured Streaming.

    Offsets are read from the checkpoints under ``checkpoint_root`` (``SLUICE_CHECKPOINT_ROOT``
    by default), and a deleted connector's checkpoint is removed there: the console's host
    must see the directory the runtime workers write (one host, or a shared file system).
    """

    def __init__(
        self,
        redis_url: str,
        prefix: str = "sluice",
        checkpoint_root: Path | str | None = None,
        group: GroupConfig | None = None,
    ) -> None:
        self.store = RedisStore.from_url(redis_url, prefix)
        self.checkpoint_root = Path(checkpoint_root or RuntimeConfig.from_env().checkpoint_root)
        self.group = group
        """The runtime's Kafka group, whose members are the live workers (None: membership
        off, liveness from the store's heartbeats only)."""
        self._members_unknown_until = 0.0
        self.places = group is not None and group.places
        self.membership = group is not None
        """The group places channels (``SLUICE_RUNTIME_PLACEMENT=group``): desired state is
        also written to the config topic, where each slot's owner finds it, and the
        console's :meth:`assign` is a no-op (a connector runs where its slot is owned)."""
        self._desired: DesiredStateWriter | None = None
        self._feed: StatusFeedReader | None = None

    def _publish(
        self, connector_ids: Iterable[str], gone: Mapping[str, Deployment] | None = None
    ) -> None:
        """Write the desired state of ``connector_ids`` as the store now holds it to the
        config topic (a tombstone for one it no longer holds, in the slot ``gone`` says it
        was placed in); only when the group places. Raises :class:`RuntimeUnavailable` when
        Kafka does not confirm it."""
        if not self.places:
            return
        assert self.group is not None
        ids = set(connector_ids)
        if not ids:
            return
        found = self.store.deployments_of(ids)
        pending = self.store.offset_change_tokens(found)
        writer = self._writer()
        writer.put(replace(d, offset_change=pending.get(cid, "")) for cid, d in found.items())
        writer.delete(sorted(ids - set(found)), {cid: d.slot for cid, d in (gone or {}).items()})

    def _unplaced(self, deployment: Deployment) -> Deployment:
        """``deployment`` as the store is to keep it: when the group places, the worker that
        claimed it stays (the console's choice of worker is not the runtime's)."""
        return replace(deployment, worker_id=None) if self.places else deployment

    @_reaching_the_runtime
    def set_draining(self, worker_ids: set[str]) -> None:
        """The workers to hand their connectors over (they leave the group when it places:
        :meth:`RuntimeWorker.leaving`); one round trip, two when the set changed."""
        if not self.places:
            return
        before = self.store.draining()
        if before != worker_ids:
            self.store.set_draining(worker_ids)
            self.store.nudge(*sorted(worker_ids ^ before))

    @_reaching_the_runtime
    def owners(self, connector_ids: Iterable[str]) -> dict[str, str | None]:
        """The worker each connector is assigned to (or claimed by, when the group places)."""
        return self.store.owners(connector_ids)

    def _leave_other_slots(self, deployments: list[Deployment]) -> None:
        """Before ``deployments`` are written: a tombstone (confirmed by Kafka) in the slot
        each was in when that is not the slot it is now written to, so that no two slots
        ever hold a connector (a deploy that names another slot than the store's, say after
        a move whose end the console did not record). Only when the group places."""
        if not self.places or not deployments:
            return
        writer = self._writer()
        before = self.store.deployments_of(d.connector_id for d in deployments)
        left = {
            d.connector_id: writer.slot(before[d.connector_id])
            for d in deployments
            if d.connector_id in before and writer.slot(before[d.connector_id]) != writer.slot(d)
        }
        if left:
            log.warning("connectors written to another slot than before: %s", sorted(left))
            writer.delete(sorted(left), left)

    def _writer(self) -> DesiredStateWriter:
        assert self.group is not None
        if self._desired is None:
            ensure_runtime_topics(self.group)  # never auto-created with the broker's defaults
            self._desired = DesiredStateWriter(self.group)
        return self._desired

    @_reaching_the_runtime
    def deploy(self, deployment: Deployment) -> None:
        self._leave_other_slots([deployment])
        self.store.put_deployment(self._unplaced(deployment))
        self._publish([deployment.connector_id])
        self._nudge_worker_of(deployment.connector_id)

    def home_slot(self, connector_id: str) -> int | None:
        if not self.places:
            return None
        assert self.group is not None
        return slot_of(connector_id, self.group.slots)

    @_reaching_the_runtime
    def relocate(
        self, connector_id: str, slot: int | None, target_state: TargetState | None = None
    ) -> Deployment | None:
        """Move a connector's desired state to ``slot`` (``None``: its home slot), where that
        slot's owner runs it, with ``target_state`` (unset: as it is): capacity-aware
        placement when the group places. The deployment as moved, or ``None`` when the store
        does not hold the connector.

        Call it only once the owner of the slot it leaves reported it stopped (or that slot
        had no owner): this is the second step of a move. The tombstone in the slot it leaves
        is confirmed by Kafka before its record is written in the new one, so no two slots
        ever hold it (a failure between the two leaves it in none: the move is done again).
        Raises :class:`RuntimeUnavailable` when Kafka does not confirm a write."""
        if not self.places:
            raise ValueError("connectors are moved between slots only when the group places")
        assert self.group is not None
        current = self.store.deployment(connector_id)
        if current is None:
            return None
        moved = replace(current, slot=slot, target_state=target_state or current.target_state)
        writer = self._writer()
        before, after = writer.slot(current), writer.slot(moved)
        if before != after:
            writer.delete([connector_id], {connector_id: before})
        self.store.put_deployment(moved)
        pending = self.store.offset_change_tokens([connector_id]).get(connector_id, "")
        writer.put([replace(moved, offset_change=pending)])
        return moved

    @_reaching_the_runtime
    def assign(self, connector_id: str, worker_id: str | None) -> None:
        if self.places:
            return  # the owner of the connector's slot runs it
        previous = self.store.deployment(connector_id)
        self.store.assign(connector_id, worker_id)
        self.store.nudge(worker_id, previous.worker_id if previous else None)

    @_reaching_the_runtime
    def set_target_state(self, connector_id: str, target_state: TargetState) -> None:
        self.store.set_target(connector_id, target_state)
        self._publish([connector_id])
        self._nudge_worker_of(connector_id)

    @_reaching_the_runtime
    def set_target_states(self, connector_ids: list[str], target_state: TargetState) -> None:
        """:meth:`set_target_state` for many connectors in four round trips, not four each
        (the console's bulk stop of a fleet)."""
        if not connector_ids:
            return
        self.store.redis.hset(
            self.store.key("desired:target"),
            mapping={cid: str(target_state) for cid in connector_ids},
        )
        self._publish(connector_ids)
        self._nudge_workers_of(connector_ids)

    @_reaching_the_runtime
    def deploy_many(self, deployments: list[Deployment]) -> None:
        """:meth:`deploy` for many connectors in three round trips (the console's bulk start)."""
        if not deployments:
            return
        self._leave_other_slots(deployments)
        pipe = self.store.redis.pipeline(transaction=False)
        for deployment in deployments:
            self.store.put_deployment(self._unplaced(deployment), pipe=pipe)
        pipe.execute()
        self._publish(d.connector_id for d in deployments)
        self._nudge_workers_of([d.connector_id for d in deployments])

    @_reaching_the_runtime
    def restart_many(self, connector_ids: list[str]) -> dict[str, int]:
        """:meth:`restart` for many connectors in three round trips; their new generations."""
        if not connector_ids:
            return {}
        pipe = self.store.redis.pipeline(transaction=False)
        for cid in connector_ids:
            pipe.hincrby(self.store.key("desired:generation"), cid, 1)
        generations = dict(zip(connector_ids, map(int, pipe.execute()), strict=True))
        self._publish(connector_ids)
        deployments = self.store.deployments_of(connector_ids)
        self.store.nudge(*sorted({d.worker_id for d in deployments.values() if d.worker_id}))
        self.store.force_statuses(
            [
                ConnectorStatus(
                    connector_id=cid,
                    state=State.RESTARTING,
                    worker_id=deployments[cid].worker_id if cid in deployments else None,
                    generation=generations[cid],
                )
                for cid in connector_ids
            ]
        )
        return generations

    @_reaching_the_runtime
    def delete_many(self, connector_ids: list[str]) -> None:
        """:meth:`delete` for many connectors: the store forgotten in three round trips, then
        each checkpoint removed (as :meth:`delete`, a checkpoint that stays is logged)."""
        if not connector_ids:
            return
        deployments = self.store.deployments_of(connector_ids)
        self.store.delete_many(connector_ids)
        self._publish(connector_ids, deployments)
        self.store.nudge(*sorted({d.worker_id for d in deployments.values() if d.worker_id}))
        for cid, deployment in deployments.items():
            self._remove_checkpoint(cid, deployment)

    def _nudge_workers_of(self, connector_ids: list[str]) -> None:
        """:meth:`_nudge_worker_of` for many connectors in three round trips."""
        deployments = self.store.deployments_of(connector_ids)
        statuses = self.store.statuses(connector_ids)
        wake = {d.worker_id for d in deployments.values()} | {
            s.driver_id for s in statuses.values()
        }
        self.store.nudge(*sorted(w for w in wake if w))

    def _nudge_worker_of(self, connector_id: str) -> None:
        """Wake the connector's runtime worker and the driver running it: they act on the
        change now, not at their next pass."""
        current = self.store.deployment(connector_id)
        status = self.store.statuses([connector_id]).get(connector_id)
        self.store.nudge(
            current.worker_id if current else None, status.driver_id if status else None
        )

    @_reaching_the_runtime
    def restart(self, connector_id: str) -> int:
        generation = self.store.bump_generation(connector_id)
        self._publish([connector_id])
        current = self.store.deployment(connector_id)
        if current is not None:
            self.store.nudge(current.worker_id)
        self.store.force_status(
            ConnectorStatus(
                connector_id=connector_id,
                state=State.RESTARTING,
                worker_id=current.worker_id if current else None,
                generation=generation,
            )
        )
        return generation

    @_reaching_the_runtime
    def delete(self, connector_id: str) -> None:
        """Forget the connector, then remove its checkpoint, so that nothing created later
        under the same name resumes from it. A checkpoint that cannot be removed is logged
        and left (the connector is forgotten all the same)."""
        deployment = self.store.deployment(connector_id)
        self.store.delete(connector_id)
        self._publish([connector_id], {connector_id: deployment} if deployment else None)
        if deployment is None:
            return
        self.store.nudge(deployment.worker_id)
        self._remove_checkpoint(connector_id, deployment)

    def _remove_checkpoint(self, connector_id: str, deployment: Deployment) -> None:
        try:
            if remove_checkpoint(self.checkpoint_root, deployment.checkpoint_key):
                log.info("removed the checkpoint of deleted connector %s", connector_id)
        except (CheckpointError, OSError) as exc:
            log.warning("the checkpoint of deleted connector %s stays: %s", connector_id, exc)

    @_reaching_the_runtime
    def status(self, connector_ids: Iterable[str]) -> dict[str, ConnectorStatus]:
        return self.store.statuses(connector_ids)

    def status_feed(self) -> StatusFeed | None:
        """The status topic from a cursor on, when the group places and the console follows
        it (``SLUICE_RUNTIME_STATUS_FEED``); one reader per process, kept between passes."""
        if not self.places or self.group is None or not self.group.status_feed:
            return None
        if self._feed is None:
            self._feed = StatusFeedReader(self.group)
        return self._feed

    @_reaching_the_runtime
    def workers(self) -> list[WorkerInfo]:
        """The registered workers, each with whether it is a member of the runtime's group
        now (``member``; None when that is unknown)."""
        workers = self.store.workers()
        members = self._group_members()
        if members is None:
            return workers
        return [replace(w, member=client_id_of(w.worker_id) in members) for w in workers]

    def _group_members(self) -> set[str] | None:
        """The client ids in the runtime's group; None when unknown (no group, or Kafka did
        not answer: then not asked again for :data:`MEMBERS_RETRY` seconds, so that a pass
        of the control loop is not held up by every call)."""
        if self.group is None or time.monotonic() < self._members_unknown_until:
            return None
        wait = MEMBERS_RECHECK if self._members_unknown_until else MEMBERS_WAIT
        try:
            members = group_members(self.group.bootstrap, self.group.group_id, timeout=wait)
        except BrokerUnreachable as exc:
            if not self._members_unknown_until:
                log.warning("runtime group membership unknown: %s", exc)
            self._members_unknown_until = time.monotonic() + MEMBERS_RETRY
            return None
        if self._members_unknown_until:
            log.info("runtime group membership known again")
        self._members_unknown_until = 0.0
        return members

    @_reaching_the_runtime
    def forget_worker(self, worker_id: str) -> None:
        self.store.forget_worker(worker_id)

    @_reaching_the_runtime
    def drivers(self) -> list[DriverInfo]:
        return sorted(self.store.drivers(), key=lambda d: (d.worker_id, d.driver_id))

    @_reaching_the_runtime
    def preview(self, connector_id: str, limit: int = 50) -> list[dict[str, Any]]:
        return self.store.preview(connector_id, limit)

    @_reaching_the_runtime
    def take_samples(self, connector_ids: Iterable[str]) -> dict[str, list[dict[str, Any]]]:
        return self.store.take_samples(connector_ids)

    # -- offsets (KIP-875) -------------------------------------------------------------------

    @_reaching_the_runtime
    def offsets(self, connector_id: str, channel: str) -> ConnectorOffsets:
        try:
            committed = latest_committed(checkpoint_dir(self.checkpoint_root, channel))
        except (CheckpointError, OSError, ValueError) as exc:
            raise OffsetsError(f"the checkpoint of {channel!r} cannot be read: {exc}") from exc
        position = dict(committed.kafka or {}) if committed else {}
        pending = self.store.offset_change(connector_id)
        change = pending[0] if pending else None
        if change is not None and change.kind == "reset":
            position = {}
        elif change is not None and change.kind == "offsets":
            position.update({(o.topic, o.partition): o.offset for o in change.offsets})
        return ConnectorOffsets(
            offsets=[SourceOffset(t, p, o) for (t, p), o in sorted(position.items())],
            batch_id=committed.batch_id if committed else None,
            pending=change,
        )

    @_reaching_the_runtime
    def alter_offsets(self, connector_id: str, change: OffsetChange) -> None:
        self.store.put_offset_change(connector_id, change)

    @_reaching_the_runtime
    def window_offsets(
        self, spec: dict[str, Any], start_ms: int, end_ms: int
    ) -> tuple[list[SourceOffset], list[SourceOffset]]:
        source = kafka_source(spec)
        if source is None:
            raise OffsetsError("the channel's source keeps no Kafka offsets to replay")
        if source.settings is None:
            raise OffsetsError("the channel's source Kafka uses TLS, which cannot be looked up")
        starts, ends = window_offsets(source, start_ms, end_ms)

        def listed(offsets: dict[tuple[str, int], int]) -> list[SourceOffset]:
            return [SourceOffset(t, p, o) for (t, p), o in sorted(offsets.items())]

        return listed(starts), listed(ends)

    @_reaching_the_runtime
    def consumer_group_offsets(self, spec: dict[str, Any], group: str) -> list[SourceOffset]:
        source = kafka_source(spec)
        if source is None:
            raise OffsetsError("the channel's source does not read Kafka")
        committed = group_offsets(source.bootstrap_servers, group, settings=client_settings(source))
        return [
            SourceOffset(topic, partition, offset)
            for (topic, partition), offset in sorted(committed.items())
            if source.reads(topic)
        ]

    @_reaching_the_runtime
    def mirrormaker2_offsets(
        self, spec: dict[str, Any], where: MirrorOffsetsTopic
    ) -> list[SourceOffset]:
        source = kafka_source(spec)
        if source is None or source.source_type != "kafka":
            raise OffsetsError("the channel's source does not read Kafka")
        found = read_mirror_offsets(
            where.bootstrap_servers,
            where.topic,
            where.source_alias,
            settings=mirror_cluster_settings(spec, where.bootstrap_servers),
        )
        return [
            SourceOffset(topic, partition, last + 1)
            for (topic, partition), last in sorted(found.items())
            if source.reads(topic)
        ]

    @_reaching_the_runtime
    def write_mirrormaker2_offsets(
        self, spec: dict[str, Any], where: MirrorOffsetsTopic, offsets: list[SourceOffset]
    ) -> bool:
        return write_mirror_offsets(
            where.bootstrap_servers,
            where.topic,
            where.source_alias,
            {(o.topic, o.partition): o.offset - 1 for o in offsets},
            settings=mirror_cluster_settings(spec, where.bootstrap_servers),
            replication=TopicReplication.from_settings(),
        )

    # -- re-sending what the store lost ------------------------------------------------------

    @_reaching_the_runtime
    def desired_summary(self) -> DesiredSummary:
        """One round trip: the store's ``{p}:epoch`` and the smallest ``HLEN`` of its
        ``desired:*`` hashes."""
        epoch, connectors = self.store.desired_summary()
        return DesiredSummary(epoch=epoch, connectors=connectors)

    @_reaching_the_runtime
    def desired_connectors(self) -> set[str]:
        return self.store.desired_ids()

    @_reaching_the_runtime
    def restore(self, restorations: list[Restoration]) -> None:
        """One transaction for the lot (:meth:`RedisStore.restore`), then their workers are
        woken (one more round trip)."""
        if not restorations:
            return
        self.store.restore(restorations)
        self._publish(r.deployment.connector_id for r in restorations)
        workers = {r.deployment.worker_id for r in restorations if r.deployment.worker_id}
        self.store.nudge(*sorted(workers))

    @_reaching_the_runtime
    def set_epoch(self, token: str) -> None:
        """Set ``{p}:epoch``, then wake every registered runtime worker: those that held still
        while it was missing go on now, not at their next pass."""
        self.store.set_epoch(token)
        self.store.nudge(*sorted(info.worker_id for info in self.store.workers()))

    # -- the Spark cluster -------------------------------------------------------------------

    def spark_cluster(self) -> SparkCluster:
        """Read from ``SPARK_MASTER`` as this process sees it (set it for the console as for
        the runtime workers); a standalone master is asked through its web UI's ``/json/``
        (``SLUICE_SPARK_MASTER_UI_URL``, else port 8080 of the master's host)."""
        config = RuntimeConfig.from_env()
        if config.standalone:
            return master_cluster(config.spark_master, config.master_ui_urls())
        mode = "local" if config.spark_master.startswith("local") else "other"
        return SparkCluster(mode=mode, master=config.spark_master)
