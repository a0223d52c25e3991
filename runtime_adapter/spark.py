"""The Spark runtime: connectors are Spark drivers hosted by runtime workers.

The adapter itself only records wishes in Redis (see :mod:`runtime_adapter.store`);
runtime workers (:mod:`runtime_adapter.worker`) converge to them and their
drivers (:mod:`runtime_adapter.driver`) report status back.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from runtime_adapter.base import ConnectorStatus, Deployment, WorkerInfo
from runtime_adapter.states import State, TargetState
from runtime_adapter.store import RedisStore


class SparkRuntime:
    """:class:`runtime_adapter.base.RuntimeAdapter` for Spark Structured Streaming."""

    def __init__(self, redis_url: str, prefix: str = "sluice") -> None:
        self.store = RedisStore.from_url(redis_url, prefix)

    def deploy(self, deployment: Deployment) -> None:
        self.store.put_deployment(deployment)

    def assign(self, connector_id: str, worker_id: str | None) -> None:
        self.store.assign(connector_id, worker_id)

    def set_target_state(self, connector_id: str, target_state: TargetState) -> None:
        self.store.set_target(connector_id, target_state)

    def restart(self, connector_id: str) -> int:
        generation = self.store.bump_generation(connector_id)
        current = self.store.deployment(connector_id)
        self.store.force_status(
            ConnectorStatus(
                connector_id=connector_id,
                state=State.RESTARTING,
                worker_id=current.worker_id if current else None,
                generation=generation,
            )
        )
        return generation

    def delete(self, connector_id: str) -> None:
        self.store.delete(connector_id)

    def status(self, connector_ids: Iterable[str]) -> dict[str, ConnectorStatus]:
        return self.store.statuses(connector_ids)

    def workers(self) -> list[WorkerInfo]:
        return self.store.workers()

    def forget_worker(self, worker_id: str) -> None:
        self.store.forget_worker(worker_id)

    def preview(self, connector_id: str, limit: int = 50) -> list[dict[str, Any]]:
        return self.store.preview(connector_id, limit)
