"""Run a bus (a channel with ``rules``) as ONE Structured Streaming query.

A bus whose enabled rules all go to Kafka, with no transforms of their own, one write's
settings and ``errors.tolerance: none`` (:func:`compiled_into_query`) is compiled into the
streaming query itself (:func:`compiled_kafka_writer`): the routing below is part of the
query's plan and the write is Spark's streaming Kafka sink - no ``foreachBatch``; its rules
change by a restart from the checkpoint. Every other bus is routed batch by batch:

The source is read and parsed once and the shared ``transforms`` run once (the streaming
part of the query, as for a linear channel). Each micro-batch then goes through a
:class:`BusRouter` (``foreachBatch``), which turns it into *deliveries*: one row per (event,
target) it goes to, tagged with the target's place (``__sluice_target``) and its rule's
(``__sluice_rule``):

* a rule without transforms of its own is routed by one ``explode`` over every such rule's
  native pattern predicate (:func:`routing_column`: ``array(CASE WHEN <pattern> THEN
  <target> END, ...)``): every pattern is evaluated on the same parsed event in one pass,
  in generated code, no Python on the per-event path;
* a rule with transforms selects its events with its predicate, runs its transforms (the
  same transform builders as a linear channel; failures are labelled
  ``rules[1].transforms[0] (cast)``) and fans them out to its targets.

Targets then get their rows:

* **Kafka** - every Kafka target of the bus is written in ONE Kafka write with a per-row
  ``topic`` (targets sharing serialization and producer settings, the usual case): one Spark
  job per batch, however many rules. Kafka delivery is at least once (a replayed batch is
  written again, as for a linear channel).
* **files** - Spark's file sink keyed on the batch id (its ``_spark_metadata`` log): a
  replayed batch writes nothing, exactly once. A files target that joins a running bus has
  the batches before it logged as empty ones (the log's readers need every id).
* **jdbc** - one transaction per batch, upserted on the event id: a replay rewrites the
  same rows. **http** - the sink's own retries; rejected events become dead letters.

A Kafka, files or JDBC target with a ``retry`` policy has its write retried as it says
(:mod:`pipelines.retry`; Kafka targets are grouped by policy too). Under ``tolerance: all``
the events it gives up on become dead letters with ``attempts`` in their context; under
``none`` the batch fails. A group of several Kafka targets that still fails after its retries
is written target by target once more, so one target down does not take the others' events.

When the bus has only Kafka targets, ``errors.tolerance: none`` and no ``on_rule_counts``,
nothing is persisted: the batch is read once by the single Kafka write, one Spark job. Otherwise
the deliveries are persisted once and each target reads them; the per-rule counts are one
small aggregation over them (a second job).

Error policy: ``tolerance: none`` - the first failure fails the query naming the rule and
the target. ``tolerance: all`` - failed events, and the events of a target whose write
fails (a target down), become dead letters with ``rule`` and ``target`` (the sink's path,
``rules[1].sinks[0]``) in their context; the other targets keep delivering.

Per-rule counts of each batch go to ``on_rule_counts(batch_id, counts)`` (see
:meth:`BusRouter.rule_counts`). :meth:`BusRouter.replace` swaps the rules used from the
next batch on, without restarting the query (:func:`live_change` says when it can).
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import Any

from pydantic import BaseModel
from pyspark import StorageLevel
from pyspark.sql import Column, DataFrame, Observation, SparkSession
from pyspark.sql import functions as F
from pyspark.sql.streaming.readwriter import DataStreamWriter

from pipelines import native
from pipelines.builder import (
    RetryCounter,
    batch_writer,
    build_events,
    observe_stages,
    query_name,
    stage_points,
    with_trigger,
)
from pipelines.cloudevents import EVENT_COLUMNS, attribute_sql, event_json
from pipelines.errors import (
    DEAD_LETTER_COLUMNS,
    ErrorRouter,
    capturing_failed_events,
    dead_letters_of,
    fail_fast,
    failing_stage,
    failure_text,
)
from pipelines.kafka_options import kafka_sink_options
from pipelines.patterns import pattern_predicate, route_plans, use_native_matching
from pipelines.retry import RetriedWrite
from pipelines.sinks import BATCH_SINKS
from pipelines.sinks.files import write_files_batch
from pipelines.sinks.kafka import (
    LEGAL_TOPIC,
    TOPIC_EXTENSION,
    events_to_kafka_records,
    field_text_sql,
    invalid_topic_message,
)
from pipelines.spec import ChannelSpec, SpecError, StageSpec, parse_stage_config, validate_spec
from pipelines.spec.configs import KafkaSinkConfig
from pipelines.spec.configs.files import FilesSinkConfig
from pipelines.spec.live import (
    compiled_into_query,
    group_key,
    live_change,
    retry_policy,
    without_rules,
)
from pipelines.spec.paths import recheck_files_location
from pipelines.spec.patterns import CompiledPattern, compile_pattern
from pipelines.spec.runs import RunBounds
from pipelines.transforms import TRANSFORMS

RULE = "__sluice_rule"
"""The deliveries' column holding the rule's place in the spec (-1: no rule, a failure of
the shared stages)."""
TARGET = "__sluice_target"
"""The deliveries' column holding the target's place among the bus's targets (-1: none, an
event that failed before reaching one)."""
MESSAGE_CHARS = 500
"""How much of a target's error a dead letter quotes."""

