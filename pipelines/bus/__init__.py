"""Run a bus (a channel with ``rules``) as ONE Structured Streaming query.

A bus whose enabled rules all go to Kafka, with no transforms of their own, one write's
settings and ``errors.tolerance: none`` (:func:`pipelines.spec.live.compiled_into_query`) is
compiled into the streaming query itself (:func:`pipelines.bus.kafka.compiled_kafka_writer`):
the routing below is part of the query's plan and the write is Spark's streaming Kafka sink -
no ``foreachBatch``; its rules change by a restart from the checkpoint. Every other bus is
routed batch by batch:

The source is read and parsed once and the shared ``transforms`` run once (the streaming
part of the query, as for a linear channel). Each micro-batch then goes through a
:class:`~pipelines.bus.router.BusRouter` (``foreachBatch``), which turns it into
*deliveries*: one row per (event, target) it goes to, tagged with the target's place
(``__sluice_target``) and its rule's (``__sluice_rule``):

* a rule without transforms of its own is routed by one ``explode`` over every such rule's
  native pattern predicate (:func:`~pipelines.bus.plan.routing_column`: ``array(CASE WHEN
  <pattern> THEN <target> END, ...)``): every pattern is evaluated on the same parsed event
  in one pass, in generated code, no Python on the per-event path;
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
:meth:`~pipelines.bus.batch.BatchRun.rule_counts`). :meth:`BusRouter.replace` swaps the rules
used from the next batch on, without restarting the query
(:func:`pipelines.spec.live.live_change` says when it can).
"""

from pipelines.bus.batch import BatchRun, BusDeliveryError
from pipelines.bus.counts import OnRuleCounts, RuleCounts, rule_counts
from pipelines.bus.kafka import compiled_kafka_writer, group_producer_options, kafka_groups
from pipelines.bus.plan import BusPlan, Rule, Target, compile_bus, routing_column, rule_predicate
from pipelines.bus.router import BusRouter, build_bus_stream

__all__ = [
    "BatchRun",
    "BusDeliveryError",
    "BusPlan",
    "BusRouter",
    "OnRuleCounts",
    "Rule",
    "RuleCounts",
    "Target",
    "build_bus_stream",
    "compile_bus",
    "compiled_kafka_writer",
    "group_producer_options",
    "kafka_groups",
    "routing_column",
    "rule_counts",
    "rule_predicate",
]
