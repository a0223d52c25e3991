"""What a reconcile pass knows and the records it keeps: its state, the connector and worker
rows it changes, the events it records (all written at the end of the pass, by
:mod:`.loop`).
Each step of a pass (:mod:`.workers`, :mod:`.feed`, :mod:`.placement`, :mod:`.observe`,
:mod:`.tasks`, :mod:`.restarts`) is a part of the pass built on this state."""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any

from django.conf import settings

from console.choices import (
    ConnectorState,
    SubjectType,
)
from console.models import (
    Connector,
    LifecycleEvent,
    Task,
    Worker,
)
from console.selectors.specs import mask_known_secrets, plain_secret_values
from console.services.lifecycle import RECONCILE_ACTOR, lifecycle_event
from console.services.moves import Mover
from runtime_adapter.base import (
    RuntimeAdapter,
    StatusNews,
    Vouch,
)
from runtime_adapter.logs import log_context

logger = logging.getLogger("console.services.reconcile")

#: Observed states that mean "a driver is (or is about to be) up on the reporting worker".
_ACTIVE_STATES = frozenset(
    {ConnectorState.RUNNING, ConnectorState.PAUSED, ConnectorState.RESTARTING}
)

_MAX_REASON = 500

_TICK = timedelta(microseconds=1)


@dataclass(frozen=True)
class ReconcileReport:
    """What one pass saw and did."""

    workers_alive: int
    workers_dead: int
    connectors: int
    placements: int
    events: int
    restarts: int = 0
    resent: int = 0
    """Connectors re-sent to a runtime that had lost their desired state."""
    stale: bool = False
    """The pass wrote nothing: a pass with a newer fencing token had written first."""
    news: int = 0
    """Connectors with news in the runtime's status feed (when the pass follows it)."""
    full: bool = True
    """The pass looked at every connector (``connectors``: how many it looked at)."""


class StalePass(Exception):
    """A pass with a newer fencing token has written: this one's results are out of date."""


class _TaskRows:
    """A pass's task rows by connector, read in one query for the connectors whose tasks it
    expects to touch (``read``; None: every connector); those of another connector are read
    when asked for (:meth:`_Pass.may_touch_tasks` makes that rare)."""

    def __init__(self, rows: Any, read: set[int] | None) -> None:
        self.read = read
        self.rows: dict[int, dict[int, Task]] = {}
        for task in rows:
            self.rows.setdefault(task.connector_id, {})[task.task_id] = task

    def of(self, connector: Connector) -> dict[int, Task]:
        if self.read is not None and connector.pk not in self.read:
            self.read.add(connector.pk)
            self.rows[connector.pk] = {
                t.task_id: t for t in Task.objects.filter(connector=connector)
            }
        return self.rows.get(connector.pk, {})


@dataclass
class _FeedPass:
    """What a pass read of the runtime's status feed."""

    cursor: dict[int, int]
    news: dict[str, StatusNews]
    vouches: dict[str, Vouch]
    """Worker id → its latest vouch in what was read."""
    full: bool
    """The pass looks at every connector, not only the news, what is due and a slice."""
    slice: int
    """The slice of the rolling resync this pass looks at."""
    caught_up: bool = True
    """The read reached the end of what was written (else its news may be old ones)."""
    taken: set[str] = field(default_factory=set)
    """Connectors whose vouch the pass applied itself (it looked at them)."""


def _timestamp(seconds: float | None) -> datetime | None:
    return datetime.fromtimestamp(seconds, tz=UTC) if seconds else None


def summarize_trace(trace: str) -> str:
    """The line of a trace that says what went wrong.

    A Python traceback states its error on the last line; a JVM trace on the first.
    """
    lines = [line.strip() for line in trace.strip().splitlines() if line.strip()]
    if not lines:
        return "failed"
    line = lines[-1] if lines[0].startswith("Traceback") else lines[0]
    return line[:_MAX_REASON]