logger = logging.getLogger("sluice.bus")

RuleCounts = list[dict[str, Any]]
OnRuleCounts = Callable[[int, RuleCounts], None]


@dataclass(frozen=True)
class Target:
    """One sink of one rule: its place among the bus's targets, its path in the spec."""

    index: int
    rule: int
    rule_name: str
    position: int
    stage: StageSpec
    config: BaseModel

    @property
    def path(self) -> str:
        return f"rules[{self.rule}].sinks[{self.position}]"

    @property
    def type(self) -> str:
        return self.stage.type


@dataclass(frozen=True)
class Rule:
    """A rule of the running bus, compiled: its predicate (None: every event), its parsed
    transforms, its targets."""

    index: int
    name: str
    enabled: bool
    predicate: Column | None
    transforms: tuple[tuple[StageSpec, BaseModel], ...]
    targets: tuple[Target, ...]
    compiled: CompiledPattern | None = None


@dataclass
class BusPlan:
    """The compiled rules of a bus (built once per spec, used by every batch until replaced)."""

    spec: ChannelSpec
    rules: list[Rule]
    native_matching: bool = False
    targets: list[Target] = field(init=False)

    def __post_init__(self) -> None:
        self.targets = [target for rule in self.rules for target in rule.targets]

    @property
    def active(self) -> list[Rule]:
        return [rule for rule in self.rules if rule.enabled]

    def delivering(self) -> list[Target]:
        """The targets of the enabled rules."""
        return [target for rule in self.active for target in rule.targets]

    @cached_property
    def direct_routing(self) -> Column | None:
        """The targets (ARRAY<INT>, NULL elements left in) of an event for the enabled rules
        without transforms of their own (None: there are none), every pattern decided on the
        same parsed event in one projection.

        With Sluice's functions the rules that test one top-level member are decided by one
        ``route`` call per member (:func:`pipelines.patterns.route_plans`: exact values
        looked up, not tested rule by rule); the others, and every rule without them, by
        :func:`routing_column`'s ``CASE WHEN`` per rule.
        """
        direct = [rule for rule in self.active if not rule.transforms]
        if not direct:
            return None
        columns: list[Column] = []
        others = direct
        if self.native_matching:
            patterned = [(rule, rule.compiled) for rule in direct if rule.compiled is not None]
            plans, rest = route_plans(
                [(compiled, [t.index for t in rule.targets]) for rule, compiled in patterned]
            )
            columns = [
                F.expr(native.route(attribute_sql(plan.member), plan.routes)) for plan in plans
            ]
            others = [rule for rule in direct if rule.compiled is None]
            others += [patterned[position][0] for position in rest]
        if others:
            columns.append(
                routing_column(
                    [(rule.predicate, [t.index for t in rule.targets]) for rule in others]
                )
            )
        return columns[0] if len(columns) == 1 else F.concat(*columns)


def compile_bus(spark: SparkSession, spec: ChannelSpec) -> BusPlan:
    """Compile a bus's rules: each pattern into a native predicate over the event's
    CloudEvents JSON form (:func:`rule_predicate`), each stage config parsed once."""
    assert spec.rules is not None, "a bus has rules"
    native_matching = use_native_matching(spark, None)
    rules: list[Rule] = []
    index = 0
    for i, rule in enumerate(spec.rules):
        targets = []
        for j, stage in enumerate(rule.sinks):
            config = parse_stage_config("sink", stage)
            targets.append(Target(index, i, rule.name, j, stage, config))
            index += 1
        transforms = tuple(
            (stage, parse_stage_config("transform", stage)) for stage in rule.transforms
        )
        predicate = rule_predicate(rule.pattern, native_matching=native_matching)
        compiled = None if rule.pattern is None else compile_pattern(rule.pattern)
        rules.append(
            Rule(i, rule.name, rule.enabled, predicate, transforms, tuple(targets), compiled)
        )
    return BusPlan(spec, rules, native_matching)


def rule_predicate(
    pattern: Mapping[str, Any] | None,
    child: Callable[[str], str] = attribute_sql,
    *,
    native_matching: bool = False,
) -> Column | None:
    """A rule's never-NULL predicate (:func:`pipelines.patterns.pattern_predicate`) over the
    event's top-level members given by ``child``; None for a rule without a pattern."""
    if pattern is None:
        return None
    return pattern_predicate(pattern, child, native_matching=native_matching)


def routing_column(routes: Sequence[tuple[Column | None, Sequence[int]]]) -> Column:
    """``array(CASE WHEN <predicate> THEN <target> END, ...)``: for each (predicate, targets)
    pair, the targets an event goes to (NULL elements where the predicate does not hold).

    Exploded and filtered on NOT NULL it gives one row per (event, target), every predicate
    evaluated once per event in one projection (Spark eliminates the repeated predicate of
    a rule with several targets as a common subexpression).
    """
    elements = [
        F.lit(target) if predicate is None else F.when(predicate, F.lit(target))
        for predicate, targets in routes
        for target in targets
    ]
    return F.array(*elements) if elements else F.array().cast("array<int>")


