"""The runtime adapter contract: the one protocol the console calls.

The console decides *what* should run and *where* (it owns assignment); a
runtime adapter turns that into physical connectors and reports what it
observes. Every call returns plain dataclasses so that a second runtime (for
example an existing Kafka Connect cluster) is one more module implementing
:class:`RuntimeAdapter`.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any, Protocol, runtime_checkable

from runtime_adapter.states import State, TargetState


@dataclass(frozen=True)
class Deployment:
    """What the console wants a connector to be.

    ``generation`` grows by one for every restart the console asks for: a worker
    hosting an older generation replaces its driver.
    """

    connector_id: str
    channel: str
    revision: int
    spec: dict[str, Any]
    target_state: TargetState
    worker_id: str | None = None
    generation: int = 0


@dataclass(frozen=True)
class TaskStatus:
    """One unit of a connector's parallel work: one source partition."""

    task_id: int
    state: State
    worker_id: str | None
    topic: str | None = None
    partition: int | None = None
    offset: int | None = None
    end_offset: int | None = None
    lag: int | None = None
    rows_per_second: float | None = None


@dataclass(frozen=True)
class ConnectorStatus:
    """What the runtime observes of one connector."""

    connector_id: str
    state: State
    worker_id: str | None
    generation: int = 0
    trace: str = ""
    updated_at: float = 0.0
    tasks: list[TaskStatus] = field(default_factory=list)
    progress: dict[str, Any] | None = None
    dead_letters: int = 0
    """Events that failed a stage and went to the dead-letter target (or were skipped),
    counted since the connector was first deployed."""


@dataclass(frozen=True)
class WorkerInfo:
    """A runtime worker as its last heartbeat describes it."""

    worker_id: str
    host: str
    pid: int
    started_at: float
    last_heartbeat: float
    connectors: list[str] = field(default_factory=list)


@runtime_checkable
class RuntimeAdapter(Protocol):
    """The operations the console may ask of a runtime.

    All calls are idempotent: asking twice for the same thing is the same as
    asking once. State changes are asynchronous: the call records the wish and
    the runtime converges; :meth:`status` shows the result.
    """

    def deploy(self, deployment: Deployment) -> None:
        """Create or replace the desired definition of a connector."""

    def assign(self, connector_id: str, worker_id: str | None) -> None:
        """Host the connector on ``worker_id`` (``None`` unassigns it)."""

    def set_target_state(self, connector_id: str, target_state: TargetState) -> None:
        """Start, pause, resume or stop a deployed connector."""

    def restart(self, connector_id: str) -> int:
        """Replace the connector's driver; returns the new generation."""

    def delete(self, connector_id: str) -> None:
        """Stop the connector and forget it (its checkpoint stays on disk)."""

    def status(self, connector_ids: Iterable[str]) -> dict[str, ConnectorStatus]:
        """Observed status of many connectors in one call; unknown ids are absent."""

    def workers(self) -> list[WorkerInfo]:
        """Every runtime worker that has ever heartbeated and not been forgotten."""

    def forget_worker(self, worker_id: str) -> None:
        """Drop a dead worker's registration."""

    def preview(self, connector_id: str, limit: int = 50) -> list[dict[str, Any]]:
        """The newest events a connector's ``preview`` sink kept, newest first."""
