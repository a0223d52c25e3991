"""One connector's query inside a Spark driver, driven by a thread of its own.

A driver (:mod:`runtime_adapter.host.driver`) hosts many connectors. Each is a
:class:`HostedConnector`: its own SparkSession (``newSession()``: its own SQL settings and
temporary views over the driver's one SparkContext, hardened like the driver's), its own
scheduler pool (``spark.scheduler.pool`` = the connector id, under the FAIR scheduler: a busy
channel cannot starve its neighbours), its own checkpoint, and a thread that obeys its target
state (RUNNING / PAUSED / STOPPED), reports its status, hands its processed offsets to the
channel's consumer-group committer (:class:`~runtime_adapter.kafka.GroupCommitter`) and its
source's samples to :mod:`~runtime_adapter.host.sampling`, each of which does its work on a
thread of its own (a broker away makes them wait, never the status), and reports a failure
with its trace. Nothing it does changes a neighbour:
a failure ends this connector's query and thread only.

The thread wakes when its driver hands it a changed deployment (:meth:`update`), and otherwise
every :data:`ACTIVE_INTERVAL` seconds while its query runs (to read the progress) and every
:data:`IDLE_INTERVAL` seconds when paused or waiting. Its
:class:`~runtime_adapter.host.reporter.StatusReporter` writes a status only when it says
something new, or every ``status_interval`` seconds (``SLUICE_STATUS_INTERVAL``): an idle
channel writes almost nothing. A store error never stops the query: the status is written
when the store answers again, and the counts the store keeps wait here meanwhile.

A new revision of a running bus that changes its rules alone
(:func:`pipelines.spec.live.live_change`) is taken by the running query
(:meth:`HostedConnector.take_revision`, its :class:`~pipelines.bus.BusRouter` swaps the rules
from the next batch on): no restart, the same query run; the status reports the new
``revision``. Any other new revision releases the connector and its driver starts it again
from its checkpoint.
"""

from __future__ import annotations

import logging
import threading
import time
import traceback
from collections.abc import Callable
from contextlib import AbstractContextManager, nullcontext
from dataclasses import dataclass
from pathlib import Path
from typing import Any, cast

from pipelines.registry_client import bind_registry_team
from pipelines.spec.live import live_revision
from pipelines.spec.reach import InvalidReach, in_effect, parse_reach
from runtime_adapter.base import ConnectorStatus, Deployment, ExecutorInfo
from runtime_adapter.checkpoint import checkpoint_dir
from runtime_adapter.config import RuntimeConfig
from runtime_adapter.host.failures import (
    decrypted_spec,
    fatal_to_the_jvm,
    format_trace,
    mask_secrets,
    summarize_failure,
)
from runtime_adapter.host.progress import (
    RuleTotals,
    StageTotals,
    TaskTracker,
    progress_after,
    progress_dict,
    rule_layout,
    source_rate,
)
from runtime_adapter.host.reporter import StatusReporter
from runtime_adapter.host.sampling import SourceSampling
from runtime_adapter.host.start import QueryStart
from runtime_adapter.kafka import (
    BrokerUnreachable,
    GroupCommitter,
    check_reachable,
    consumer_group,
    list_partitions,
    partition_offsets,
    security_settings,
)
from runtime_adapter.logs import log_context
from runtime_adapter.states import State, TargetState
from runtime_adapter.store import STORE_ERRORS, Placement, RedisStore

log = logging.getLogger("sluice.driver")