class BusDeliveryError(RuntimeError):
    """A target of a bus failed under ``errors.tolerance: none``; the message names the rule
    and the target (``rule 'big-orders' target rules[1].sinks[0] (jdbc): ...``)."""


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
    a bounded run's, see :func:`pipelines.builder.build_events`).

    With ``count_stages`` its source and shared transforms are counted as a linear
    channel's stages are (:func:`pipelines.builder.observe_stages`, read from each batch's
    progress by :func:`pipelines.builder.stage_counts`); its rules are counted per rule.

    The writer reads the source and runs the shared transforms once, then hands each
    micro-batch to the :class:`BusRouter` (``foreachBatch``); it has the checkpoint location,
    the query name ``sluice-{channel}`` and the trigger of the spec's execution mode, as
    :func:`pipelines.builder.build_stream` gives a linear channel.

    A bus whose rules all go to Kafka (:func:`compiled_into_query`) is instead compiled into
    the streaming query itself (:func:`compiled_kafka_writer`): no ``foreachBatch``, no Python
    per batch. Its per-rule counts are then in each batch's progress report, read by
    :meth:`BusRouter.progress_counts` (``on_rule_counts`` is not called; given, it asks for
    the counts to be observed), and its rules change by a restart of the query from its
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
        writer = events.writeStream.foreachBatch(router).outputMode("append")
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
        """Whether the query was built by :func:`compiled_kafka_writer` (its rules are part
        of the streaming plan: they change by a restart) rather than with this router as
        its ``foreachBatch`` function."""

    @property
    def spec(self) -> ChannelSpec:
        with self._lock:
            return self._plan.spec

    @property
    def plan(self) -> BusPlan:
        with self._lock:
            return self._plan

    def progress_counts(self, progress: Mapping[str, Any]) -> RuleCounts | None:
        """The per-rule counts (as :meth:`BatchRun.rule_counts` gives them) of the batch of a
        progress report of a compiled bus's query (its observed :data:`RULE_METRICS`); None
        when the report has none (an idle trigger, or counts not asked for)."""
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
        differs from the running one in more than its rules (see :func:`live_change`)."""
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


V1_SOURCES = "spark.sql.sources.useV1SourceList"


def use_kafka_v2_writes(spark: SparkSession) -> None:
    """Batch Kafka writes in ``spark`` through Kafka's DataSource V2 write (Spark's default
    list writes Kafka with V1): the same producer and delivery, but the write's job is the
    query's own, so an Observation on the written rows is fulfilled. ``spark`` is the
    streaming query's session (each query has its own clone): no other query is touched."""
    listed = spark.conf.get(V1_SOURCES, "") or ""
    names = [name.strip() for name in listed.split(",") if name.strip()]
    if "kafka" in (name.lower() for name in names):
        spark.conf.set(V1_SOURCES, ",".join(n for n in names if n.lower() != "kafka"))


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


@dataclass
class Delivery:
    """What a target got in one batch: rows sent, rows failed."""

    rows: int = 0
    failed: int = 0


