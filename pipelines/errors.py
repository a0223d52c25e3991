"""Bad events: how stages mark them, and what the channel's error policy does with them.

Stages never stop a query themselves. An event a stage cannot handle gets a ``failure``
(``struct<stage, error_class, message>``, see :mod:`pipelines.cloudevents`) and passes every
later stage untouched. Before the sink, the channel's *error gate* decides:

* ``errors.tolerance: none`` (the default) - the first failed event fails the query; its
  trace names the stage, the error and where the event came from (topic, partition, offset)
  with the start of its payload.
* ``errors.tolerance: all`` - failed events are counted, optionally logged, and written to
  the ``errors.dead_letter`` sink when there is one (Kafka Connect's ``errors.tolerance`` and
  ``errors.deadletterqueue.*``); the channel keeps running. A sink that rejects events after
  its own retries (``http``) hands them back as dead letters too.

A *dead letter* (:data:`DEAD_LETTER_SCHEMA`) says what failed and carries what is needed to
replay it: the stage, error class and message, the source topic / partition / offset /
timestamp, the original payload as read, and the event's JSON form when it got that far.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from contextvars import ContextVar

from pyspark import StorageLevel
from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F
from pyspark.sql.types import (
    IntegerType,
    LongType,
    StringType,
    StructField,
    StructType,
    TimestampType,
)

from pipelines.cloudevents import FAILURE_TYPE, event_json
from pipelines.plan import computed_once

DEAD_LETTER_SCHEMA = StructType(
    [
        StructField("event_id", StringType()),
        StructField("event", StringType()),
        StructField("stage", StringType()),
        StructField("error_class", StringType()),
        StructField("message", StringType()),
        StructField("origin_topic", StringType()),
        StructField("origin_partition", IntegerType()),
        StructField("origin_offset", LongType()),
        StructField("origin_timestamp", TimestampType()),
        StructField("origin_payload", StringType()),
    ]
)
"""One dead letter: the event's id and JSON form (NULL when it never became an event), the
failing stage (``source``, ``transforms[2] (cast)``, ``sink``), the error class and message,
and where the event came from with its original payload (UTF-8 text)."""

DEAD_LETTER_COLUMNS = tuple(DEAD_LETTER_SCHEMA.fieldNames())

logger = logging.getLogger("sluice.deadletters")

DEAD_LETTER_TYPE = "sluice.deadletter"
LOGGED_PER_BATCH = 100
"""With ``errors.log``, at most this many dead letters are logged per micro-batch."""
SNIPPET_CHARS = 60
"""How much of a bad payload a failure message quotes."""

Check = tuple[Column, Column | str, Column]
"""``(condition, error class, message)``: an event for which ``condition`` holds fails; the
error class is a name or a column computing one."""


def no_failure() -> Column:
    """A NULL ``failure`` of the right type (a source's events start without one)."""
    return F.lit(None).cast(FAILURE_TYPE)


def failure_of(error_class: Column | str, message: Column, event: Column | None) -> Column:
    """A ``failure`` struct naming the stage being built (:func:`failing_stage`; NULL outside
    one); ``event`` is the event's JSON text as the failing stage received it (NULL for a
    record that never became an event)."""
    if isinstance(error_class, str):
        error_class = F.lit(error_class)
    return F.struct(
        F.lit(_stage.get()).cast("string").alias("stage"),
        error_class.alias("error_class"),
        message.alias("message"),
        (event if event is not None else F.lit(None).cast("string")).alias("event"),
    )


_capture_events: ContextVar[bool] = ContextVar("sluice_capture_failed_events", default=True)
_stage: ContextVar[str | None] = ContextVar("sluice_failing_stage", default=None)


@contextmanager
def failing_stage(label: str) -> Iterator[None]:
    """While a stage is built: the ``failure.stage`` its failures carry (``source``,
    ``transforms[2] (cast)``, ``sink``).

    The stage is written into each failure where it is made (:func:`mark_failures`), not
    stamped on afterwards: a relabelling step after every stage was a CASE WHEN over the
    ``failure`` struct per stage, re-optimized by Spark on every micro-batch for nothing.
    """
    token = _stage.set(label)
    try:
        yield
    finally:
        _stage.reset(token)


@contextmanager
def capturing_failed_events(capture: bool) -> Iterator[None]:
    """While a channel is built: whether failures keep the event as the failing stage got it.

    Only dead letters carry it; without it (``errors.tolerance: none``) the generated code is
    smaller, which keeps Spark's whole-stage code generation (and the JIT) effective.
    """
    token = _capture_events.set(capture)
    try:
        yield
    finally:
        _capture_events.reset(token)


def mark_failures(events: DataFrame, checks: Sequence[Check], *, source: bool = False) -> DataFrame:
    """``events`` with ``failure`` set on each event that fails a check (the first one that
    does); an event that had already failed keeps its first failure.

    Each failure names the stage being built (:func:`failing_stage`). A transform's failure
    keeps the event as the stage received it (its JSON form, built for failed events only)
    unless built under ``capturing_failed_events(False)``; a source's (``source=True``) has
    none: the record never became one.

    The new ``failure`` is :func:`~pipelines.plan.computed_once`: later stages and the error
    gate read it several times, and Spark would otherwise substitute this CASE (which reads
    the previous ``failure`` twice) into each of those reads, stage after stage.
    """
    if not checks:
        return events
    event = event_json() if not source and _capture_events.get() else None
    chain = F.when(F.col("failure").isNotNull(), F.col("failure"))
    for condition, error_class, message in checks:
        chain = chain.when(condition, failure_of(error_class, message, event))
    return events.withColumn("failure", computed_once(chain))


def failed_or(condition: Column) -> Column:
    """A filter condition that keeps failed events whatever ``condition`` says, so they
    reach the error gate (a filter must never make a bad event disappear)."""
    return F.col("failure").isNotNull() | F.coalesce(condition, F.lit(False))


def failure_text() -> Column:
    """``stage: message [error class]`` of a failed event, for traces and logs."""
    return F.concat(
        F.coalesce(F.col("failure.stage"), F.lit("stage")),
        F.lit(": "),
        F.col("failure.message"),
        F.lit(" ["),
        F.col("failure.error_class"),
        F.lit("]"),
    )


def fail_fast(events: DataFrame) -> DataFrame:
    """``errors.tolerance: none``: the first failed event fails the query with its context."""
    return events.filter(
        F.when(F.col("failure").isNull(), F.lit(True)).otherwise(F.raise_error(failure_text()))
    )


def dead_letters_of(events: DataFrame, *context: Column) -> DataFrame:
    """The dead letters (:data:`DEAD_LETTER_SCHEMA`) of the failed events in ``events``,
    with the ``context`` columns after them (a bus's ``rule`` and ``target``)."""
    failed = events.filter(F.col("failure").isNotNull())
    return failed.select(
        F.col("id").alias("event_id"),
        F.col("failure.event").alias("event"),
        F.col("failure.stage").alias("stage"),
        F.col("failure.error_class").alias("error_class"),
        F.col("failure.message").alias("message"),
        "origin_topic",
        "origin_partition",
        "origin_offset",
        "origin_timestamp",
        "origin_payload",
        *context,
    )


def dead_letter_events(dead_letters: DataFrame, channel: str) -> DataFrame:
    """Dead letters as CloudEvents (:data:`pipelines.cloudevents.EVENT_SCHEMA`), written by
    the dead-letter sink like any event.

    ``type`` is ``sluice.deadletter``, ``source`` ``sluice://channels/{channel}``; the id is the
    failed event's (or ``topic/partition/offset`` of a record that never became one); the
    extensions ``sluicestage`` and ``sluiceerrorclass`` allow routing by header; ``data`` holds
    the whole context (a bus's dead letters, which have ``rule`` and ``target`` columns, also
    carry ``rule`` and ``target``, the sink's path such as ``rules[1].sinks[0]``, in it and in
    the extensions ``sluicerule`` and ``sluicetarget``; those of a sink that retried its write,
    which have an ``attempts`` column, carry ``attempts``, the tries made)::

        {"stage": "transforms[1] (cast)", "error_class": "CastError", "message": "...",
         "origin": {"topic": "orders", "partition": 0, "offset": 42, "timestamp": "..."},
         "payload": "<the record as read>", "event": {<the event the stage received>}}
    """
    from pipelines.cloudevents import (
        JSON_CONTENT_TYPE,
        SPECVERSION,
        select_event_columns,
        time_text,
    )

    origin = F.struct(
        F.col("origin_topic").alias("topic"),
        F.col("origin_partition").alias("partition"),
        F.col("origin_offset").alias("offset"),
        time_text("origin_timestamp").alias("timestamp"),
    )
    located_in_bus = "rule" in dead_letters.columns  # a bus's: which rule, which target
    bus_context = [F.col("rule"), F.col("target")] if located_in_bus else []
    # a retried sink's: how many times the write was tried (NULL for a stage's failure)
    retried = [F.col("attempts")] if "attempts" in dead_letters.columns else []
    context = F.struct(
        "stage",
        "error_class",
        "message",
        *retried,
        *bus_context,
        origin.alias("origin"),
        F.col("origin_payload").alias("payload"),
        F.try_parse_json("event").alias("event"),
    )
    extensions = [
        F.lit("sluicestage"),
        F.col("stage").cast("variant"),
        F.lit("sluiceerrorclass"),
        F.col("error_class").cast("variant"),
    ]
    if located_in_bus:
        extensions += [
            F.lit("sluicerule"),
            F.coalesce("rule", F.lit("")).cast("variant"),
            F.lit("sluicetarget"),
            F.coalesce("target", F.lit("")).cast("variant"),
        ]
    located = F.concat_ws("/", "origin_topic", "origin_partition", "origin_offset")
    events = dead_letters.select(
        F.coalesce("event_id", F.when(located != "", located), F.expr("uuid()")).alias("id"),
        F.lit(f"sluice://channels/{channel}").alias("source"),
        F.lit(SPECVERSION).alias("specversion"),
        F.lit(DEAD_LETTER_TYPE).alias("type"),
        F.col("stage").alias("subject"),
        F.current_timestamp().alias("time"),
        F.lit(JSON_CONTENT_TYPE).alias("datacontenttype"),
        F.lit(None).cast("string").alias("dataschema"),
        F.create_map(*extensions).alias("extensions"),
        F.parse_json(F.to_json(context)).alias("data"),
        "origin_topic",
        "origin_partition",
        "origin_offset",
        "origin_timestamp",
        F.lit(None).cast("string").alias("origin_payload"),
        no_failure().alias("failure"),
    )
    return select_event_columns(events)


class ErrorRouter:
    """``errors.tolerance: all``: the ``foreachBatch`` function of a channel's query.

    Per micro-batch: the events that passed every stage go to the sink's batch writer; the
    failed ones, and any the sink rejects after its retries, are counted (``on_dead_letters``
    receives the number), logged when ``log`` is set, and written to the dead-letter sink
    when there is one (with ``write_empty``, also when there are none: a files sink's log
    needs every batch id). The batch is cached so the stages run once for both outputs.
    """

    def __init__(
        self,
        *,
        channel: str,
        write_sink: Callable[[DataFrame, int], DataFrame | None],
        write_dead_letters: Callable[[DataFrame, int], DataFrame | None] | None,
        log: bool,
        on_dead_letters: Callable[[int], None] | None = None,
        write_empty: bool = False,
        check_batch: Callable[[DataFrame], None] | None = None,
        select_good: Callable[[DataFrame], DataFrame] | None = None,
    ) -> None:
        self.channel = channel
        self.select_good = select_good
        """The columns the sink's writer takes of the batch's healthy rows (default: the
        event columns; a pass-through's writer takes the records as they are)."""
        self.check_batch = check_batch
        """Run on each (cached) batch before anything is written; raising fails the batch
        (e.g. :class:`pipelines.wire.NewSchemaVersions`: the query must be built again)."""
        self.write_sink = write_sink
        self.write_dead_letters = write_dead_letters
        self.log = log
        self.on_dead_letters = on_dead_letters
        self.write_empty = write_empty

    def __call__(self, batch: DataFrame, batch_id: int) -> None:
        from pipelines.cloudevents import select_event_columns

        batch = batch.persist(StorageLevel.MEMORY_AND_DISK)
        try:
            if self.check_batch is not None:
                self.check_batch(batch)
            healthy = batch.filter(F.col("failure").isNull())
            select = self.select_good or select_event_columns
            good = select(healthy)
            rejected = self.write_sink(good, batch_id)
            dead = dead_letters_of(batch)
            if rejected is not None:  # may carry ``attempts`` (a retried sink's)
                dead = dead.unionByName(rejected, allowMissingColumns=True)
            self.route(dead.persist(StorageLevel.MEMORY_AND_DISK), batch_id)
        finally:
            batch.unpersist()

    def route(self, dead: DataFrame, batch_id: int) -> None:
        try:
            count = dead.count()
            if not count:
                if self.write_empty and self.write_dead_letters is not None:
                    self.write_dead_letters(dead_letter_events(dead, self.channel), batch_id)
                return
            if self.log:
                for row in dead.limit(LOGGED_PER_BATCH).collect():
                    logger.warning(
                        "dead letter (channel %s, batch %d): %s: %s [%s] topic=%s partition=%s "
                        "offset=%s",
                        self.channel,
                        batch_id,
                        row.stage,
                        row.message,
                        row.error_class,
                        row.origin_topic,
                        row.origin_partition,
                        row.origin_offset,
                    )
            if self.write_dead_letters is not None:
                events = dead_letter_events(dead, self.channel)
                failed_again = self.write_dead_letters(events, batch_id)
                # first() is None when the sink rejected none
                if failed_again is not None and (first := failed_again.first()) is not None:
                    raise DeadLetterError(
                        f"the dead-letter sink rejected {failed_again.count()} dead letter(s); "
                        f"first: {first.message}"
                    )
            if self.on_dead_letters is not None:
                self.on_dead_letters(count)
        finally:
            dead.unpersist()


class DeadLetterError(RuntimeError):
    """The dead-letter target itself refused dead letters: nothing is left to route them to."""