ACTIVE_INTERVAL = 0.5
"""Seconds between two looks at a running query's progress."""
RUN_INTERVAL = 0.1
"""Seconds between two looks at a bounded run's progress: the run is stopped as soon as a
look finds its end reached, and meanwhile its query has started reading past the end (what
it reads there is dropped); at 0.5 s that was up to half a second of such reading."""
IDLE_INTERVAL = 5.0
"""Seconds between two turns of a paused or waiting connector's loop (a change of its
deployment wakes it at once)."""
TOPIC_WAIT_INTERVAL = 5.0
"""Seconds between two looks for a source topic that does not exist yet."""
STOP_TIMEOUT_MS = 30_000
"""How long stopping a query may take before Spark gives up on its batch (a stuck sink must
not hold its thread, and its driver's shutdown, forever)."""
PAUSED_LAG_SECONDS = 10.0
# How long a query that failed with an error fatal to the JVM (out of memory) waits for its
# driver's JVM to exit before it reports its failure itself (the JVM did not go, after all).
JVM_EXIT_WAIT = 30.0
"""How often a paused connector reads its source's end offsets (no batch reports them)."""
SESSION_SQL_OPTIONS = {
    "spark.sql.constraintPropagation.enabled": "false",
    "spark.sql.codegen.wholeStage": "false",
}
"""Spark SQL options of every channel's session.

* Spark optimizes a streaming query's whole logical plan again for every micro-batch, a fixed
  cost that lengthens every batch and so, at a steady input rate, the rows per batch and the
  latency. Constraint propagation (filters inferred from every Filter and Project; a channel's
  plan has no join to gain from them) is a good part of that on a channel's plan, whose
  ``failure`` column is rebuilt by a CASE WHEN at every stage: 20-50 % of the optimizer's time
  per batch on the bench channel (``python -m bench.dataplane --only latency``).
* Whole-stage code generation fuses a stage's operators into one generated method, written
  again for every micro-batch (about a quarter of a batch on the bench channel). A channel's
  stage is large (the source's checks, the pattern, the CloudEvent, a failure column per stage):
  the bench channel's came to 8,011 bytes of bytecode, above the 8,000 HotSpot compiles
  (``HugeMethodLimit``), so it ran in the interpreter for the life of the query. Without it
  each operator's expressions are generated, compiled and JIT-compiled on their own: the bench
  channel drained 1.26x faster for 1.31x less CPU per event and planned each batch faster."""


class NotOwner(Exception):
    """The connector is no longer this driver's to run (moved, restarted, deleted)."""


@dataclass(frozen=True)
class LiveRevision:
    """A new revision a running bus takes without a restart
    (:meth:`HostedConnector.take_revision`)."""

    deployment: Deployment
    plain: dict[str, Any]
    """Its spec, decrypted."""