class BatchRun:
    """One micro-batch through the bus."""

    def __init__(self, router: BusRouter, plan: BusPlan, batch: DataFrame, batch_id: int) -> None:
        self.router = router
        self.plan = plan
        self.batch = batch
        self.batch_id = batch_id
        self.tolerant = plan.spec.errors.tolerance == "all"
        self.delivered = {target.index: Delivery() for target in plan.targets}
        self.rule_failed = {rule.index: 0 for rule in plan.rules}
        self.persisted: list[DataFrame] = []

    # -- deliveries ---------------------------------------------------------------------

    def deliveries(self, events: DataFrame) -> DataFrame:
        """One row per (event, target) of the batch: the event's columns, RULE and TARGET;
        under ``tolerance: all`` also each failed event once (TARGET -1, RULE -1 when it
        failed in the shared stages)."""
        columns = [*EVENT_COLUMNS, RULE, TARGET]
        good = events.filter(F.col("failure").isNull())
        routing = self.plan.direct_routing
        parts: list[DataFrame] = []
        if routing is not None:
            rule_of = F.array(*(F.lit(t.rule) for t in self.plan.targets))
            routed = good.withColumn(TARGET, F.explode(routing))
            routed = routed.filter(F.col(TARGET).isNotNull())
            parts.append(routed.withColumn(RULE, F.element_at(rule_of, F.col(TARGET) + 1)))
        for rule in self.plan.active:
            if rule.transforms:
                parts.append(self.transformed(good, rule))
        if self.tolerant:
            failed = events.filter(F.col("failure").isNotNull())
            parts.append(failed.withColumn(RULE, F.lit(-1)).withColumn(TARGET, F.lit(-1)))
        if not parts:
            return good.withColumn(RULE, F.lit(-1)).withColumn(TARGET, F.lit(-1)).limit(0)
        selected = [part.select(*columns) for part in parts]
        result = selected[0]
        for part in selected[1:]:
            result = result.unionAll(part)
        return result

    def transformed(self, good: DataFrame, rule: Rule) -> DataFrame:
        """A rule's events through its own transforms, then fanned out to its targets."""
        events = good if rule.predicate is None else good.filter(rule.predicate)
        with capturing_failed_events(self.tolerant):
            for index, (stage, config) in enumerate(rule.transforms):
                with failing_stage(f"rules[{rule.index}].transforms[{index}] ({stage.type})"):
                    events = TRANSFORMS[stage.type](events, config)
        if not self.tolerant:
            prefix = F.lit(f"rule {rule.name!r} (rules[{rule.index}]): ")
            raised = F.raise_error(F.concat(prefix, failure_text()))
            events = events.filter(F.when(F.col("failure").isNull(), F.lit(True)).otherwise(raised))
        targets = F.array(*(F.lit(t.index) for t in rule.targets))
        fanned = F.when(F.col("failure").isNull(), targets).otherwise(F.array(F.lit(-1)))
        return events.withColumn(TARGET, F.explode(fanned)).withColumn(RULE, F.lit(rule.index))

    # -- the two policies ------------------------------------------------------------------

    def run_strict(self) -> None:
        """``tolerance: none``: any failure fails the batch (and the query)."""
        events = fail_fast(self.batch)
        if any(rule.transforms for rule in self.plan.active):
            events = self._persist(events)
        try:
            deliveries = self.deliveries(events)
            kafka, others = self._split_targets()
            groups = kafka_groups(kafka)
            counting = self.router.on_rule_counts is not None
            retried = any(retry_policy(t.stage, t.config) for t in [*kafka, *others])
            observation: Observation | None = None
            if not others and len(groups) == 1 and not retried:
                # One write reads the routed batch: nothing is cached, and its counts are
                # observed by that same job (Kafka's V2 batch write fulfils an Observation).
                if counting:
                    observation = Observation(f"sluice-bus-{self.batch_id}")
                    deliveries = deliveries.observe(observation, target_counts(kafka))
            else:  # several writes read the routed batch, or a retry reads it again
                deliveries = self._persist(deliveries)
                if retried:  # a bad event fails the batch here, not in a retried write
                    deliveries.count()
            for group in groups:
                self._write_kafka(deliveries, group)
            for target in others:
                self._write_other(deliveries, target)
            self._write_idle_files()
            if not counting:
                return
            rows = observed_counts(observation) if observation is not None else None
            if rows is None:  # not observed (written by another path): count the rows
                rows = count_rows(deliveries)
            for index, count in rows.items():
                if index in self.delivered:
                    self.delivered[index].rows = count
            self._report()
        finally:
            self._unpersist()

    def run_tolerant(self) -> None:
        """``tolerance: all``: failures and failing targets become dead letters."""
        # Persisted first: the deliveries read the batch once per rule and once more for
        # the failed events, and each read would count the shared stages again.
        events = self._persist(self.batch)
        try:
            deliveries = self._persist(self.deliveries(events))
            counts = count_rule_rows(deliveries)
            for (rule_index, target_index), count in counts.items():
                if target_index >= 0 and target_index in self.delivered:
                    self.delivered[target_index].rows = count
                elif rule_index >= 0 and rule_index in self.rule_failed:
                    self.rule_failed[rule_index] = count
            dead: list[DataFrame] = []
            if any(count for (_, target), count in counts.items() if target < 0):
                dead.append(self._failed_events(deliveries))
            kafka, others = self._split_targets()
            for group in kafka_groups(kafka):
                dead.extend(self._write_kafka_tolerant(deliveries, group))
            for target in others:
                rejected = self._write_other_tolerant(deliveries, target)
                if rejected is not None:
                    dead.append(rejected)
            self._write_idle_files()
            self._route_dead_letters(dead)
            self._report()
        finally:
            self._unpersist()

    # -- writing -------------------------------------------------------------------------

    def _split_targets(self) -> tuple[list[Target], list[Target]]:
        targets = self.plan.delivering()
        kafka = [t for t in targets if isinstance(t.config, KafkaSinkConfig)]
        return kafka, [t for t in targets if not isinstance(t.config, KafkaSinkConfig)]

    def _retried(
        self,
        targets: Sequence[Target],
        write: Callable[[DataFrame], DataFrame | None],
        rows: DataFrame,
        *,
        tolerant: bool,
    ) -> DataFrame | None:
        """``write(rows)`` (delivery rows of ``targets``) under the targets' retry policy (they
        share one); without one, a single attempt. Tolerant: the dead letters of the rows
        given up on (with ``rule``, ``target`` and ``attempts``), or None."""
        policy = retry_policy(targets[0].stage, targets[0].config)
        if policy is None:
            return write(rows)
        return RetriedWrite(
            write=write,
            policy=policy,
            what=_naming(targets),
            tolerant=tolerant,
            dead_letters=self._given_up,
            on_retry=self.router.on_retries,
            where=f", bus {self.router.channel}, batch {self.batch_id}",
        )(rows)

    def _given_up(
        self, rows: DataFrame, error_class: Column, message: Column, attempts: int
    ) -> DataFrame:
        dead = self._dead_letter_rows(rows, error_class, message)
        return dead.withColumn("attempts", F.lit(attempts).cast("int"))

    def _write_kafka(self, deliveries: DataFrame, group: list[Target]) -> None:
        options = group_producer_options(group)

        def write(rows: DataFrame) -> None:
            records = kafka_records(rows, group, self.plan, strict=True)
            records.write.mode("append").format("kafka").options(**options).save()

        try:
            self._retried(group, write, _rows_of(deliveries, group), tolerant=False)
        except Exception as error:
            raise BusDeliveryError(f"{_naming(group)}: {_short(error)}") from error

    def _write_kafka_tolerant(self, deliveries: DataFrame, group: list[Target]) -> list[DataFrame]:
        """The group's Kafka write; when it fails, each target alone, and the events of those
        that still fail become dead letters. Returns the dead letters (bad topics too)."""
        dead = [self._bad_topics(deliveries, group)]
        options = group_producer_options(group)

        def write(rows: DataFrame) -> None:
            records = kafka_records(rows, group, self.plan)
            records.write.mode("append").format("kafka").options(**options).save()

        rows = _rows_of(deliveries, group)
        if len(group) == 1 and retry_policy(group[0].stage, group[0].config) is not None:
            given_up = self._retried(group, write, rows, tolerant=True)
            return dead if given_up is None else [*dead, given_up]
        try:
            self._retried(group, write, rows, tolerant=False)
            return dead
        except Exception as error:  # one target down must not stop the others
            if len(group) == 1:
                dead.append(self._target_failed(deliveries, group[0], error))
                return dead
        for target in group:
            try:
                records = kafka_records(deliveries, [target], self.plan)
                records.write.mode("append").format("kafka").options(**options).save()
            except Exception as error:
                dead.append(self._target_failed(deliveries, target, error))
        return dead

    def _bad_topics(self, deliveries: DataFrame, group: list[Target]) -> DataFrame:
        rows = _rows_of(deliveries, group)
        topic, legal = topic_columns(group)
        bad = rows.filter(~legal)
        message = invalid_topic_message(topic)
        return self._dead_letter_rows(bad, F.lit("InvalidTopic"), message)

    def _write_other(self, deliveries: DataFrame, target: Target) -> None:
        def write(rows: DataFrame) -> None:
            events = rows.select(*EVENT_COLUMNS)
            rejected = BATCH_SINKS[target.type](events, target.config, self.batch_id)
            if rejected is not None and (first := rejected.first()) is not None:
                raise BusDeliveryError(
                    f"{rejected.count()} event(s) rejected; first: {first.message}"
                )

        try:
            if isinstance(target.config, FilesSinkConfig):
                self.router.files_target_logged(target.config, self.batch_id)
            self._retried([target], write, _rows_of(deliveries, [target]), tolerant=False)
        except Exception as error:
            raise BusDeliveryError(f"{_naming([target])}: {_short(error)}") from error

    def _write_other_tolerant(self, deliveries: DataFrame, target: Target) -> DataFrame | None:
        def write(rows: DataFrame) -> DataFrame | None:
            events = rows.select(*EVENT_COLUMNS)
            return BATCH_SINKS[target.type](events, target.config, self.batch_id)

        try:
            if isinstance(target.config, FilesSinkConfig):
                self.router.files_target_logged(target.config, self.batch_id)
            rows = _rows_of(deliveries, [target])
            rejected = self._retried([target], write, rows, tolerant=True)
        except Exception as error:  # the target is down: its events become dead letters
            return self._target_failed(deliveries, target, error)
        if rejected is None:
            return None
        if (
            retry_policy(target.stage, target.config) is not None
        ):  # dead letters with rule and target
            return rejected
        return rejected.select(
            *DEAD_LETTER_COLUMNS,
            F.lit(target.rule_name).alias("rule"),
            F.lit(target.path).alias("target"),
        )

    def _write_idle_files(self) -> None:
        """Files targets of disabled rules log the batch as empty (no gap in their log)."""
        for rule in self.plan.rules:
            if rule.enabled:
                continue
            for target in rule.targets:
                if isinstance(target.config, FilesSinkConfig):
                    from pipelines.cloudevents import EVENT_SCHEMA

                    self.router.files_target_logged(target.config, self.batch_id)
                    empty = self.router.spark.createDataFrame([], EVENT_SCHEMA)
                    write_files_batch(empty, target.config, self.batch_id)

    # -- dead letters ----------------------------------------------------------------------

    def _target_failed(self, deliveries: DataFrame, target: Target, error: Exception) -> DataFrame:
        logger.warning(
            "bus %s batch %d: rule %r target %s (%s) failed: %s",
            self.router.channel,
            self.batch_id,
            target.rule_name,
            target.path,
            target.type,
            _short(error),
        )
        rows = _rows_of(deliveries, [target])
        return self._dead_letter_rows(
            rows, F.lit(type(error).__name__), F.lit(f"{target.type} target: {_short(error)}")
        )

    def _dead_letter_rows(self, rows: DataFrame, error_class: Column, message: Column) -> DataFrame:
        """Dead letters of delivery rows that a target could not take (stage: its path)."""
        paths = F.array(*(F.lit(t.path) for t in self.plan.targets))
        names = F.array(*(F.lit(t.rule_name) for t in self.plan.targets))
        target = F.element_at(paths, F.col(TARGET) + 1)
        return rows.select(
            F.col("id").alias("event_id"),
            event_json().alias("event"),
            target.alias("stage"),
            error_class.alias("error_class"),
            message.alias("message"),
            "origin_topic",
            "origin_partition",
            "origin_offset",
            "origin_timestamp",
            "origin_payload",
            F.element_at(names, F.col(TARGET) + 1).alias("rule"),
            target.alias("target"),
        )

    def _failed_events(self, deliveries: DataFrame) -> DataFrame:
        """Dead letters of the events that failed in a stage (shared or a rule's)."""
        names = F.array(*(F.lit(rule.name) for rule in self.plan.rules))
        rule = F.when(F.col(RULE) >= 0, F.element_at(names, F.col(RULE) + 1))
        return dead_letters_of(
            deliveries,
            rule.cast("string").alias("rule"),
            F.lit(None).cast("string").alias("target"),
        )

    def _route_dead_letters(self, dead: list[DataFrame]) -> None:
        spec = self.plan.spec
        sink = spec.errors.dead_letter
        write = None
        if sink is not None:  # its own retry policy; failing after it fails the batch
            write = batch_writer(
                sink,
                None,
                channel=self.router.channel,
                on_retries=self.router.on_retries,
                what=f"dead-letter {sink.type} sink",
            )

        router = ErrorRouter(
            channel=self.router.channel,
            write_sink=lambda events, batch_id: None,
            write_dead_letters=write,
            log=spec.errors.log,
            on_dead_letters=self.router.on_dead_letters,
            write_empty=sink is not None and sink.type == "files",
        )
        if not dead:
            if router.write_empty and write is not None:
                empty = self.router.spark.createDataFrame([], _dead_letter_schema())
                router.route(empty, self.batch_id)
            return
        letters = dead[0]
        for more in dead[1:]:  # a retried target's carry ``attempts``
            letters = letters.unionByName(more, allowMissingColumns=True)
        letters = letters.persist(StorageLevel.MEMORY_AND_DISK)
        for row in letters.groupBy("rule", "target").count().collect():
            if row.target is not None:
                for target in self.plan.targets:
                    if target.path == row.target:
                        self.delivered[target.index].failed += int(row["count"])
        router.route(letters, self.batch_id)  # unpersists it

    # -- counts ------------------------------------------------------------------------------

    def _report(self) -> None:
        if self.router.on_rule_counts is not None:
            self.router.on_rule_counts(self.batch_id, self.rule_counts())

    def rule_counts(self) -> RuleCounts:
        """This batch's counts per rule (:func:`rule_counts`)."""
        return rule_counts(self.plan, self.delivered, self.rule_failed)

    # -- caching ---------------------------------------------------------------------------

    def _persist(self, frame: DataFrame) -> DataFrame:
        frame = frame.persist(StorageLevel.MEMORY_AND_DISK)
        self.persisted.append(frame)
        return frame

    def _unpersist(self) -> None:
        for frame in self.persisted:
            frame.unpersist()


