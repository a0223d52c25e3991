"""The driver entry point: one connector = one Spark driver running one streaming query.

A runtime worker starts it with ``spark-submit runtime_adapter/driver.py
--connector-id ID --worker-id W --generation N``. The driver reads its
deployment from Redis, applies any offset change the console left for it
(:mod:`runtime_adapter.offsets`), builds the query with :mod:`pipelines`, and then loops:
it obeys the target state (RUNNING / PAUSED / STOPPED), reports heartbeat,
progress and tasks, commits processed offsets to the channel's consumer group,
and reports a failure with its trace before exiting non-zero.

It exits by itself as soon as it no longer owns the connector (reassigned,
restarted with a newer generation, redeployed with another revision, deleted) or
its parent process dies, so a connector never runs twice.
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import re
import signal
import sys
import time
import traceback
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from runtime_adapter.base import ConnectorStatus, Deployment, TaskStatus
from runtime_adapter.checkpoint import checkpoint_dir
from runtime_adapter.config import RuntimeConfig
from runtime_adapter.executors import ExecutorWatch
from runtime_adapter.kafka import (
    BrokerUnreachable,
    GroupCommitter,
    PartitionInfo,
    check_reachable,
    consumer_group,
    list_partitions,
    security_settings,
)
from runtime_adapter.logs import configure_logging, set_process_context
from runtime_adapter.offsets import apply_change
from runtime_adapter.states import State, TargetState
from runtime_adapter.store import RedisStore

log = logging.getLogger("sluice.driver")

TRACE_LIMIT = 20_000
POLL_INTERVAL = 0.5

# The most useful line of a Spark failure: a user-raised error or the innermost cause.
_SUMMARY_PATTERNS = (
    re.compile(r"\[USER_RAISED_EXCEPTION\]\s*(?P<msg>.+?)(?:\s+SQLSTATE: \w+)?$", re.M),
    re.compile(r"^Caused by: (?P<msg>.+)$", re.M),
)


def decrypted_spec(spec: dict[str, Any]) -> tuple[dict[str, Any], list[str]]:
    """A deployment's spec with its secrets decrypted, and their values (for masking).

    Secrets travel encrypted (through Redis, as the console stores them); the key comes
    from this process's environment (``SLUICE_SECRETS_KEY``, as the console's). Raises
    ``ValueError`` with a clear message when a secret cannot be decrypted.
    """
    from pipelines.spec.secrets import decrypt_secrets, secret_box_from_env, secret_values

    plain = decrypt_secrets(spec, secret_box_from_env().decrypt)
    return plain, secret_values(plain)


def mask_secrets(text: str, secrets: list[str]) -> str:
    """``text`` with the known secret values replaced by ``***``."""
    if not text or not secrets:
        return text
    from pipelines.spec.secrets import mask_known_secrets

    return mask_known_secrets(text, secrets)


def summarize_failure(text: str) -> str:
    """The one line an operator needs first, taken from a long Spark/Java trace."""
    for pattern in _SUMMARY_PATTERNS:
        found = list(pattern.finditer(text))
        if found:
            return found[-1].group("msg").strip()
    first = text.strip().splitlines()
    return first[0] if first else "unknown failure"


def format_trace(summary: str, detail: str) -> str:
    """A readable first line, then the full detail, bounded in size."""
    text = f"{summary}\n\n{detail.strip()}" if detail.strip() != summary else summary
    if len(text) > TRACE_LIMIT:
        text = text[:TRACE_LIMIT] + "\n… (trace truncated)"
    return text


def _progress_dict(progress: Any) -> dict[str, Any] | None:
    """A query progress report as plain JSON data.

    PySpark 4 returns ``StreamingQueryProgress``, a dict subclass that cannot be
    rebuilt from its items (``dataclasses.asdict`` would try), so go through JSON.
    """
    if progress is None:
        return None
    if hasattr(progress, "json"):
        return json.loads(progress.json)
    return json.loads(json.dumps(progress, default=str))


def _as_offsets(raw: Any) -> dict[tuple[str | None, int], int]:
    """A source's offsets from a progress report, keyed by (topic, partition).

    Spark's Kafka source reports ``{"topic": {"0": 12}}``: one entry per partition. Other
    sources run as a single task: the rate source reports a number, the file source
    ``{"logOffset": n}``; they become one entry ``(None, 0)``.
    """
    if isinstance(raw, str):
        raw = json.loads(raw) if raw else {}
    if isinstance(raw, dict) and raw and all(isinstance(v, dict) for v in raw.values()):
        return {
            (topic, int(partition)): int(offset)
            for topic, partitions in raw.items()
            for partition, offset in partitions.items()
        }
    if isinstance(raw, dict) and isinstance(raw.get("logOffset"), int):
        return {(None, 0): raw["logOffset"]}
    if isinstance(raw, int):
        return {(None, 0): raw}
    return {}


@dataclass
class TaskTracker:
    """Turns successive query progress reports into per-partition tasks."""

    worker_id: str
    partitions: list[PartitionInfo]
    offsets: dict[tuple[str | None, int], int] = field(default_factory=dict)
    latest: dict[tuple[str | None, int], int] = field(default_factory=dict)
    rates: dict[tuple[str | None, int], float] = field(default_factory=dict)
    _last_seen: float = 0.0
    batch_id: int = -1

    def update(self, progress: dict[str, Any]) -> bool:
        """Fold in a progress report; True when it is a batch not seen before."""
        if progress.get("batchId", -1) == self.batch_id:
            return False
        self.batch_id = progress.get("batchId", -1)
        now = time.time()
        for source in progress.get("sources", []):
            end = _as_offsets(source.get("endOffset"))
            if self._last_seen:
                elapsed = max(now - self._last_seen, 1e-3)
                for key, offset in end.items():
                    self.rates[key] = max(offset - self.offsets.get(key, offset), 0) / elapsed
            self.offsets.update(end)
            self.latest.update(_as_offsets(source.get("latestOffset")))
        self._last_seen = now
        return True

    def tasks(self, state: State) -> list[TaskStatus]:
        keys = {(p.topic, p.partition) for p in self.partitions} | set(self.offsets)
        tasks = []
        for task_id, key in enumerate(sorted(keys, key=lambda k: (k[0] or "", k[1]))):
            offset = self.offsets.get(key)
            end = self.latest.get(key)
            tasks.append(
                TaskStatus(
                    task_id=task_id,
                    state=state,
                    worker_id=self.worker_id,
                    topic=key[0],
                    partition=key[1],
                    offset=offset,
                    end_offset=end,
                    lag=(end - offset) if end is not None and offset is not None else None,
                    rows_per_second=round(self.rates.get(key, 0.0), 2),
                )
            )
        return tasks


@dataclass
class StageTotals:
    """Per-stage event counts summed over the micro-batches this driver ran.

    Each batch reports its counts in its progress (``observedMetrics``, see
    :func:`pipelines.builder.stage_counts`); they are added up once per batch (by batch id,
    per run of the query) and kept with the rates of the latest batch. They live as long as
    the driver: a restarted driver counts from 0 again, like the tasks' rows/s.
    """

    points: list[Any] = field(default_factory=list)
    totals: list[dict[str, Any]] = field(default_factory=list)
    run_id: str | None = None
    batch_id: int = -1

    def start(self, points: list[Any], run_id: str | None) -> None:
        """A (re)started query: the same stages keep their totals, new ones start from 0."""
        if [(p.stage, p.index, p.type) for p in points] != [
            (p.stage, p.index, p.type) for p in self.points
        ]:
            self.points, self.totals = list(points), []
        self.run_id, self.batch_id = run_id, -1

    def missed(self, progress: dict[str, Any]) -> bool:
        """Whether batches ran between the last one folded in and this report."""
        return self.batch_id >= 0 and progress.get("batchId", -1) > self.batch_id + 1

    def fold(self, progress: dict[str, Any]) -> bool:
        """Add one progress report's counts; True when it was a batch not counted before."""
        from pipelines.builder import stage_counts

        batch_id = progress.get("batchId", -1)
        if not progress.get("numInputRows"):
            # An idle trigger (nothing flows now; its batch id may be the next batch's):
            # rates drop to 0 and nothing is folded in.
            for total in self.totals:
                total["in_per_second"] = total["out_per_second"] = 0.0
            return False
        counts = stage_counts(
            self.points,
            progress.get("observedMetrics") or {},
            rows_read=progress.get("numInputRows"),
            rows_written=(progress.get("sink") or {}).get("numOutputRows"),
        )
        if counts is None or batch_id <= self.batch_id:
            return False
        self.batch_id = batch_id
        per_second = _batch_rate(progress) / max(counts[0]["in"], 1)
        if not self.totals:
            self.totals = [{**count, "in": 0, "out": 0, "failed": 0} for count in counts]
        for total, count in zip(self.totals, counts, strict=True):
            for key in ("in", "out", "failed"):
                total[key] += count[key]
            total["in_per_second"] = round(count["in"] * per_second, 2)
            total["out_per_second"] = round(count["out"] * per_second, 2)
        return True

    def stages(self) -> list[dict[str, Any]]:
        return [dict(total) for total in self.totals]