class HostedConnector:
    """One connector's query and status in a driver (see the module docstring)."""

    def __init__(
        self,
        store: RedisStore,
        config: RuntimeConfig,
        *,
        connector_id: str,
        worker_id: str,
        generation: int,
        driver_id: str | None = None,
        placement: Placement | None = None,
        spark: Any = None,
        executors: Any = None,
        link: Any = None,
    ) -> None:
        self.store = store
        self.config = config
        self.connector_id = connector_id
        self.worker_id = worker_id
        self.generation = generation
        self.driver_id = driver_id
        self.placement = placement
        self.revision: int | None = placement.revision if placement else None
        self.channel = ""
        self.base_spark = spark
        self.spark: Any = None  # the connector's own session, made when its query first starts
        self.application_id: str | None = None
        self.executors = executors  # () -> list[ExecutorInfo], the driver's shared view
        self.query: Any = None
        self.state = State.UNASSIGNED
        self.reason = ""
        self.finished = False
        self.run_bounds: Any = None
        """The running query's bounds when it is a bounded run (parsed once, at its start)."""
        self.tracker = TaskTracker(worker_id, [])
        self.source_brokers: tuple[str, dict[str, Any]] | None = None
        """A Kafka source's bootstrap servers and client settings (its lag while paused)."""
        self.paused_lag_due = 0.0
        self.stage_totals = StageTotals()
        self.rule_totals = RuleTotals()
        self.sampling: SourceSampling | None = None  # the running query's (schema discovery)
        self.router: Any = None  # a running bus's BusRouter (pipelines.bus)
        self.running_plain: dict[str, Any] | None = None  # the decrypted spec the query runs
        self.built_plain: dict[str, Any] | None = None  # ...as built: its start resolved
        self.layout: list[tuple[str, list[str]]] = []  # its rules, as the status lists them
        self.live: LiveRevision | None = None  # taken by the driver, applied by this thread
        self.lock = threading.Lock()
        self.committer: GroupCommitter | None = None
        self.secrets: list[str] = []
        self.prepared = False
        self.deployment: Deployment | None = None
        self.released = False
        self.done = threading.Event()
        self.wake = threading.Event()
        self.thread: threading.Thread | None = None
        # ``link``: its worker's host files, where its statuses go when the group places
        # (:mod:`runtime_adapter.host.link`); the store keeps its counts and samples.
        self.reporter = StatusReporter(store, connector_id, config.status_interval, link)
        self.start_position = QueryStart(store, connector_id)

    # -- driven by the driver's main thread --------------------------------------------------

    def start(self, deployment: Deployment) -> None:
        self.deployment = deployment
        self.thread = threading.Thread(
            target=self.run, name=f"connector-{self.connector_id}", daemon=True
        )
        self.thread.start()

    def update(self, deployment: Deployment | None) -> None:
        """The connector's latest desired state; wakes the thread when it changed."""
        if deployment != self.deployment:
            self.deployment = deployment
            self.wake.set()

    def take_revision(self, placement: Placement, deployment: Deployment | None) -> bool:
        """Take ``placement``, a new revision of the same generation, into the running query
        when only its rules changed (:func:`~pipelines.spec.live.live_revision`); False when it
        cannot (not a bus, no query running, another generation, anything but the rules
        changed): the driver then releases the connector and starts it again.

        Taken, it is this connector's placement from now on (so asking again is a no-op) and
        its thread applies it at once (:meth:`apply_live_revision`). Called by the driver's
        main thread.
        """
        why = self.not_live(placement, deployment)
        if why:
            log.info(
                "connector %s: revision %s restarts its query: %s",
                self.connector_id,
                placement.revision,
                why,
            )
            return False
        assert deployment is not None  # not_live says why when it is None
        with self.lock:
            running = self.running_plain
            if self.router is None or self.query is None or running is None:
                log.info("connector %s: no query running to take the revision", self.connector_id)
                return False
            try:
                plain, _ = decrypted_spec(deployment.spec)
            except ValueError:
                return False  # its secrets cannot be read here: its start says so
            bind_registry_team(plain, deployment.team)  # as plain_spec: compared with it
            if self.router.compiled:
                log.info(
                    "connector %s: revision %s restarts its query from its checkpoint: the "
                    "bus's rules are compiled into it (all its targets are Kafka)",
                    self.connector_id,
                    deployment.revision,
                )
                return False
            if not live_revision(running, plain):
                log.info(
                    "connector %s: revision %s changes more than its rules: restarting",
                    self.connector_id,
                    deployment.revision,
                )
                return False
            self.live = LiveRevision(deployment, plain)
            self.placement = placement
            self.deployment = deployment
        log.info(
            "connector %s: revision %s changes its rules only: the running query takes it",
            self.connector_id,
            deployment.revision,
        )
        self.wake.set()
        return True

    def not_live(self, placement: Placement, deployment: Deployment | None) -> str:
        """Why ``placement`` cannot be taken by the running query ("" when it may be)."""
        if deployment is None:
            return "no deployment"
        checks = (
            (self.released, "released"),
            (placement.generation != self.generation, "another generation (a restart)"),
            (deployment.generation != self.generation, "the deployment's generation differs"),
            (deployment.worker_id != self.worker_id, f"worker {deployment.worker_id!r}"),
            (deployment.revision != placement.revision, "placement and deployment differ"),
            (deployment.target_state != TargetState.RUNNING, "its target is not RUNNING"),
        )
        return next((why for failed, why in checks if failed), "")

    def release(self) -> None:
        """Stop the query and end the thread (the connector left this driver)."""
        self.released = True
        self.wake.set()

    # -- reporting ---------------------------------------------------------------------------

    def report(self, state: State, trace: str = "", progress: dict[str, Any] | None = None) -> bool:
        """Hand the connector's status to its reporter (written if new or due, as its owner).

        Returns False when the store names another worker or generation: it is not ours.
        A store that cannot be reached is no reason to stop (True).
        """
        self.state = state
        stages = self.stage_totals.stages()
        status = ConnectorStatus(
            connector_id=self.connector_id,
            state=state,
            worker_id=self.worker_id,
            generation=self.generation,
            trace=mask_secrets(trace, self.secrets),
            tasks=self.tracker.tasks(state, source_rate(stages)),
            progress=progress,
            executors=self.current_executors(),
            application_id=self.application_id,
            stages=stages,
            rules=self.rule_totals.rules(self.layout),
            revision=self.revision,
            driver_id=self.driver_id,
            reason=self.reason or self.quarantine(state),
            finished=self.finished,
        )
        return self.reporter.report(status)

    def quarantine(self, state: State) -> str:
        """Why it runs in a driver of its own, said while it runs (its worker's word)."""
        if self.placement is None or state == State.FAILED:
            return ""
        return self.placement.quarantine

    def current_executors(self) -> list[ExecutorInfo]:
        return self.executors() if self.executors is not None else []

    def owns(self, deployment: Deployment | None) -> bool:
        live = self.live
        revisions = {self.revision, live.deployment.revision if live else None}
        return (
            deployment is not None
            and not self.released
            and deployment.worker_id == self.worker_id
            and deployment.generation == self.generation
            and (self.revision is None or deployment.revision in revisions)
        )

    # -- the connector's thread --------------------------------------------------------------

    def run(self) -> None:
        deployment = self.deployment
        channel = deployment.channel if deployment else None
        with log_context(connector=self.connector_id, channel=channel):
            try:
                self.loop()
            except NotOwner:
                log.info("connector %s is no longer ours to run; stopping", self.connector_id)
            except Exception as exc:
                if self.released:
                    pass
                elif not self.jvm_alive():
                    # The driver's JVM died under the query (kill -9, out of memory): that is
                    # the cause, and the worker reports it with the JVM's log; a py4j error
                    # about a lost connection would only hide it.
                    log.error("connector %s lost its driver's JVM: %s", self.connector_id, exc)
                else:
                    detail = traceback.format_exc()
                    log.error("connector %s failed: %s", self.connector_id, exc)
                    self.report(State.FAILED, format_trace(summarize_failure(str(exc)), detail))
            finally:
                self.close()

    def jvm_ends(self, within: float) -> bool:
        """Whether the driver's JVM stops answering within ``within`` seconds."""
        deadline = time.monotonic() + within
        while self.jvm_alive():
            if time.monotonic() >= deadline:
                return False
            time.sleep(0.5)
        return True

    def jvm_alive(self) -> bool:
        """Whether the driver's JVM still answers (a py4j round trip)."""
        if self.base_spark is None:
            return True  # no JVM used yet: any failure is the connector's own
        try:
            self.base_spark.sparkContext._jvm.java.lang.System.currentTimeMillis()
        except Exception:
            return False
        return True

    def loop(self) -> None:
        if self.deployment is None or not self.owns(self.deployment):
            return
        self.revision = self.deployment.revision
        self.channel = self.deployment.channel
        while True:
            # The team's reach is in effect for all the connector does on this thread, and
            # for what Spark calls back from its own (pipelines.spec.reach.carried).
            with reach_of(self.deployment):
                done = self.turn()
            if done:
                return
            self.wake.wait(self.interval())
            self.wake.clear()

    def turn(self) -> bool:
        """One turn of :meth:`loop`; True when the connector's thread is to end."""
        self.apply_live_revision()
        deployment = self.deployment
        if not self.owns(deployment):
            if (
                self.released
                # The driver's thread may set self.deployment to None (update()) at any time.
                and deployment is not None
                and self.is_ours_to_stop(deployment)
            ):
                self.stop_query()
                self.report(State.STOPPED)
            return True
        assert deployment is not None  # owns() holds
        try:
            if self.step(deployment) is not None:
                return True
        except STORE_ERRORS as exc:
            # The store is away: what runs keeps running (a query not started yet waits
            # for its start position or offset change); the next turn tries again.
            self.reporter.outage.failed(exc)
        return False

    def apply_live_revision(self) -> None:
        """Apply the revision :meth:`take_revision` took, if any: the bus's router routes the
        next batches by its rules, and it is the revision this connector runs.

        Should the router refuse it (:class:`pipelines.spec.SpecError`: it cannot be applied
        to this query), the query stops and starts again from the new revision's spec, from
        its checkpoint: nothing read is lost, nothing is skipped.
        """
        # The query, its router and the spec it was built from change on this thread only:
        # the lock guards what the driver's thread reads (take_revision), not the swap.
        with self.lock:
            live, self.live = self.live, None
            if live is None:
                return
            self.revision = live.deployment.revision
            self.running_plain = live.plain
        if self.router is None or self.query is None or self.built_plain is None:
            return  # the query stopped meanwhile: its next start builds the new spec
        from pipelines.spec import SpecError, validate_spec

        built = {**self.built_plain, "rules": live.plain["rules"]}
        try:
            spec = validate_spec(built)
            self.router.replace(spec)
        except SpecError as exc:
            log.warning(
                "revision %s cannot be applied to the running query (%s): restarting it",
                self.revision,
                exc,
            )
            self.stop_query()  # the next step starts it on the new revision, from its checkpoint
            return
        self.built_plain = built
        self.layout = rule_layout(spec)
        log.info("revision %s applied: the rules changed, the query runs on", self.revision)

    def is_ours_to_stop(self, deployment: Deployment) -> bool:
        """Released because its target is STOPPED (not moved or restarted): report STOPPED."""
        return (
            deployment.target_state == TargetState.STOPPED
            and deployment.worker_id == self.worker_id
            and deployment.generation == self.generation
        )

    def interval(self) -> float:
        if self.query is not None:
            return RUN_INTERVAL if self.run_bounds is not None else ACTIVE_INTERVAL
        if self.start_position.waited:
            return TOPIC_WAIT_INTERVAL
        return IDLE_INTERVAL

    def read_paused_lag(self) -> None:
        """While paused no batch reports the source's end offsets: read them from the brokers
        (every :data:`PAUSED_LAG_SECONDS`), so the tasks' lag counts what was written since."""
        now = time.monotonic()
        if self.source_brokers is None or not self.tracker.partitions or now < self.paused_lag_due:
            return
        self.paused_lag_due = now + PAUSED_LAG_SECONDS
        servers, settings = self.source_brokers
        try:
            ends = partition_offsets(
                servers, self.tracker.partitions, "latest", settings=settings, timeout=5.0
            )
        except Exception as exc:  # the lag stays as it was; tried again later
            log.info("the end offsets of %s's source cannot be read: %s", self.connector_id, exc)
            return
        self.tracker.latest.update(cast("dict[tuple[str | None, int], int]", ends))

    def close(self) -> None:
        self.stop_sampling()
        try:
            self.stop_query()
        except Exception as exc:  # the thread ends either way
            log.info("stopping the query of %s failed: %s", self.connector_id, exc)
        if self.committer is not None:
            self.committer.close()
            self.committer = None
        self.done.set()

    def step(self, deployment: Deployment) -> int | None:
        """One turn of the loop; returns an exit code when the connector's run ends here."""
        target = deployment.target_state
        if target == TargetState.STOPPED:
            self.stop_query()
            self.report(State.STOPPED)
            return 0
        if not self.prepared:
            self.prepare(deployment)
        if target == TargetState.PAUSED:
            if self.query is not None:
                self.collect_progress()
                self.stop_query()
            self.reason = ""
            self.read_paused_lag()
            self.checked_report(State.PAUSED)
            return None
        if self.query is None and not self.start_query(deployment):
            return None  # waiting (for a source topic): reported, tried again later
        if not self.query.isActive:
            error = self.query.exception()
            if error is not None:
                detail = str(error)
                if fatal_to_the_jvm(detail) and self.jvm_ends(JVM_EXIT_WAIT):
                    # Spark fails the task, then exits the JVM: the worker reports the driver's
                    # end with its log, and names the connector whose task ended it (a shared
                    # driver's neighbours are placed again, not failed).
                    log.error("connector %s ended its driver's JVM: %s", self.connector_id, detail)
                    return 1
                self.report(State.FAILED, format_trace(summarize_failure(detail), detail))
                return 1
            progress = self.collect_progress()
            with self.lock:
                self.query = self.router = None
            if deployment.spec.get("runtime", {}).get("mode") == "available-now":
                self.finished = True
                self.reason = f"available-now run finished: {self.events_read()}"
                self.report(State.STOPPED, progress=progress)
                return 0
            # The query ended without error (a bounded source ran out): start it again later.
            return None
        progress = self.collect_progress()
        bounds = self.run_bounds
        if bounds is not None and bounds.reached(self.tracker.offsets):
            # A bounded run that has read its whole window: stopped here (the available-now
            # trigger would go on to read what was appended after the window, only to drop it).
            self.stop_query()
            self.finished = True
            self.reason = f"run finished at its end offsets: {self.events_read()}"
            self.report(State.STOPPED, progress=progress)
            return 0
        self.checked_report(State.RUNNING, progress=progress)
        return None

    def checked_report(self, state: State, progress: dict[str, Any] | None = None) -> None:
        if not self.report(state, progress=progress):
            raise NotOwner

    def events_read(self) -> str:
        """The events this run read, as a phrase (counted when stage counts are on)."""
        stages = self.stage_totals.stages()
        return f"{int(stages[0]['in'])} events read" if stages else "the source's end reached"

    # -- preparing and starting the query ----------------------------------------------------

    def prepare(self, deployment: Deployment) -> None:
        """Validate the spec and check the brokers before the query starts, to fail fast."""
        from pipelines.spec import validate_spec

        spec = validate_spec(self.plain_spec(deployment))
        source = spec.source
        if source.type == "kafka":
            self.watch_source("source", source.config, source.config.get("topics") or [])
        if source.type == "http" and source.config.get("ingest_topic"):
            # Events posted over HTTP wait in the channel's ingest topic: one task per partition.
            topics = [source.config["ingest_topic"]]
            self.watch_source("source (ingest topic)", source.config, topics)
        for path, sink in spec.sink_stages():
            if sink.type != "kafka":
                continue
            settings = security_settings(sink.config.get("security"))
            if settings is not None:
                try:
                    check_reachable(sink.config["bootstrap_servers"], settings=settings)
                except BrokerUnreachable as exc:
                    raise BrokerUnreachable(f"{path}: {exc}") from exc
        self.prepared = True

    def watch_source(self, label: str, config: dict[str, Any], topics: list[str]) -> None:
        """Check a Kafka source's brokers, learn its partitions, set up group commits."""
        settings = security_settings(config.get("security"))
        if settings is None:
            log.info("%s uses TLS: no broker check, no consumer-group commits", label)
            return
        servers = config["bootstrap_servers"]
        self.source_brokers = (servers, dict(settings))
        try:
            self.tracker.partitions = list_partitions(servers, topics, settings=settings)
        except BrokerUnreachable as exc:
            raise BrokerUnreachable(f"{label}: {exc}") from exc
        if self.committer is None and (self.deployment is None or self.deployment.run is None):
            # A bounded run (a replay, a redrive) never moves the channel's consumer group.
            self.committer = GroupCommitter(servers, consumer_group(self.channel), settings)

    def session(self) -> Any:
        """The connector's own SparkSession over the driver's SparkContext, hardened."""
        if self.spark is None:
            from pipelines.native import checkpoint_options
            from pipelines.sql_guard import harden_session

            if self.base_spark is None:
                from pyspark.sql import SparkSession

                self.base_spark = SparkSession.builder.getOrCreate()
            session = self.base_spark.newSession()
            harden_session(session)  # a new session starts from Spark's defaults: again
            # Spark's default, 10 ms, is 100 broker round trips a second for an idle Kafka
            # channel; a busy query never waits: the next batch starts when events are there.
            session.conf.set("spark.sql.streaming.pollingDelay", f"{self.config.idle_poll_ms}ms")
            session.conf.set("spark.sql.streaming.stopTimeout", str(STOP_TIMEOUT_MS))
            for key, value in {**SESSION_SQL_OPTIONS, **checkpoint_options(session)}.items():
                session.conf.set(key, value)
            self.spark = session
            self.application_id = session.sparkContext.applicationId
        return self.spark

    def start_query(self, deployment: Deployment) -> bool:
        """Start the query; False (with the reason reported) while a source topic is missing."""
        from pipelines.builder import build_stream
        from pipelines.spec import validate_spec
        from pipelines.stage_metrics import stage_points

        spark = self.session()
        checkpoint = checkpoint_dir(self.config.checkpoint_root, deployment.checkpoint_key)
        plain = self.prepare_checkpoint(
            self.plain_spec(deployment), checkpoint, deployment.offset_change
        )
        pinned = self.pinned_start(plain, checkpoint)
        if pinned is None:
            return False
        spec = validate_spec(pinned)
        run = run_bounds(deployment)
        router: Any = None
        if spec.is_bus:
            from pipelines.bus import build_bus_stream

            writer, router = build_bus_stream(
                spark,
                spec,
                channel=deployment.channel,
                checkpoint_dir=str(checkpoint),
                on_rule_counts=self.count_rules,
                on_dead_letters=self.count_dead_letters,
                on_retries=self.count_sink_retries,
                run=run,
                count_stages=self.config.stage_counts,
            )
        else:
            writer = build_stream(
                spark,
                spec,
                channel=deployment.channel,
                checkpoint_dir=str(checkpoint),
                preview_publisher=self.preview_publisher(spec),
                on_dead_letters=self.count_dead_letters,
                on_retries=self.count_sink_retries,
                count_stages=self.config.stage_counts,
                run=run,
            )
        # Jobs of this query run in a scheduler pool of its own (local to this thread).
        spark.sparkContext.setLocalProperty("spark.scheduler.pool", self.connector_id)
        query = writer.start()
        with self.lock:
            self.query, self.router = query, router
            self.running_plain = self.plain_spec(deployment)
            self.built_plain = pinned
            self.layout = rule_layout(spec)
            self.revision = deployment.revision
            self.run_bounds = run
        self.reason = ""
        self.finished = False
        self.stop_sampling()  # (a query started again: a new sampler for its spec)
        self.sampling = self.source_sampling(deployment, spec)
        self.stage_totals.start(stage_points(spec), str(self.query.runId))
        log.info("query %s started (checkpoint %s)", self.query.id, checkpoint)
        return True

    def pinned_start(self, spec: dict[str, Any], checkpoint: Path) -> dict[str, Any] | None:
        """The spec to start from (:meth:`QueryStart.pinned`); ``None``, with the reason
        reported, while a source topic does not exist yet."""
        if self.deployment is not None and self.deployment.run is not None:
            return spec  # a bounded run reads its own offsets (pipelines.runs)
        pinned = self.start_position.pinned(spec, checkpoint)
        if pinned.missing:
            names = ", ".join(repr(topic) for topic in pinned.missing)
            self.reason = (
                f"waiting for source topic {names} to be created on {pinned.servers} (looked "
                f"every {TOPIC_WAIT_INTERVAL:g} s); it will be read from its first event"
            )
            self.checked_report(State.UNASSIGNED)
            return None
        if pinned.partitions is not None:
            self.tracker.partitions = pinned.partitions
        return pinned.spec

    def plain_spec(self, deployment: Deployment) -> dict[str, Any]:
        """The deployment's spec, decrypted just before use; its secrets are masked from
        now on in this process's log lines (a filter on the root handlers) and traces."""
        from pipelines.spec.secrets import install_masking_filter

        plain, secrets = decrypted_spec(deployment.spec)
        # its subjects are its team's: read in the team's registry (schema_registry.team)
        bind_registry_team(plain, deployment.team)
        if secrets != self.secrets:
            self.secrets = secrets
            install_masking_filter(secrets)
        return plain

    def prepare_checkpoint(
        self, spec: dict[str, Any], checkpoint: Path, pending: str | None = None
    ) -> dict[str, Any]:
        """Make ``checkpoint`` ready and apply the console's pending offset change
        (:meth:`QueryStart.prepare_checkpoint`); return the spec to build."""
        return self.start_position.prepare_checkpoint(
            spec, checkpoint, self.empty_batches(spec), self.committer, pending
        )

    def apply_offset_change(
        self, spec: dict[str, Any], checkpoint: Path, pending: str | None = None
    ) -> dict[str, Any]:
        """Apply the console's pending offset change (:meth:`QueryStart.apply_offset_change`)."""
        return self.start_position.apply_offset_change(
            spec, checkpoint, self.empty_batches(spec), self.committer, pending
        )

    def empty_batches(self, spec: dict[str, Any]) -> Callable[[range], None]:
        """Records batches that read nothing in the query's checkpoint (an offset change)."""

        def record(batch_ids: range) -> None:
            from pipelines.builder import record_empty_batches

            record_empty_batches(self.session(), spec, batch_ids)

        return record

    def count_rules(self, batch_id: int, counts: list[dict[str, Any]]) -> None:
        """Called from a bus's ``foreachBatch`` with one micro-batch's per-rule counts."""
        self.rule_totals.fold(batch_id, counts)

    def count_dead_letters(self, count: int) -> None:
        """Called from ``foreachBatch`` after a micro-batch routed ``count`` dead letters."""
        self.reporter.count("dead_letters", count)

    def count_sink_retries(self, count: int) -> None:
        """Called from ``foreachBatch`` when a sink write is retried (:mod:`pipelines.retry`)."""
        self.reporter.count("sink_retries", count)

    @staticmethod
    def discovers(deployment: Deployment) -> bool:
        """Whether the query samples its events for schema discovery: asked for, and not
        a bounded run nor Spark's real-time mode (its tasks hold the cores a sampling job
        would wait for)."""
        mode = deployment.spec.get("runtime", {}).get("mode")
        return deployment.discovery and deployment.run is None and mode != "real-time"

    def source_sampling(self, deployment: Deployment, spec: Any) -> SourceSampling | None:
        """The samples of the query's source when discovery is on (taken beside the query,
        :mod:`runtime_adapter.host.sampling`), else None."""
        if not self.discovers(deployment):
            return None
        from pipelines.discovery import SourceSampler

        return SourceSampling(self.store, self.connector_id, SourceSampler(spec))

    def sample_source(self, progress: dict[str, Any] | None) -> None:
        """Every few seconds, a few events of the query's source read beside it, never on
        this loop, and handed to the console (:mod:`runtime_adapter.host.sampling`)."""
        if self.sampling is not None and self.spark is not None:
            self.sampling.offer(self.spark, progress, self.channel)

    def stop_sampling(self) -> None:
        """Cancel the query's samples (:meth:`SourceSampling.cancel`)."""
        sampling, self.sampling = self.sampling, None
        if sampling is not None and self.spark is not None:
            sampling.cancel(self.spark)

    def preview_publisher(self, spec: Any) -> Any:
        """Where a ``preview`` sink puts the newest events: the runtime's store (a live tail)."""
        if spec.sink is None or spec.sink.type != "preview":
            return None
        keep = int(spec.sink.config.get("max_events", 100))

        def publish(events: list[dict[str, Any]]) -> None:
            try:
                self.store.publish_preview(self.connector_id, events, keep)
            except STORE_ERRORS as exc:  # a live tail; its batch is written all the same
                log.warning("could not publish the preview's newest events: %s", exc)

        return publish

    # -- the running query -------------------------------------------------------------------

    def stop_query(self) -> None:
        with self.lock:
            query, self.query = self.query, None  # forgotten even if stopping it fails
            self.router = None
        if query is not None and query.isActive:
            query.stop()
        if query is not None:
            self.count_last_batches(query)

    def count_last_batches(self, query: Any) -> None:
        """Fold in the batches the query ran since the last poll (up to half a second of
        them), so that a stopped channel's counts and offsets are its last ones."""
        try:
            for progress in progress_after(query, self.stage_totals.batch_id):
                self.stage_totals.fold(progress)
                self.tracker.update(progress)
        except Exception as exc:  # counting never stands in the way of a stop
            log.info("the last batches of %s were not counted: %s", self.connector_id, exc)

    def collect_progress(self) -> dict[str, Any] | None:
        progress = progress_dict(self.query.lastProgress) if self.query is not None else None
        self.sample_source(progress)
        if progress:
            self.count_stages(progress)
            self.count_compiled_rules()
        if progress and self.tracker.update(progress) and self.committer is not None:
            try:
                # A committer is set up for a Kafka source only, whose offsets all name a topic.
                self.committer.commit(cast("dict[tuple[str, int], int]", self.tracker.offsets))
            except Exception as exc:  # lag display must never take a channel down
                log.warning("could not commit offsets to the consumer group: %s", exc)
        return progress

    def count_compiled_rules(self) -> None:
        """Fold in the per-rule counts of a compiled bus's batches since the last one counted:
        its query has no ``foreachBatch`` to hand them over, each batch's progress report holds
        them (:meth:`pipelines.bus.BusRouter.progress_counts`)."""
        router, query = self.router, self.query
        if router is None or query is None or not router.compiled:
            return
        for report in progress_after(query, self.rule_totals.batch_id):
            counts = router.progress_counts(report)
            if counts is not None:
                self.rule_totals.fold(int(report.get("batchId", -1)), counts)

    def count_stages(self, progress: dict[str, Any]) -> None:
        """Fold the latest batch's per-stage counts in; batches run between two polls are
        taken from the query's recent progress reports (Spark keeps the last 100), only those
        (:func:`~runtime_adapter.host.progress.progress_after`)."""
        if self.stage_totals.missed(progress):
            for earlier in progress_after(self.query, self.stage_totals.batch_id):
                self.stage_totals.fold(earlier)
        self.stage_totals.fold(progress)


def reach_of(deployment: Deployment | None) -> AbstractContextManager[Any]:
    """The team's reach (``deployment.policy["reach"]``, :mod:`pipelines.spec.reach`) in
    effect: what the spec names is checked against it again here, so a spec saved before the
    policy tightened, or written into the config topic by hand, fails in the driver; the
    network guards use the team's lists when they connect. Without a deployment: nothing.

    A reach that does not validate raises ``ValueError`` (the connector fails with it).
    """
    if deployment is None:
        return nullcontext()
    team = deployment.team or "(none)"
    try:
        reach = parse_reach((deployment.policy or {}).get("reach"))
    except InvalidReach as error:
        raise ValueError(f"team {team}'s reach (its policy) is invalid: {error}") from None
    return in_effect(team, reach)


def run_bounds(deployment: Deployment) -> Any:
    """The deployment's :class:`pipelines.runs.RunBounds` when it is a bounded run."""
    if deployment.run is None:
        return None
    from pipelines.spec.runs import RunBounds

    return RunBounds.from_json(deployment.run)