def rule_counts(
    plan: BusPlan, deliveries: Mapping[int, Delivery], failed_in_rules: Mapping[int, int]
) -> RuleCounts:
    """A batch's counts per rule, from the rows each target got (``deliveries``, by the
    target's index) and the events each rule's transforms failed (``failed_in_rules``):
    every rule of the spec, disabled ones with zeros:
    ``{"rule", "matched", "delivered", "failed", "targets": [{"sink", "type",
    "delivered", "failed"}]}``.

    A target's ``delivered`` is the events written to it, ``failed`` those that became
    dead letters there. A rule's ``matched`` is the events its pattern selected (past
    its own transforms, when it has some), ``failed`` those that failed in its
    transforms plus the most any of its targets failed, ``delivered`` the least any of
    its targets delivered: for a rule with one target, exactly its events.
    """
    counts: RuleCounts = []
    for rule in plan.rules:
        targets: list[dict[str, Any]] = []
        delivered: list[int] = []
        failed: list[int] = []
        for target in rule.targets:
            delivery = deliveries[target.index]
            delivered.append(max(delivery.rows - delivery.failed, 0))
            failed.append(delivery.failed)
            targets.append(
                {
                    "sink": target.path,
                    "type": target.type,
                    "delivered": delivered[-1],
                    "failed": failed[-1],
                }
            )
        reached = max((deliveries[t.index].rows for t in rule.targets), default=0)
        rule_failed = failed_in_rules[rule.index]
        counts.append(
            {
                "rule": rule.name,
                "matched": reached + rule_failed,
                "delivered": min(delivered, default=0),
                "failed": rule_failed + max(failed, default=0),
                "targets": targets,
            }
        )
    return counts


