"""A bus's query (:func:`build_bus_stream`) and its ``foreachBatch`` function
(:class:`BusRouter`), whose rules can be swapped between batches (:meth:`BusRouter.replace`).
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql.streaming.readwriter import DataStreamWriter

from pipelines.bus.batch import BatchRun
from pipelines.bus.counts import (
    COUNTS,
    RULE_METRICS,
    Delivery,
    OnRuleCounts,
    RuleCounts,
    histogram_bins,
    rule_counts,
)
from pipelines.bus.kafka import compiled_kafka_writer, use_kafka_v2_writes
from pipelines.bus.plan import BusPlan, compile_bus
from pipelines.errors import capturing_failed_events
from pipelines.query import RetryCounter, build_events, query_name, with_trigger
from pipelines.sinks.files import write_files_batch
from pipelines.spec import ChannelSpec, SpecError, validate_spec
from pipelines.spec.configs.files import FilesSinkConfig
from pipelines.spec.live import compiled_into_query, live_change, without_rules
from pipelines.spec.paths import recheck_files_location
from pipelines.spec.reach import carried
from pipelines.spec.runs import RunBounds
from pipelines.stage_metrics import observe_stages, stage_points


def build_bus_stream(
    spark: SparkSession,
    spec: ChannelSpec,
    *,
    channel: str,
    checkpoint_dir: str,
    on_rule_counts: OnRuleCounts | None = None,
    on_dead_letters: Callable[[int], None] | None = None,
    on_retries: RetryCounter | None = None,
    run: RunBounds | None = None,
    count_stages: bool = True,
) -> tuple[DataStreamWriter, BusRouter]:
    """The writer of a bus's query (the caller calls ``start()``) and its router (``run``:
    a bounded run's, see :func:`pipelines.query.build_events`).

    With ``count_stages`` its source and shared transforms are counted as a linear
    channel's stages are (:func:`pipelines.stage_metrics.observe_stages`, read from each batch's
    progress by :func:`pipelines.stage_metrics.stage_counts`); its rules are counted per
    rule.

    The writer reads the source and runs the shared transforms once, then hands each
    micro-batch to the :class:`BusRouter` (``foreachBatch``); it has the checkpoint location,
    the query name ``sluice-{channel}`` and the trigger of the spec's execution mode, as
    :func:`pipelines.builder.build_stream` gives a linear channel.

    A bus whose rules all go to Kafka (:func:`pipelines.spec.live.compiled_into_query`) is instead
    compiled into the streaming query itself (:func:`pipelines.bus.kafka.compiled_kafka_writer`): no
    ``foreachBatch``, no Python per batch. Its per-rule counts are then in each batch's progress
    report, read by :meth:`BusRouter.progress_counts` (``on_rule_counts`` is not called; given, it
    asks for the counts to be observed), and its rules change by a restart of the query from its
    checkpoint (:meth:`BusRouter.replace` refuses them).
    """
    spec = validate_spec(spec)
    if not spec.is_bus:
        raise ValueError("not a bus: a linear channel is built by pipelines.builder.build_stream")
    tolerant = spec.errors.tolerance == "all"
    with capturing_failed_events(tolerant):
        events = build_events(
            spark, spec, keep_payload=tolerant, run=run, count_stages=count_stages
        )
        if count_stages:  # what reaches the rules, and what each shared stage failed
            events = observe_stages(events, stage_points(spec))
    router = BusRouter(
        spark,
        spec,
        channel=channel,
        on_rule_counts=on_rule_counts,
        on_dead_letters=on_dead_letters,
        on_retries=on_retries,
    )
    if router.compiled:
        writer = compiled_kafka_writer(events, router.plan, counting=on_rule_counts is not None)
    else:
        writer = events.writeStream.foreachBatch(carried(router)).outputMode("append")
    writer = with_trigger(writer, spec.runtime)
    return writer.option("checkpointLocation", checkpoint_dir).queryName(
        query_name(channel)
    ), router


class BusRouter:
    """The ``foreachBatch`` function of a bus's query: routes each micro-batch to the rules'
    targets (see the module docstring). :meth:`replace` swaps the rules between batches."""

    def __init__(
        self,
        spark: SparkSession,
        spec: ChannelSpec,
        *,
        channel: str,
        on_rule_counts: OnRuleCounts | None = None,
        on_dead_letters: Callable[[int], None] | None = None,
        on_retries: RetryCounter | None = None,
    ) -> None:
        self.spark = spark
        self.channel = channel
        self.on_rule_counts = on_rule_counts
        self.on_dead_letters = on_dead_letters
        self.on_retries = on_retries
        self._lock = threading.Lock()
        self._plan = compile_bus(spark, spec)
        self._logged: set[tuple[str, str]] = set()  # files targets whose log has no gap
        self.compiled = compiled_into_query(self._plan.spec)
        """Whether the query was built by :func:`pipelines.bus.kafka.compiled_kafka_writer`
        (its rules are part of the streaming plan: they change by a restart) rather than with
        this router as its ``foreachBatch`` function."""

    @property
    def spec(self) -> ChannelSpec:
        with self._lock:
            return self._plan.spec

    @property
    def plan(self) -> BusPlan:
        with self._lock:
            return self._plan

    def progress_counts(self, progress: Mapping[str, Any]) -> RuleCounts | None:
        """The per-rule counts (as :meth:`pipelines.bus.batch.BatchRun.rule_counts` gives
        them) of the batch of a progress report of a compiled bus's query (its observed
        :data:`pipelines.bus.counts.RULE_METRICS`); None when the report has none (an idle
        trigger, or counts not asked for)."""
        observed = (progress.get("observedMetrics") or {}).get(RULE_METRICS)
        if observed is None:
            return None
        plan = self.plan
        delivered = {target.index: Delivery() for target in plan.targets}
        for index, rows in histogram_bins(observed[COUNTS]).items():
            if index in delivered:
                delivered[index].rows = rows
        return rule_counts(plan, delivered, {rule.index: 0 for rule in plan.rules})

    def replace(self, spec: ChannelSpec) -> None:
        """Use ``spec``'s rules from the next batch on (the batch running finishes with the
        old ones). Raises :class:`~pipelines.spec.SpecError` when the spec is invalid or
        differs from the running one in more than its rules (see
        :func:`pipelines.spec.live.live_change`)."""
        spec = validate_spec(spec)
        current = self.spec
        if self.compiled:
            raise SpecError(
                {
                    "rules": [
                        "this bus's rules are compiled into its query (all its targets are "
                        "Kafka): restart it to change them"
                    ]
                }
            )
        if not live_change(current, spec):
            before, after = without_rules(current), without_rules(spec)
            changed = sorted(k for k in set(before) | set(after) if before.get(k) != after.get(k))
            if not spec.is_bus:
                changed = ["rules"]
            raise SpecError(
                {
                    key: ["cannot change on a running bus (only its rules can): restart it"]
                    for key in changed or ["rules"]
                }
            )
        plan = compile_bus(self.spark, spec)
        with self._lock:
            self._plan = plan

    def __call__(self, batch: DataFrame, batch_id: int) -> None:
        use_kafka_v2_writes(batch.sparkSession)
        with self._lock:
            plan = self._plan
        if plan.spec.errors.tolerance == "all":
            BatchRun(self, plan, batch, batch_id).run_tolerant()
        else:
            BatchRun(self, plan, batch, batch_id).run_strict()

    def files_target_logged(self, config: FilesSinkConfig, batch_id: int) -> None:
        """Log the batches before ``batch_id`` as empty in a files target's log that misses
        them (a target that joined a running bus): its readers need every batch id."""
        location = recheck_files_location(config.path, "files sink")
        key = (location, config.format)
        if key in self._logged:
            return
        last = last_logged_batch(location)
        if last < batch_id - 1:
            from pipelines.cloudevents import EVENT_SCHEMA

            empty = self.spark.createDataFrame([], EVENT_SCHEMA)
            for missing in range(last + 1, batch_id):
                write_files_batch(empty, config, missing)
        self._logged.add(key)


def last_logged_batch(location: str) -> int:
    """The newest batch id in a files sink's ``_spark_metadata`` log (-1: none)."""
    log = Path(location.removeprefix("file://")) / "_spark_metadata"
    ids = (
        [
            int(name.split(".")[0])
            for name in (p.name for p in log.iterdir())
            if name.split(".")[0].isdigit()
        ]
        if log.is_dir()
        else []
    )
    return max(ids, default=-1)