def stage_counts_enabled() -> bool:
    """Whether queries count events per stage (``SLUICE_STAGE_COUNTS``, default on).

    The counts cost throughput (see ``python -m bench.stage_counts``); off, a channel's
    status has no ``stages``."""
    value = os.environ.get("SLUICE_STAGE_COUNTS", "true").strip().lower()
    return value not in ("0", "false", "no", "off")


def _batch_rate(progress: dict[str, Any]) -> float:
    """Records read per second in a batch's progress: Spark's input rate (over the time since
    the previous batch started), else its processing rate; 0 when neither is known."""
    for key in ("inputRowsPerSecond", "processedRowsPerSecond"):
        rate = progress.get(key)
        if isinstance(rate, int | float) and rate > 0 and rate != float("inf"):
            return float(rate)
    return 0.0


class Driver:
    """Runs one connector's query and keeps its status in Redis current."""

    def __init__(self, store: RedisStore, config: RuntimeConfig, args: argparse.Namespace):
        self.store = store
        self.config = config
        self.connector_id: str = args.connector_id
        self.worker_id: str = args.worker_id
        self.generation: int = args.generation
        self.revision: int | None = None
        self.channel: str = ""
        self.parent_pid = os.getppid()
        self.query: Any = None
        self.spark: Any = None
        self.state = State.UNASSIGNED
        self.tracker = TaskTracker(args.worker_id, [])
        self.committer: GroupCommitter | None = None
        self.stopping = False
        self.executor_watch = ExecutorWatch()
        self.application_id: str | None = None
        self.stage_totals = StageTotals()
        # The plaintext values of the deployment's secrets: masked in traces and log lines.
        self.secrets: list[str] = []

    # -- reporting --------------------------------------------------------------------------

    def report(self, state: State, trace: str = "", progress: dict | None = None) -> bool:
        self.state = state
        trace = mask_secrets(trace, self.secrets)
        return self.store.report(
            ConnectorStatus(
                connector_id=self.connector_id,
                state=state,
                worker_id=self.worker_id,
                generation=self.generation,
                trace=trace,
                tasks=self.tracker.tasks(state),
                progress=progress,
                executors=self.executor_watch.current(self.spark_context()),
                application_id=self.application_id,
                stages=self.stage_totals.stages(),
            )
        )

    def spark_context(self) -> Any:
        return self.spark.sparkContext if self.spark is not None else None

    def owns(self, deployment: Deployment | None) -> bool:
        return (
            deployment is not None
            and deployment.worker_id == self.worker_id
            and deployment.generation == self.generation
            and deployment.revision == (self.revision or deployment.revision)
            and os.getppid() == self.parent_pid
            and not self.stopping
        )

    # -- lifecycle --------------------------------------------------------------------------

    def prepare(self, deployment: Deployment) -> None:
        """Validate the spec and check the brokers before Spark is started, to fail fast."""
        from pipelines.spec import validate_spec

        spec = validate_spec(self.plain_spec(deployment))
        source, sink = spec.source, spec.sink
        if source.type == "kafka":
            self.watch_source("source", source.config, source.config.get("topics") or [])
        if source.type == "http" and source.config.get("ingest_topic"):
            # Events posted over HTTP wait in the channel's ingest topic: one task per partition.
            topics = [source.config["ingest_topic"]]
            self.watch_source("source (ingest topic)", source.config, topics)
        if sink.type == "kafka":
            settings = security_settings(sink.config.get("security"))
            if settings is not None:
                try:
                    check_reachable(sink.config["bootstrap_servers"], settings=settings)
                except BrokerUnreachable as exc:
                    raise BrokerUnreachable(f"sink: {exc}") from exc

    def watch_source(self, label: str, config: dict, topics: list[str]) -> None:
        """Check a Kafka source's brokers, learn its partitions, set up group commits."""
        settings = security_settings(config.get("security"))
        if settings is None:
            log.info("%s uses TLS: no broker check, no consumer-group commits", label)
            return
        servers = config["bootstrap_servers"]
        try:
            self.tracker.partitions = list_partitions(servers, topics, settings=settings)
        except BrokerUnreachable as exc:
            raise BrokerUnreachable(f"{label}: {exc}") from exc
        self.committer = GroupCommitter(servers, consumer_group(self.channel), settings)

    def start_query(self, deployment: Deployment) -> None:
        from pipelines.builder import build_stream, stage_points
        from pipelines.spec import validate_spec

        if self.spark is None:
            from pyspark.sql import SparkSession

            from pipelines.sql_guard import harden_session

            self.spark = SparkSession.builder.appName(f"sluice-{deployment.channel}").getOrCreate()
            harden_session(self.spark)  # before any query: no reflection, files or ${...} in SQL
            self.spark.sparkContext.setLogLevel(os.environ.get("SLUICE_SPARK_LOG_LEVEL", "WARN"))
            self.application_id = self.spark.sparkContext.applicationId
        checkpoint = checkpoint_dir(self.config.checkpoint_root, deployment.checkpoint_key)
        checkpoint.mkdir(parents=True, exist_ok=True)
        spec = validate_spec(self.apply_offset_change(self.plain_spec(deployment), checkpoint))
        writer = build_stream(
            self.spark,
            spec,
            channel=deployment.channel,
            checkpoint_dir=str(checkpoint),
            preview_publisher=self.preview_publisher(spec),
            on_dead_letters=self.count_dead_letters,
            count_stages=stage_counts_enabled(),
        )
        self.query = writer.start()
        self.stage_totals.start(stage_points(spec), str(self.query.runId))
        log.info("query %s started (checkpoint %s)", self.query.id, checkpoint)

    def plain_spec(self, deployment: Deployment) -> dict[str, Any]:
        """The deployment's spec, decrypted just before use; its secrets are masked from
        now on in this process's log lines (a filter on the root handlers) and traces."""
        from pipelines.spec.secrets import install_masking_filter

        plain, secrets = decrypted_spec(deployment.spec)
        if secrets != self.secrets:
            self.secrets = secrets
            install_masking_filter(secrets)
        return plain

    def apply_offset_change(self, spec: dict[str, Any], checkpoint: Path) -> dict[str, Any]:
        """Apply the offset change the console left for this connector (KIP-875's alter or
        reset while it was stopped) before the query starts; return the spec to build.

        The new position is committed to the channel's consumer group at once, so Kafka
        tools show it even before a batch runs. The change is removed only after the
        checkpoint holds it: a crash in between applies it again, to the same effect.
        """
        pending = self.store.offset_change(self.connector_id)
        if pending is None:
            return spec
        change, raw = pending
        from pipelines.builder import record_empty_batches

        def empty_batches(batch_ids: range) -> None:
            record_empty_batches(self.spark, spec, batch_ids)

        applied = apply_change(change, spec, checkpoint, empty_batches)
        log.info(
            "applied offset change %s: batch %s, position %s",
            change.kind,
            applied.batch_id,
            applied.position,
        )
        if self.committer is not None and applied.position:
            try:
                self.committer.commit(applied.position)
            except Exception as exc:  # lag display must never take a channel down
                log.warning("could not commit the new offsets to the consumer group: %s", exc)
        self.store.clear_offset_change(self.connector_id, raw)
        return applied.spec

    def count_dead_letters(self, count: int) -> None:
        """Called from ``foreachBatch`` after a micro-batch routed ``count`` dead letters."""
        self.store.add_dead_letters(self.connector_id, count)

    def preview_publisher(self, spec: Any) -> Any:
        """Where a ``preview`` sink puts the newest events: the runtime's store (a live tail)."""
        if spec.sink.type != "preview":
            return None
        keep = int(spec.sink.config.get("max_events", 100))

        def publish(events: list[dict]) -> None:
            self.store.publish_preview(self.connector_id, events, keep)

        return publish

    def stop_query(self) -> None:
        query, self.query = self.query, None  # forgotten even if stopping it fails
        if query is not None and query.isActive:
            query.stop()

    def collect_progress(self) -> dict | None:
        progress = _progress_dict(self.query.lastProgress) if self.query is not None else None
        if progress:
            self.count_stages(progress)
        if progress and self.tracker.update(progress) and self.committer is not None:
            try:
                self.committer.commit(self.tracker.offsets)
            except Exception as exc:  # lag display must never take a channel down
                log.warning("could not commit offsets to the consumer group: %s", exc)
        return progress

    def count_stages(self, progress: dict[str, Any]) -> None:
        """Fold the latest batch's per-stage counts in; batches run between two polls are
        taken from the query's recent progress reports (Spark keeps the last 100)."""
        if self.stage_totals.missed(progress):
            for earlier in self.query.recentProgress:
                if earlier.batchId > self.stage_totals.batch_id:
                    self.stage_totals.fold(_progress_dict(earlier) or {})
        self.stage_totals.fold(progress)

    def step(self, deployment: Deployment) -> int | None:
        """One turn of the loop; returns an exit code when the driver should end."""
        target = deployment.target_state
        if target == TargetState.STOPPED:
            self.stop_query()
            self.report(State.STOPPED)
            return 0
        if target == TargetState.PAUSED:
            if self.query is not None:
                self.collect_progress()
                self.stop_query()
            if self.state != State.PAUSED:
                self.report(State.PAUSED)
            return None
        if self.query is None:
            self.start_query(deployment)
        if not self.query.isActive:
            error = self.query.exception()
            if error is not None:
                detail = str(error)
                self.report(State.FAILED, format_trace(summarize_failure(detail), detail))
                return 1
            # The query ended without error (a bounded source ran out): start it again later.
            self.query = None
            return None
        self.report(State.RUNNING, progress=self.collect_progress())
        return None

    def run(self) -> int:
        deployment = self.store.deployment(self.connector_id)
        if not self.owns(deployment):
            log.info("connector %s is not ours to run; exiting", self.connector_id)
            return 0
        self.revision = deployment.revision
        self.channel = deployment.channel
        set_process_context(channel=self.channel)
        try:
            self.prepare(deployment)
            while True:
                deployment = self.store.deployment(self.connector_id)
                if not self.owns(deployment):
                    log.info("no longer the owner of %s; stopping", self.connector_id)
                    self.stop_query()
                    return 0
                code = self.step(deployment)
                if code is not None:
                    return code
                time.sleep(POLL_INTERVAL)
        except Exception as exc:
            if self.stopping:
                # SIGTERM reaches the JVM too (one process group): its shutdown hook may stop
                # Spark under the query. A stop that was asked for is not a failure.
                log.info("connector %s stopped on SIGTERM: %s", self.connector_id, exc)
                return 0
            detail = traceback.format_exc()
            self.report(State.FAILED, format_trace(summarize_failure(str(exc)), detail))
            log.error("connector %s failed: %s", self.connector_id, exc)
            return 1
        finally:
            self.stop_query()
            if self.committer is not None:
                self.committer.close()


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description="Run one Sluice connector's streaming query.")
    parser.add_argument("--connector-id", required=True)
    parser.add_argument("--worker-id", required=True)
    parser.add_argument("--generation", type=int, required=True)
    return parser.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    configure_logging("driver")
    args = parse_args(argv)
    # One connector for the driver's whole life, in every thread (Spark calls back from others).
    set_process_context(connector=args.connector_id, worker=args.worker_id)
    config = RuntimeConfig.from_env()
    driver = Driver(RedisStore.from_url(config.redis_url, config.key_prefix), config, args)

    def _graceful(signum: int, _frame: Any) -> None:
        driver.stopping = True

    signal.signal(signal.SIGTERM, _graceful)
    return driver.run()


if __name__ == "__main__":
    sys.exit(main())
