"""One micro-batch through a bus routed batch by batch (:class:`BatchRun`): its deliveries
(one row per event and target), each target's write under the error policy and its retry
policy, the dead letters and the counts of the batch.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from typing import Protocol

from pyspark import StorageLevel
from pyspark.sql import Column, DataFrame, Observation, SparkSession
from pyspark.sql import functions as F

from pipelines.bus.counts import (
    Delivery,
    OnRuleCounts,
    RuleCounts,
    count_rows,
    count_rule_rows,
    observed_counts,
    rule_counts,
    target_counts,
)
from pipelines.bus.dead_letters import dead_letter_rows, dead_letter_schema, failed_event_letters
from pipelines.bus.kafka import group_producer_options, kafka_groups, kafka_records, topic_columns
from pipelines.bus.plan import RULE, TARGET, BusPlan, Rule, Target, rows_of
from pipelines.cloudevents import EVENT_COLUMNS
from pipelines.errors import (
    DEAD_LETTER_COLUMNS,
    ErrorRouter,
    capturing_failed_events,
    fail_fast,
    failing_stage,
    failure_text,
)
from pipelines.query import RetryCounter, batch_writer
from pipelines.retry import RetriedWrite
from pipelines.sinks import BATCH_SINKS
from pipelines.sinks.files import write_files_batch
from pipelines.sinks.kafka import invalid_topic_message, topic_error_class
from pipelines.spec.configs import KafkaSinkConfig
from pipelines.spec.configs.files import FilesSinkConfig
from pipelines.spec.live import retry_policy
from pipelines.transforms import TRANSFORMS

MESSAGE_CHARS = 500
"""How much of a target's error a dead letter quotes."""


logger = logging.getLogger("sluice.bus")


class BusDeliveryError(RuntimeError):
    """A target of a bus failed under ``errors.tolerance: none``; the message names the rule
    and the target (``rule 'big-orders' target rules[1].sinks[0] (jdbc): ...``)."""


class Router(Protocol):
    """What a batch needs of the bus's router (:class:`pipelines.bus.router.BusRouter`): the
    session, the channel's name, the callbacks it reports to, and the files targets' logs."""

    spark: SparkSession
    channel: str
    on_rule_counts: OnRuleCounts | None
    on_dead_letters: Callable[[int], None] | None
    on_retries: RetryCounter | None

    def files_target_logged(self, config: FilesSinkConfig, batch_id: int) -> None: ...


class BatchRun:
    """One micro-batch through the bus."""

    def __init__(self, router: Router, plan: BusPlan, batch: DataFrame, batch_id: int) -> None:
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
                dead.append(failed_event_letters(self.plan, deliveries))
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
            what=naming(targets),
            tolerant=tolerant,
            dead_letters=self._given_up,
            on_retry=self.router.on_retries,
            where=f", bus {self.router.channel}, batch {self.batch_id}",
        )(rows)

    def _given_up(
        self, rows: DataFrame, error_class: Column, message: Column, attempts: int
    ) -> DataFrame:
        dead = dead_letter_rows(self.plan, rows, error_class, message)
        return dead.withColumn("attempts", F.lit(attempts).cast("int"))

    def _write_kafka(self, deliveries: DataFrame, group: list[Target]) -> None:
        options = group_producer_options(group)

        def write(rows: DataFrame) -> None:
            records = kafka_records(rows, group, self.plan, strict=True)
            records.write.mode("append").format("kafka").options(**options).save()

        try:
            self._retried(group, write, rows_of(deliveries, group), tolerant=False)
        except Exception as error:
            raise BusDeliveryError(f"{naming(group)}: {short_error(error)}") from error

    def _write_kafka_tolerant(self, deliveries: DataFrame, group: list[Target]) -> list[DataFrame]:
        """The group's Kafka write; when it fails, each target alone, and the events of those
        that still fail become dead letters. Returns the dead letters (bad topics too)."""
        dead = [self._bad_topics(deliveries, group)]
        options = group_producer_options(group)

        def write(rows: DataFrame) -> None:
            records = kafka_records(rows, group, self.plan)
            records.write.mode("append").format("kafka").options(**options).save()

        rows = rows_of(deliveries, group)
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
        rows = rows_of(deliveries, group)
        topic, legal = topic_columns(group)
        bad = rows.filter(~legal)
        message = invalid_topic_message(topic)
        return dead_letter_rows(self.plan, bad, topic_error_class(topic), message)

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
            self._retried([target], write, rows_of(deliveries, [target]), tolerant=False)
        except Exception as error:
            raise BusDeliveryError(f"{naming([target])}: {short_error(error)}") from error

    def _write_other_tolerant(self, deliveries: DataFrame, target: Target) -> DataFrame | None:
        def write(rows: DataFrame) -> DataFrame | None:
            events = rows.select(*EVENT_COLUMNS)
            return BATCH_SINKS[target.type](events, target.config, self.batch_id)

        try:
            if isinstance(target.config, FilesSinkConfig):
                self.router.files_target_logged(target.config, self.batch_id)
            rows = rows_of(deliveries, [target])
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
            short_error(error),
        )
        rows = rows_of(deliveries, [target])
        return dead_letter_rows(
            self.plan,
            rows,
            F.lit(type(error).__name__),
            F.lit(f"{target.type} target: {short_error(error)}"),
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
                empty = self.router.spark.createDataFrame([], dead_letter_schema())
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
        """This batch's counts per rule (:func:`pipelines.bus.counts.rule_counts`)."""
        return rule_counts(self.plan, self.delivered, self.rule_failed)

    # -- caching ---------------------------------------------------------------------------

    def _persist(self, frame: DataFrame) -> DataFrame:
        frame = frame.persist(StorageLevel.MEMORY_AND_DISK)
        self.persisted.append(frame)
        return frame

    def _unpersist(self) -> None:
        for frame in self.persisted:
            frame.unpersist()


def naming(targets: Sequence[Target]) -> str:
    rules = ", ".join(dict.fromkeys(repr(t.rule_name) for t in targets))
    paths = ", ".join(f"{t.path} ({t.type})" for t in targets)
    return f"rule {rules} target {paths}" if len(targets) == 1 else f"rules {rules} targets {paths}"


def short_error(error: BaseException) -> str:
    text = str(error).strip().splitlines()
    first = text[0] if text else type(error).__name__
    return first[:MESSAGE_CHARS]