def kafka_groups(targets: Iterable[Target]) -> list[list[Target]]:
    """Kafka targets grouped by what one write needs in common: the serialization (format,
    key field), the producer options and the retry policy. Usually one group: one write per
    batch."""
    groups: dict[str, list[Target]] = {}
    for target in targets:
        groups.setdefault(group_key(_kafka_config(target)), []).append(target)
    return list(groups.values())


def compiled_kafka_writer(events: DataFrame, plan: BusPlan, *, counting: bool) -> DataStreamWriter:
    """The streaming writer of a bus :func:`compiled_into_query`: the events (the source and
    the shared transforms) routed by every rule's pattern in one projection
    (:attr:`BusPlan.direct_routing`), each (event, target) a Kafka record with its target's
    topic, written by Spark's streaming Kafka sink: one Spark job per batch and no
    ``foreachBatch``, so the routing runs in the same generated code as the parsing, and the
    event's columns are built only for the events some rule takes.

    With ``counting`` the rows per target are observed in the same job (:data:`RULE_METRICS`,
    in each batch's progress report; :meth:`BusRouter.progress_counts` reads them). A failed
    event fails the batch (``tolerance: none``), naming its stage, as a linear channel's.
    """
    routing = plan.direct_routing
    assert routing is not None, "a compiled bus has rules without transforms"
    rule_of = F.array(*(F.lit(t.rule) for t in plan.targets))
    deliveries = fail_fast(events).withColumn(TARGET, F.explode(routing))
    deliveries = deliveries.filter(F.col(TARGET).isNotNull())
    deliveries = deliveries.withColumn(RULE, F.element_at(rule_of, F.col(TARGET) + 1))
    targets = plan.delivering()
    if counting:
        deliveries = deliveries.observe(RULE_METRICS, target_counts(targets))
    records = kafka_records(deliveries, targets, plan, strict=True)
    options = group_producer_options(targets)
    return records.writeStream.format("kafka").options(**options).outputMode("append")


