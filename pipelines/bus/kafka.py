"""A bus's Kafka writes: its Kafka targets grouped into as few writes as their settings allow
(:func:`kafka_groups`), each row with its target's topic (:func:`kafka_records`), the
producer settings of a write to many topics (:func:`group_producer_options`), and the
streaming writer of a bus compiled into its query (:func:`compiled_kafka_writer`).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence

from pyspark.sql import Column, DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql.streaming.readwriter import DataStreamWriter

from pipelines.bus.counts import RULE_METRICS, target_counts
from pipelines.bus.plan import RULE, TARGET, BusPlan, Target, rows_of
from pipelines.errors import fail_fast
from pipelines.kafka_options import kafka_sink_options
from pipelines.sinks.kafka import (
    LEGAL_TOPIC,
    TOPIC_EXTENSION,
    events_to_kafka_records,
    field_text_sql,
    topic_refusal,
    within_reach,
)
from pipelines.spec.configs import KafkaSinkConfig
from pipelines.spec.live import group_key

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


def kafka_groups(targets: Iterable[Target]) -> list[list[Target]]:
    """Kafka targets grouped by what one write needs in common: the serialization (format,
    key field), the producer options and the retry policy. Usually one group: one write per
    batch."""
    groups: dict[str, list[Target]] = {}
    for target in targets:
        groups.setdefault(group_key(kafka_config(target)), []).append(target)
    return list(groups.values())


def compiled_kafka_writer(events: DataFrame, plan: BusPlan, *, counting: bool) -> DataStreamWriter:
    """The streaming writer of a bus :func:`~pipelines.spec.live.compiled_into_query`: the events
    (the source and the shared transforms) routed by every rule's pattern in one projection
    (:attr:`pipelines.bus.plan.BusPlan.direct_routing`), each (event, target) a Kafka record with
    its target's topic, written by Spark's streaming Kafka sink: one Spark job per batch and no
    ``foreachBatch``, so the routing runs in the same generated code as the parsing, and the
    event's columns are built only for the events some rule takes.

    With ``counting`` the rows per target are observed in the same job
    (:data:`pipelines.bus.counts.RULE_METRICS`, in each batch's progress report;
    :meth:`pipelines.bus.router.BusRouter.progress_counts` reads them). A failed event fails the
    batch (``tolerance: none``), naming its stage, as a linear channel's.
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
    """Spark's Kafka options of one Kafka write serving ``group``
    (:func:`~pipelines.kafka_options.kafka_sink_options` of its first target), with
    :data:`BUS_LINGER_MS` and a batch size shared out over the group's topics
    (:data:`BUS_BATCH_BUFFER`), unless the stage's ``properties`` set them.

    ``bench.bus`` (300,000 events): ``bus-100`` (100 topics) ran at 0.43x the events/s of a
    one-topic channel with the channel's producer settings, 0.76x with these."""
    config = kafka_config(group[0])
    options = kafka_sink_options(config)
    topics = len({kafka_config(target).topic for target in group})
    if "kafka.linger.ms" not in config.properties:
        options["kafka.linger.ms"] = str(BUS_LINGER_MS)
    if "kafka.batch.size" not in config.properties:
        size = min(256 * 1024, max(16 * 1024, BUS_BATCH_BUFFER // max(topics, 1)))
        options["kafka.batch.size"] = str(size)
    return options


def topic_columns(group: Sequence[Target]) -> tuple[Column, Column]:
    """The topic of a delivery row of ``group`` (as each target's
    :func:`pipelines.sinks.kafka.record_topic`: its ``topic_field``, else the ``sluicetopic``
    extension, else its topic) and whether it is a legal topic name (and within the team's
    reach, when it limits topics)."""
    extension = F.expr(field_text_sql(TOPIC_EXTENSION))
    configured = F.element_at(by_target(group, lambda t: kafka_config(t).topic), F.col(TARGET) + 1)
    with_field = [t for t in group if kafka_config(t).topic_field]
    if not with_field:
        topic = F.coalesce(extension, configured)
    else:
        chosen: Column | None = None
        for target in with_field:
            path = kafka_config(target).topic_field
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
    within = within_reach(topic)  # the team's reach: only known once the event chose its topic
    return topic, legal if within is None else legal & within


def kafka_records(
    deliveries: DataFrame, group: Sequence[Target], plan: BusPlan, *, strict: bool = False
) -> DataFrame:
    """The Kafka records of the group's delivery rows, each with its target's topic.

    ``strict``: a row whose topic is not legal fails the batch, naming the rule and target;
    else such rows are left out (they become dead letters,
    :meth:`pipelines.bus.batch.BatchRun._bad_topics`).
    """
    rows = rows_of(deliveries, group)
    topic, legal = topic_columns(group)
    if strict:
        names = by_target(plan.targets, lambda t: f"rule {t.rule_name!r} target {t.path} (kafka)")
        message = F.concat(
            F.element_at(names, F.col(TARGET) + 1),
            F.lit(": event "),
            F.col("id"),
            F.lit(": "),
            F.coalesce(topic, F.lit("(no topic)")),
            topic_refusal(topic),
        )
        rows = rows.withColumn(
            "__sluice_topic", F.when(legal, topic).otherwise(F.raise_error(message))
        )
    else:
        rows = rows.filter(legal).withColumn("__sluice_topic", topic)
    return events_to_kafka_records(rows, kafka_config(group[0]), topic=F.col("__sluice_topic"))


def by_target(targets: Sequence[Target], value: Callable[[Target], str | None]) -> Column:
    """A literal array indexed by TARGET + 1 (NULL for targets not in ``targets``)."""
    chosen = {t.index: value(t) for t in targets}
    size = max(chosen, default=-1) + 1
    return F.array(*(F.lit(chosen.get(index)).cast("string") for index in range(size)))


def kafka_config(target: Target) -> KafkaSinkConfig:
    assert isinstance(target.config, KafkaSinkConfig)
    return target.config
