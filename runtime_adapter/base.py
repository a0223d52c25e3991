"""The runtime adapter contract: the one protocol the console calls.

The console decides *what* should run and *where* (it owns assignment); a
runtime adapter turns that into physical connectors and reports what it
observes. Every call returns plain dataclasses so that a second runtime (for
example an existing Kafka Connect cluster) is one more module implementing
:class:`RuntimeAdapter`.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import asdict, dataclass, field
from typing import Any, Protocol, runtime_checkable

from runtime_adapter.states import State, TargetState


@dataclass(frozen=True)
class Deployment:
    """What the console wants a connector to be.

    ``generation`` grows by one for every restart the console asks for: a worker
    hosting an older generation replaces its driver. ``checkpoint`` is the folder of the
    connector's checkpoint under the checkpoint root (the channel's checkpoint key, unique
    per channel: a channel created under a deleted one's name never resumes its
    checkpoint); empty, the channel's name (deployments written before it existed).
    """

    connector_id: str
    channel: str
    revision: int
    spec: dict[str, Any]
    target_state: TargetState
    worker_id: str | None = None
    generation: int = 0
    checkpoint: str = ""
    run: dict[str, Any] | None = None
    """A bounded run's :class:`pipelines.runs.RunBounds` as JSON (a replay or a redrive
    beside the channel's live connector), ``None`` for a channel's own connector. A run
    reads only its offsets, tags its events, and commits no consumer-group offsets."""
    discovery: bool = False
    """Sample the events for schema discovery (:mod:`pipelines.discovery`); the samples are
    taken with :meth:`RuntimeAdapter.take_samples`."""
    slot: int | None = None
    """The runtime slot the console placed the connector in, when the group places channels
    and it is not the connector's home slot (:func:`runtime_adapter.group.slot_of`): the
    config topic's partition its record is written to, so the owner of that slot runs it
    (capacity-aware placement; ``None``: its home slot)."""
    offset_change: str | None = None
    """When the group places: the token of the console's pending offset change (KIP-875's
    alter or reset, :func:`runtime_adapter.store.offset_change_token`), ``""`` when none is
    pending. A driver reads the change from the store only when there is one it has not
    applied yet, so a channel moved while Redis is away starts all the same. ``None``: not
    known, the store is read (the console places)."""
    team: str = ""
    """The team owning the channel: a worker runs a team's connectors only in drivers of
    that team (a crash costs no other team's channel). ``""``: written before teams, the
    site's shared drivers."""
    policy: dict[str, Any] | None = None
    """The team's policy as the driver enforces it (:mod:`console.services.team_policy`):
    ``{"reach": {...}, "drivers": {...}}``; ``None``: the site's defaults."""

    @property
    def checkpoint_key(self) -> str:
        """The folder of the connector's checkpoint under the checkpoint root."""
        return self.checkpoint or self.channel


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
class ExecutorInfo:
    """One Spark executor of a connector's application, as its driver last saw it.

    ``executor_id`` is Spark's (``driver`` for the driver's own block manager, which runs the
    tasks itself under ``local[*]``); ``memory_used`` and ``memory_total`` are the bytes of
    storage memory in use and available to it.
    """

    executor_id: str
    host: str
    port: int | None = None
    cores: int = 0
    active_tasks: int = 0
    completed_tasks: int = 0
    failed_tasks: int = 0
    memory_used: int = 0
    memory_total: int = 0


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
    sink_retries: int = 0
    """Sink writes retried under a sink's ``retry`` policy (:mod:`pipelines.retry`), counted
    since the connector was first deployed."""
    executors: list[ExecutorInfo] = field(default_factory=list)
    """The Spark executors of the connector's application (empty until its driver reports)."""
    application_id: str | None = None
    """The Spark application id of the connector's driver (``app-…`` on a standalone master)."""
    driver_id: str | None = None
    """The Spark driver that runs (or ran) the connector's query (:class:`DriverInfo`)."""
    reason: str = ""
    """Why the connector is in its state, when the state alone does not say (a source topic
    waited for, no core free for a real-time query); empty otherwise."""
    finished: bool = False
    """An available-now run that reached the end of its source (then STOPPED by itself)."""
    cores_needed: int = 0
    """UNASSIGNED for want of cores: the cores its real-time query needs (one per source
    partition), which its worker does not have free; the console may move it to a worker
    that has them (0: not short of cores)."""
    stages: list[dict[str, Any]] = field(default_factory=list)
    """Per-stage event counts since the driver started (they restart from 0 with it), in
    order source, transforms, sink: ``{"stage": "source"|"transform"|"sink", "index": n|None,
    "type": plugin type, "in": n, "out": n, "failed": n, "in_per_second": x,
    "out_per_second": x}`` (the rates over the latest micro-batch). Empty until a batch ran."""
    rules: list[dict[str, Any]] = field(default_factory=list)
    """A bus's per-rule counts since the driver started (they restart from 0 with it), in
    the spec's rule order: ``{"rule": name, "matched": n, "delivered": n, "failed": n,
    "matched_per_second": x, "delivered_per_second": x, "targets": [{"sink":
    "rules[0].sinks[1]", "type": plugin type, "delivered": n, "failed": n}]}``. ``matched``
    counts the events the rule's pattern matched, ``delivered`` those every one of its
    targets took, ``failed`` those a target (or the rule's transforms) failed. Empty for a
    linear channel, and until a batch ran."""
    report_interval: float = 0.0
    """The longest its reporter lets this status go unrewritten while it hosts the connector
    (seconds; ``SLUICE_STATUS_INTERVAL`` of the driver's host; 0: the report promises no
    refresh, as a worker's one-off report of a stopped connector). A hosted status not
    refreshed within twice this is no longer known: the console shows it as not reporting."""
    revision: int | None = None
    """The revision the connector's query runs, as its driver reports it (``None`` in a report
    that does not come from a driver). A bus whose new revision changed only its rules takes
    it without a restart: this is how the change shows as applied."""


@dataclass(frozen=True)
class StatusNews:
    """One connector's status as the runtime's status feed says it changed.

    ``status`` is None when the runtime forgot the connector (a tombstone). ``reporting`` is
    the owner's judgement: False when the connector's driver stopped refreshing its report
    (the status is no longer known). ``epoch`` is the owner's group generation, ``slot`` the
    slot (status topic partition) it was written in: a connector moved to another slot has
    its last records, then a tombstone, in the slot it left, which say nothing of it now."""

    connector_id: str
    status: ConnectorStatus | None
    reporting: bool
    epoch: int
    slot: int | None = None


@dataclass(frozen=True)
class Vouch:
    """A worker's word that the connectors it names still report: each with how many seconds
    before the vouch was written its driver last refreshed its report. A reader dates their
    reports that long before it read the vouch (their deadline: twice ``report_interval``
    after that)."""

    worker_id: str
    ages: Mapping[str, float]
    """Connector id → seconds since its last report, by the worker's clock."""
    report_interval: float
    epoch: int
    at: float = 0.0
    """When it was written, by the worker host's clock (shown, never compared)."""
    capacity: Mapping[str, Any] | None = None
    """The worker's capacity and load when it wrote the vouch (``cores``, ``cores_held`` by
    real-time queries, ``connectors``, ``memory_available_mb`` on its host, ``draining``);
    ``None`` from a worker that does not say."""

    @property
    def connector_ids(self) -> frozenset[str]:
        return frozenset(self.ages)


@dataclass(frozen=True)
class FeedBatch:
    """What the status feed held after a cursor: its news and vouches in the order written,
    and the cursor to read from next."""

    news: list[StatusNews]
    vouches: list[Vouch]
    cursor: dict[int, int]
    """Partition → the next offset to read."""
    caught_up: bool
    """The read ended with every partition read to its end, as the brokers said (False: it
    stopped at its time budget first; what it read may be old)."""


class StatusFeed(Protocol):
    """The runtime's status changes, from a cursor on (its status topic)."""

    def read(self, cursor: Mapping[int, int] | None, *, budget: float = 0.5) -> FeedBatch:
        """What was written after ``cursor`` (None: from the start: every connector's latest
        status), read for at most ``budget`` seconds. Raises :class:`RuntimeUnavailable`
        when the feed cannot be read."""
        ...


@dataclass(frozen=True)
class WorkerInfo:
    """A runtime worker as its last heartbeat describes it."""

    worker_id: str
    host: str
    pid: int
    started_at: float
    last_heartbeat: float
    connectors: list[str] = field(default_factory=list)
    drivers: list[str] = field(default_factory=list)
    """The ids of the Spark drivers the worker runs (:class:`DriverInfo`)."""
    member: bool | None = None
    """Whether the worker is a member of the runtime's Kafka group now, as the group's
    coordinator says (``None``: unknown: membership is off, or Kafka did not answer). A
    member is alive whatever its heartbeats in the store say: only the coordinator's session
    ends a member, and a worker stops its channels before that (the self-fence)."""


@dataclass(frozen=True)
class DriverInfo:
    """A long-lived Spark driver of a runtime worker, as its last heartbeat describes it.

    ``isolation`` is ``shared`` (many connectors' queries, up to ``capacity``) or
    ``dedicated`` (one connector); ``connectors`` are those whose query it hosts now
    (running or paused), ``cores`` the cores its real-time queries hold.
    """

    driver_id: str
    worker_id: str
    pid: int
    isolation: str
    started_at: float
    last_heartbeat: float
    capacity: int = 1
    memory: str = ""
    connectors: list[str] = field(default_factory=list)
    application_id: str | None = None
    cores: int = 0
    ready: bool = True
    """False while the driver starts its SparkSession (its heartbeats may then pause: the
    worker allows a start timeout, not the session timeout)."""
    team: str = ""
    """The team whose channels alone it runs (:attr:`Deployment.team`; ``""``: the channels
    deployed before teams)."""


@dataclass(frozen=True)
class SparkWorker:
    """A worker of a Spark standalone cluster, as its master reports it.

    Memory is in MiB (the master's unit); ``last_heartbeat`` is a Unix time in seconds.
    """

    worker_id: str
    host: str
    port: int | None
    state: str
    cores: int
    cores_used: int
    memory_mb: int
    memory_used_mb: int
    last_heartbeat: float | None
    web_ui: str = ""


@dataclass(frozen=True)
class SparkApplication:
    """An application running on a Spark standalone master (one per connector driver)."""

    app_id: str
    name: str
    state: str
    cores: int
    memory_per_executor_mb: int
    started_at: float | None


@dataclass(frozen=True)
class SparkCluster:
    """Where a runtime's executors run, and what that cluster reports.

    ``mode`` is ``local`` (``local[*]``: executors inside each driver, nothing to ask) or
    ``standalone`` (a ``spark://`` master). ``error`` is set, and the lists are empty, when
    the master's status endpoint could not be read; the runtime keeps running regardless.
    """

    mode: str
    master: str
    status: str | None = None
    web_ui: str | None = None
    workers: list[SparkWorker] = field(default_factory=list)
    applications: list[SparkApplication] = field(default_factory=list)
    error: str | None = None


class RuntimeAdapterError(RuntimeError):
    """Base of the errors a runtime adapter raises on purpose (the console catches these,
    never a client library's own exceptions)."""


class RuntimeUnavailable(RuntimeAdapterError):
    """The runtime cannot be reached right now: its store (Redis) or Kafka did not answer,
    or a socket or file failed (``OSError``). Worth a retry. The cause (the client library's
    own exception) is chained as ``__cause__``; the message is the cause's."""


class OffsetsError(RuntimeAdapterError):
    """A connector's offsets cannot be read or moved as asked; the message says why."""


@dataclass(frozen=True)
class SourceOffset:
    """Where a source partition resumes: the NEXT offset to read (Kafka's convention).

    ``topic`` and ``partition`` name a Kafka topic-partition; ``offset`` is at least 0.
    """

    topic: str
    partition: int
    offset: int


@dataclass(frozen=True)
class OffsetChange:
    """A pending change of a stopped connector's offsets, applied when its driver next starts.

    ``kind`` is ``offsets`` (move the partitions named in ``offsets``; the others keep their
    checkpoint position), ``timestamp`` (every partition to its first record at or after
    ``timestamp_ms``, or its end when there is none) or ``reset`` (every partition back to
    the source's configured ``starting_offsets``).
    """

    kind: str
    offsets: tuple[SourceOffset, ...] = ()
    timestamp_ms: int | None = None

    def to_json(self) -> dict[str, Any]:
        return {
            "kind": self.kind,
            "offsets": [asdict(offset) for offset in self.offsets],
            "timestamp_ms": self.timestamp_ms,
        }

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> OffsetChange:
        return cls(
            kind=data["kind"],
            offsets=tuple(SourceOffset(**offset) for offset in data.get("offsets") or []),
            timestamp_ms=data.get("timestamp_ms"),
        )


@dataclass(frozen=True)
class MirrorOffsetsTopic:
    """Where MirrorMaker 2 keeps a replication flow's source offsets: its Kafka Connect offsets
    topic ``topic`` on ``bootstrap_servers`` (MM2's target cluster, one the channel's spec
    already reaches), holding the offsets of the flow from the cluster alias ``source_alias``."""

    source_alias: str
    topic: str
    bootstrap_servers: str


@dataclass(frozen=True)
class ConnectorOffsets:
    """A connector's source offsets as its next start will see them.

    ``offsets`` are those of the checkpoint's latest committed batch (``batch_id``; ``None``
    without one), with a pending explicit change laid over them; ``pending`` is the change
    not yet applied by a driver (``None`` when there is none). After a pending reset the
    list is empty: the next start begins from the source's ``starting_offsets``.
    """

    offsets: list[SourceOffset]
    batch_id: int | None = None
    pending: OffsetChange | None = None


@dataclass(frozen=True)
class DesiredSummary:
    """How much of the console's desired state the runtime holds, read cheaply every pass.

    ``epoch`` is the token the console set after its last complete re-send
    (:meth:`RuntimeAdapter.set_epoch`); ``None`` when the runtime holds none: it was emptied
    (a new store, a lost volume) or never filled by a console. ``connectors`` counts the
    connectors whose desired state the runtime holds whole (definition, target, worker and
    generation): fewer than the console's is a partial loss.
    """

    epoch: str | None
    connectors: int


@dataclass(frozen=True)
class Restoration:
    """One connector's desired state as the console re-sends it to a runtime that lost it.

    ``deployment`` carries the console's generation (the truth: a runtime that lost its own
    count must not restart it from 0); ``dead_letters`` and ``sink_retries`` are the totals
    the console last read, from which the runtime's counters go on when it lost them.
    """

    deployment: Deployment
    dead_letters: int = 0
    sink_retries: int = 0


@runtime_checkable
class RuntimeAdapter(Protocol):
    """The operations the console may ask of a runtime.

    All calls are idempotent: asking twice for the same thing is the same as
    asking once. State changes are asynchronous: the call records the wish and
    the runtime converges; :meth:`status` shows the result.

    Errors: every call raises :class:`RuntimeUnavailable` when the runtime cannot be reached
    (its store, Kafka), whatever client library is underneath; the offsets calls raise
    :class:`OffsetsError` for a request the runtime cannot serve. Nothing else is expected
    of a caller.
    """

    places: bool
    """True when the runtime decides where connectors run (its group assigns them): the
    console's :meth:`assign` is then ignored and the console follows :meth:`owners`."""

    membership: bool
    """True when the runtime's workers are members of its Kafka group, whose coordinator
    decides who is alive: :meth:`workers` then says of each whether it is a member, and
    answers ``member=None`` for all only when Kafka did not say."""

    def deploy(self, deployment: Deployment) -> None:
        """Create or replace the desired definition of a connector."""

    def assign(self, connector_id: str, worker_id: str | None) -> None:
        """Host the connector on ``worker_id`` (``None`` unassigns it)."""

    def owners(self, connector_ids: Iterable[str]) -> dict[str, str | None]:
        """The worker each connector is assigned to now (None: no worker); unknown ids
        are absent."""

    def set_draining(self, worker_ids: set[str]) -> None:
        """When the runtime places: the workers that are to hand their connectors over to
        the others and take none (drained); every other worker takes its share."""

    def set_target_state(self, connector_id: str, target_state: TargetState) -> None:
        """Start, pause, resume or stop a deployed connector."""

    def restart(self, connector_id: str) -> int:
        """Replace the connector's driver; returns the new generation."""

    def delete(self, connector_id: str) -> None:
        """Stop the connector and forget it, its checkpoint removed where the adapter
        can reach it."""

    # -- the same calls for many connectors (a bulk action; a runtime without a batch call of
    # its own loops over the single one) ----------------------------------------------------

    def deploy_many(self, deployments: list[Deployment]) -> None:
        """:meth:`deploy` for each of ``deployments``."""

    def set_target_states(self, connector_ids: list[str], target_state: TargetState) -> None:
        """:meth:`set_target_state` for each of ``connector_ids``."""

    def restart_many(self, connector_ids: list[str]) -> dict[str, int]:
        """:meth:`restart` for each of ``connector_ids``; the new generation of each."""

    def delete_many(self, connector_ids: list[str]) -> None:
        """:meth:`delete` for each of ``connector_ids``."""

    def status(self, connector_ids: Iterable[str]) -> dict[str, ConnectorStatus]:
        """Observed status of many connectors in one call; unknown ids are absent."""

    def workers(self) -> list[WorkerInfo]:
        """Every runtime worker that has ever heartbeated and not been forgotten."""

    def drivers(self) -> list[DriverInfo]:
        """The Spark drivers the runtime workers run now (which connectors each hosts)."""

    def forget_worker(self, worker_id: str) -> None:
        """Drop a dead worker's registration and its drivers' (a live one registers again
        at its next heartbeat: the console refuses to forget one)."""

    def preview(self, connector_id: str, limit: int = 50) -> list[dict[str, Any]]:
        """The newest events a connector's ``preview`` sink kept, newest first."""

    def take_samples(self, connector_ids: Iterable[str]) -> dict[str, list[dict[str, Any]]]:
        """The events sampled for schema discovery since the last call, per connector
        (oldest first; connectors without any are absent); taken, not just read."""

    def offsets(self, connector_id: str, channel: str) -> ConnectorOffsets:
        """The connector's source offsets (KIP-875's GET): from the checkpoint whose key is
        ``channel`` (:attr:`Deployment.checkpoint_key`) with any pending change laid over it.
        Reads only."""

    def alter_offsets(self, connector_id: str, change: OffsetChange) -> None:
        """Record ``change`` for the connector's next start (KIP-875's PATCH and DELETE).

        The caller makes sure the connector is stopped; a later change replaces an earlier
        one that no driver applied yet.
        """

    def window_offsets(
        self, spec: dict[str, Any], start_ms: int, end_ms: int
    ) -> tuple[list[SourceOffset], list[SourceOffset]]:
        """``(first, end)`` offsets of the time window ``[start_ms, end_ms)`` in every
        partition ``spec``'s Kafka-backed source reads (a replay's bounds): each partition's
        first record at or after each time, its end when there is none."""

    def consumer_group_offsets(self, spec: dict[str, Any], group: str) -> list[SourceOffset]:
        """The offsets ``group`` committed on the brokers of ``spec``'s Kafka source, for the
        topics that source reads (migration from Kafka Connect or MirrorMaker 2)."""

    def mirrormaker2_offsets(
        self, spec: dict[str, Any], where: MirrorOffsetsTopic
    ) -> list[SourceOffset]:
        """MirrorMaker 2's offsets in ``where``, for the topics ``spec``'s Kafka source reads,
        as the NEXT offsets a channel reads (MM2 keeps the last offset it copied: + 1)."""

    def write_mirrormaker2_offsets(
        self, spec: dict[str, Any], where: MirrorOffsetsTopic, offsets: list[SourceOffset]
    ) -> bool:
        """Write ``offsets`` (NEXT offsets) into ``where`` in MirrorMaker 2's form (the last
        copied offset: - 1), so an MM2 started next resumes exactly there; True when the
        offsets topic was created. MirrorMaker 2 must be stopped (a running one overwrites)."""

    def spark_cluster(self) -> SparkCluster:
        """The Spark cluster the connectors' executors run on: its mode and master, and for
        a standalone master its workers and applications. Never raises for an unreachable
        master: the answer carries the ``error``."""

    # -- re-sending what the runtime lost (the console's desired state is the truth) ---------

    def home_slot(self, connector_id: str) -> int | None:
        """The runtime slot a connector is in unless the console placed it in another
        (:attr:`Deployment.slot`); ``None`` when the runtime has no slots (its group does
        not place connectors)."""
        ...

    def relocate(
        self, connector_id: str, slot: int | None, target_state: TargetState | None = None
    ) -> Deployment | None:
        """Move a connector the runtime's group places to ``slot`` (``None``: its home
        slot) with ``target_state`` (unset: as it is), only once the owner of the slot it
        leaves reported it stopped; the deployment as moved, ``None`` when the runtime does
        not hold it."""
        ...

    def status_feed(self) -> StatusFeed | None:
        """The runtime's status changes as a feed (when its group places connectors and
        writes their statuses to its status topic), or None: then :meth:`status` is read."""

    def desired_summary(self) -> DesiredSummary:
        """The runtime's epoch token and the number of connectors it holds whole, in one
        cheap read (what every control-loop pass checks)."""

    def desired_connectors(self) -> set[str]:
        """The ids of the connectors whose desired state the runtime holds whole (read only
        when :meth:`desired_summary` says some are missing)."""

    def restore(self, restorations: list[Restoration]) -> None:
        """Give the runtime back the desired state of connectors it lost, in one batch.

        Idempotent, and never a step back: a connector's definition, target and worker are
        written where the runtime has none (what the console sent since the loss is newer and
        stays), its generation only raised (never lowered) to the given one, and its
        counters, when the runtime's are below the given totals (it lost them), go on from
        those totals. The runtime's workers act on it once :meth:`set_epoch` is called.
        """

    def set_epoch(self, token: str) -> None:
        """Say that the runtime now holds the console's whole desired state (after a complete
        re-send): runtime workers that held still while the token was missing go on."""