BUS_LINGER_MS = 100
"""``linger.ms`` of a bus's Kafka writes (a linear channel's is 5,
:data:`pipelines.kafka_options.PRODUCER_DEFAULTS`). The producer's one sender thread walks
every partition it holds a batch for each time it wakes, and a bus writing 100 topics holds
batches for 200 partitions and more: with 5 ms it woke ten times as often as a one-topic
write for the same bytes (a JFR profile of ``bus-100``: the sender thread 40 % of the
driver's samples, against 5 % with one topic). A micro-batch's write flushes its producer
as its task ends, so the linger delays no event past the batch's end (a bus never runs in
real-time mode)."""
BUS_BATCH_BUFFER = 8 * 1024 * 1024
"""Bytes of producer batches a bus's Kafka write may keep open across its target topics:
the batch size is this over the number of topics (16 KiB to 256 KiB), so 100 topics of 2
partitions hold 16 MB of Kafka's default 32 MB ``buffer.memory``. With the channel's 256 KiB
per partition, 200 partitions' open batches needed 51 MB: sends blocked on the buffer and
batches left half full."""


def group_producer_options(group: Sequence[Target]) -> dict[str, str]:
    """Spark's Kafka options of one Kafka write serving ``group`` (:func:`kafka_sink_options`
    of its first target), with :data:`BUS_LINGER_MS` and a batch size shared out over the
    group's topics (:data:`BUS_BATCH_BUFFER`), unless the stage's ``properties`` set them.

    ``bench.bus`` (300,000 events): ``bus-100`` (100 topics) ran at 0.43x the events/s of a
    one-topic channel with the channel's producer settings, 0.76x with these."""
    config = _kafka_config(group[0])
    options = kafka_sink_options(config)
    topics = len({_kafka_config(target).topic for target in group})
    if "kafka.linger.ms" not in config.properties:
        options["kafka.linger.ms"] = str(BUS_LINGER_MS)
    if "kafka.batch.size" not in config.properties:
        size = min(256 * 1024, max(16 * 1024, BUS_BATCH_BUFFER // max(topics, 1)))
        options["kafka.batch.size"] = str(size)
    return options


def topic_columns(group: Sequence[Target]) -> tuple[Column, Column]:
    """The topic of a delivery row of ``group`` (as each target's :func:`record_topic`:
    its ``topic_field``, else the ``sluicetopic`` extension, else its topic) and whether it
    is a legal topic name."""
    extension = F.expr(field_text_sql(TOPIC_EXTENSION))
    configured = F.element_at(
        _by_target(group, lambda t: _kafka_config(t).topic), F.col(TARGET) + 1
    )
    with_field = [t for t in group if _kafka_config(t).topic_field]
    if not with_field:
        topic = F.coalesce(extension, configured)
    else:
        chosen: Column | None = None
        for target in with_field:
            path = _kafka_config(target).topic_field
            assert path is not None
            condition = F.col(TARGET) == F.lit(target.index)
            field_text = F.expr(field_text_sql(path))
            chosen = (
                F.when(condition, field_text)
                if chosen is None
                else chosen.when(condition, field_text)
            )
        assert chosen is not None
        topic = F.coalesce(chosen, extension, configured)
    legal = F.coalesce((topic == configured) | topic.rlike(LEGAL_TOPIC), F.lit(False))
    return topic, legal


def kafka_records(
    deliveries: DataFrame, group: Sequence[Target], plan: BusPlan, *, strict: bool = False
) -> DataFrame:
    """The Kafka records of the group's delivery rows, each with its target's topic.

    ``strict``: a row whose topic is not legal fails the batch, naming the rule and target;
    else such rows are left out (they become dead letters, :meth:`BatchRun._bad_topics`).
    """
    rows = _rows_of(deliveries, group)
    topic, legal = topic_columns(group)
    if strict:
        names = _by_target(plan.targets, lambda t: f"rule {t.rule_name!r} target {t.path} (kafka)")
        message = F.concat(
            F.element_at(names, F.col(TARGET) + 1),
            F.lit(": event "),
            F.col("id"),
            F.lit(": "),
            F.coalesce(topic, F.lit("(no topic)")),
            F.lit(" is not a valid Kafka topic name"),
        )
        rows = rows.withColumn(
            "__sluice_topic", F.when(legal, topic).otherwise(F.raise_error(message))
        )
    else:
        rows = rows.filter(legal).withColumn("__sluice_topic", topic)
    return events_to_kafka_records(rows, _kafka_config(group[0]), topic=F.col("__sluice_topic"))


COUNTS = "__sluice_counts"
"""The observed metric holding the rows per target."""
RULE_METRICS = "sluice_rules"
"""The name of a compiled bus's observed per-target counts in its progress reports."""


def target_counts(targets: Sequence[Target]) -> Column:
    """One aggregate counting the delivery rows per target: ``histogram_numeric`` of TARGET
    with a bin per target, which is exact while the distinct values are no more than the
    bins (each value keeps its own bin: a binary search per row), where a ``count_if`` per
    target costs a comparison per target on every row."""
    bins = max(len(targets), 2)
    return F.expr(f"histogram_numeric(`{TARGET}`, {bins})").alias(COUNTS)


def observed_counts(observation: Observation) -> dict[int, int] | None:
    """Rows per target that the write's job observed (:func:`target_counts`); None when the
    job did not fulfil the observation (it is fulfilled as the write returns)."""
    java = observation._jo
    if java is None or not java.future().isCompleted():
        logger.warning("the bus's per-target counts were not observed: counting them again")
        return None
    return histogram_bins(observation.get[COUNTS])


def histogram_bins(bins: Iterable[Any] | None) -> dict[int, int]:
    """Rows per target from :func:`target_counts`' histogram (its bins' ``x`` and ``y``)."""
    return {int(b["x"]): round(b["y"]) for b in bins or []}


def count_rows(deliveries: DataFrame) -> dict[int, int]:
    """Rows per target of (persisted) deliveries: one small aggregation."""
    return {
        int(row[TARGET]): int(row["count"])
        for row in deliveries.groupBy(TARGET).count().collect()
        if row[TARGET] is not None
    }


def count_rule_rows(deliveries: DataFrame) -> dict[tuple[int, int], int]:
    """Rows per (rule, target) of (persisted) deliveries."""
    return {
        (int(row[RULE]), int(row[TARGET])): int(row["count"])
        for row in deliveries.groupBy(RULE, TARGET).count().collect()
    }


def _rows_of(deliveries: DataFrame, targets: Sequence[Target]) -> DataFrame:
    indexes = [t.index for t in targets]
    if len(indexes) == 1:
        return deliveries.filter(F.col(TARGET) == F.lit(indexes[0]))
    return deliveries.filter(F.col(TARGET).isin(indexes))


def _by_target(targets: Sequence[Target], value: Callable[[Target], str | None]) -> Column:
    """A literal array indexed by TARGET + 1 (NULL for targets not in ``targets``)."""
    chosen = {t.index: value(t) for t in targets}
    size = max(chosen, default=-1) + 1
    return F.array(*(F.lit(chosen.get(index)).cast("string") for index in range(size)))


def _kafka_config(target: Target) -> KafkaSinkConfig:
    assert isinstance(target.config, KafkaSinkConfig)
    return target.config


def _naming(targets: Sequence[Target]) -> str:
    rules = ", ".join(dict.fromkeys(repr(t.rule_name) for t in targets))
    paths = ", ".join(f"{t.path} ({t.type})" for t in targets)
    return f"rule {rules} target {paths}" if len(targets) == 1 else f"rules {rules} targets {paths}"


def _short(error: BaseException) -> str:
    text = str(error).strip().splitlines()
    first = text[0] if text else type(error).__name__
    return first[:MESSAGE_CHARS]


def _dead_letter_schema() -> Any:
    from pyspark.sql.types import StringType, StructField, StructType

    from pipelines.errors import DEAD_LETTER_SCHEMA

    return StructType(
        [
            *DEAD_LETTER_SCHEMA.fields,
            StructField("rule", StringType()),
            StructField("target", StringType()),
        ]
    )