class PassState:
    """One pass's state and the records every step keeps (applied to the rows, written
    at the end of the pass)."""

    def __init__(self, runtime: RuntimeAdapter, now: float, token: int | None = None) -> None:
        self.runtime = runtime
        self.token = token
        self.now = now
        self.at = datetime.fromtimestamp(now, tz=UTC)
        self.session_timeout = settings.SLUICE_WORKER_SESSION_TIMEOUT
        self.restart_reset = settings.SLUICE_RESTART_RESET_SECONDS
        self.events: list[LifecycleEvent] = []
        self.live: set[str] = set()
        self.draining: set[str] = set()
        """Workers DRAINING or DRAINED (alive or not): no placements go to them."""
        self.dead_reasons: dict[str, str] = {}
        self.still_draining: set[str] = set()
        """Workers DRAINING (not yet DRAINED)."""
        self.members_unknown = False
        """The runtime's group decides liveness and Kafka did not say who is in it this pass."""
        self.drained: list[str] = []
        self._hosted: dict[str, str] | None = None
        self.new_workers: list[Worker] = []
        self.changed_workers: list[Worker] = []
        self.changed_connectors: dict[int, Connector] = {}
        self.new_generations: dict[int, Connector] = {}
        self.new_attempts: dict[int, Connector] = {}
        self.finished_runs: list[tuple[Connector, int, LifecycleEvent]] = []
        self.restarts = 0
        self.new_tasks: list[Task] = []
        self.changed_tasks: list[Task] = []
        self.gone_tasks: list[int] = []
        self.placements = 0
        self.secrets: dict[int, list[str]] = {}
        self.reporting_changed: set[int] = set()
        """Channels whose connector turned NOT_REPORTING or reports again (by this pass)."""
        self.feed: _FeedPass | None = None
        """What this pass read of the runtime's status feed (None: it reads every status)."""
        self._every: list[Connector] | None = None
        self.dated: set[int] = set()
        """Connectors whose report this pass dated from a worker's vouch."""
        self.worker_rows: dict[str, Worker] = {}
        """Every worker the console knows (read by :meth:`sync_workers`)."""
        self.mover: Mover | None = None
        """Capacity-aware moves (:mod:`console.services.moves`): when the runtime places
        channels and the pass follows its status feed."""

    def every_connector(self) -> list[Connector]:
        """Every connector, with its channel and revision (read once a pass)."""
        if self._every is None:
            self._every = list(
                Connector.objects.select_related("channel", "revision").order_by("runtime_id")
            )
        return self._every

    def update_connector(self, connector: Connector, values: dict) -> None:
        """Apply ``values`` to the connector; it is written only when one of them differs."""
        if all(getattr(connector, name) == value for name, value in values.items()):
            return
        for name, value in values.items():
            setattr(connector, name, value)
        self.connector_changed(connector)

    def connector_changed(self, connector: Connector) -> None:
        self.changed_connectors[connector.pk] = connector

    def set_connector_state(
        self, connector: Connector, state: str, reason: str, *, always_record: bool = False
    ) -> None:
        if state == connector.state and not always_record:
            return
        self.connector_event(connector, state, reason)
        if state != connector.state:
            connector.state = state
            connector.state_changed_at = self.at
            self.connector_changed(connector)

    def connector_event(
        self, connector: Connector, state: str, reason: str, *, from_state: str | None = None
    ) -> None:
        """Record a connector's move from its current state (or ``from_state``) to ``state``
        (not applied).

        The reason (often a trace's error line) is masked with the revision's secrets."""
        reason = mask_known_secrets(reason, self.secrets_of(connector))
        with log_context(channel=connector.channel.name, connector=connector.runtime_id):
            logger.info("connector %s → %s: %s", from_state or connector.state, state, reason)
        self.events.append(
            lifecycle_event(
                channel=connector.channel,
                subject_type=SubjectType.CONNECTOR,
                subject_id=connector.runtime_id,
                from_state=connector.state if from_state is None else from_state,
                to_state=state,
                actor=RECONCILE_ACTOR,
                reason=reason,
                at=self.at,
            )
        )

    def secrets_of(self, connector: Connector) -> list[str]:
        """The plaintext secrets of the connector's deployed revision (decrypted once a pass)."""
        revision = connector.revision
        if revision is None:
            return []
        if revision.pk not in self.secrets:
            self.secrets[revision.pk] = plain_secret_values(revision.spec)
        return self.secrets[revision.pk]

    def update_worker(self, worker: Worker, values: dict[str, Any]) -> None:
        """Apply ``values``; the row is written only when one of them differs."""
        if all(getattr(worker, name) == value for name, value in values.items()):
            return
        for name, value in values.items():
            setattr(worker, name, value)
        if any(w is worker for w in (*self.new_workers, *self.changed_workers)):
            return  # written whole, or already to be written
        self.changed_workers.append(worker)

    def worker_event(
        self, worker: Worker, to_state: str, reason: str, from_state: str | None = None
    ) -> None:
        self.events.append(
            lifecycle_event(
                subject_type=SubjectType.WORKER,
                subject_id=worker.worker_id,
                from_state=worker.state if from_state is None else from_state,
                to_state=to_state,
                actor=RECONCILE_ACTOR,
                reason=reason,
                at=self.at,
            )
        )
