"""Build a linear channel's Structured Streaming query: source -> CloudEvents -> transforms ->
error gate -> sink (and dead-letter sink); a channel that only copies Kafka records reads no
events (:mod:`pipelines.passthrough`). A bus is handed to :mod:`pipelines.bus`; both build
on the query plumbing of :mod:`pipelines.query`."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from functools import partial
from typing import Any

from pyspark import StorageLevel
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql.streaming.readwriter import DataStreamWriter

from pipelines.bus import build_bus_stream
from pipelines.errors import ErrorRouter, capturing_failed_events, fail_fast, failing_stage
from pipelines.passthrough import (
    copy_batch_writer,
    copy_writer,
    pass_through_rows,
    passes_through,
    select_copies,
)
from pipelines.query import (
    RetryCounter,
    batch_writer,
    build_events,
    plugin_implementation,
    query_name,
    with_trigger,
    writes_data_as_read,
)
from pipelines.runs import RunBounds
from pipelines.sinks import SINK_CHECKS, SINKS
from pipelines.sinks.preview import PreviewPublisher, preview_buffer
from pipelines.sources.kafka import DEFERRED_TEXT
from pipelines.spec import ChannelSpec, StageSpec, parse_stage_config, validate_spec
from pipelines.spec.configs import KafkaSourceConfig
from pipelines.spec.configs.files import FilesSinkConfig
from pipelines.spec.configs.preview import PreviewSinkConfig
from pipelines.spec.live import retry_policy
from pipelines.spec.reach import carried
from pipelines.stage_metrics import observe_stages, observes_gate, stage_points


def build_stream(
    spark: SparkSession,
    spec: ChannelSpec,
    *,
    channel: str,
    checkpoint_dir: str,
    preview_publisher: PreviewPublisher | None = None,
    on_dead_letters: Callable[[int], None] | None = None,
    count_stages: bool = True,
    on_rule_counts: Callable[[int, list[dict[str, Any]]], None] | None = None,
    on_retries: RetryCounter | None = None,
    run: RunBounds | None = None,
) -> DataStreamWriter:
    """Return the fully configured writer of a channel's query; the caller calls ``start()``.

    With ``run`` it is a bounded run's query (a replay or a redrive, :mod:`pipelines.runs`):
    the run's offsets read, its events tagged (see :func:`pipelines.query.build_events`).

    The spec is validated again (``SpecError`` with spec-relative paths if invalid). The
    writer has ``checkpointLocation = checkpoint_dir``, ``queryName = sluice-{channel}``,
    append output mode and the trigger of the spec's execution mode
    (:func:`pipelines.query.with_trigger`: by default micro-batches back to back).

    Failed events (:mod:`pipelines.errors`) meet the channel's error policy before the sink:
    with ``tolerance: none`` the first one fails the query and the sink is Spark's streaming
    sink; with ``all`` each micro-batch goes through an :class:`ErrorRouter` (the sink's batch
    writer, the dead-letter sink, ``on_dead_letters`` told how many there were).

    A ``preview`` sink hands each micro-batch's newest events to ``preview_publisher``
    (see :mod:`pipelines.sinks.preview`); without one, to the channel's in-memory
    ``preview_buffer(channel, max_events)``.

    With ``count_stages`` each stage's events are counted as they pass
    (:func:`pipelines.stage_metrics.observe_stages`;
    :func:`pipelines.stage_metrics.stage_counts` reads a batch's
    ``observedMetrics``), under either error policy.

    A bus (a spec with ``rules``) is built by :func:`pipelines.bus.build_bus_stream` (one
    query: one read, each batch routed to every rule's targets); ``on_rule_counts`` then
    receives each batch's per-rule counts (ignored for a linear channel). Use
    ``build_bus_stream`` itself to change the rules of the running query.

    A sink with a ``retry`` policy (:func:`pipelines.spec.live.retry_policy`) is written by
    ``foreachBatch`` under either error policy, each write retried as :mod:`pipelines.retry` says;
    ``on_retries`` is told of each retried write (the dead-letter target's too).
    """
    spec = validate_spec(spec)
    if spec.is_bus:
        writer, _ = build_bus_stream(
            spark,
            spec,
            channel=channel,
            checkpoint_dir=checkpoint_dir,
            on_rule_counts=on_rule_counts,
            on_dead_letters=on_dead_letters,
            on_retries=on_retries,
            run=run,
            count_stages=count_stages,
        )
        return writer
    tolerant = spec.errors.tolerance == "all"
    sink = spec.the_sink
    sink_config = parse_stage_config("sink", sink)
    check = SINK_CHECKS.get(sink.type)
    copying = run is None and passes_through(spark, spec)  # records as they are: no events
    as_read = not copying and writes_data_as_read(spark, spec, run)  # data as its record's text
    with capturing_failed_events(tolerant):  # only dead letters need the failed event
        if copying:
            events = pass_through_rows(spark, spec, keep_payload=tolerant)
        else:
            events = build_events(
                spark,
                spec,
                keep_payload=tolerant,
                count_stages=count_stages,
                run=run,
                data_as_read=as_read,
            )
        if check is not None and not copying:  # a copy's topic is the configured one
            with failing_stage("sink"):
                events = check(events, sink_config)
        if count_stages and observes_gate(spec):  # before the gate: foreachBatch gets it
            events = observe_stages(events, stage_points(spec))
    publisher = None
    if isinstance(sink_config, PreviewSinkConfig):  # the one sink that hands events back
        publisher = preview_publisher or preview_buffer(channel, sink_config.max_events).publish
    if not tolerant and copying:
        writer = copy_writer(events, spec)
    elif not tolerant and retry_policy(sink, sink_config) is not None:
        strict = StrictRetriedSink(batch_writer(sink, None, channel=channel, on_retries=on_retries))
        writer = fail_fast(events).writeStream.foreachBatch(carried(strict)).outputMode("append")
    elif not tolerant:
        # (events, config) -> writer; the preview sink also takes publisher=
        write: Callable[..., DataStreamWriter] = plugin_implementation(SINKS, "sink", sink)
        if publisher is not None:
            write = partial(write, publisher=publisher)
        writer = write(fail_fast(events), sink_config)
    else:
        dead_letter_sink = spec.errors.dead_letter
        router = ErrorRouter(
            channel=channel,
            write_sink=(
                copy_batch_writer(spec)
                if copying
                else batch_writer(
                    sink, publisher, channel=channel, on_retries=on_retries, tolerant=True
                )
            ),
            write_dead_letters=(
                batch_writer(
                    dead_letter_sink,
                    None,
                    channel=channel,
                    on_retries=on_retries,
                    what=f"dead-letter {dead_letter_sink.type} sink",
                )
                if dead_letter_sink
                else None
            ),
            # A files sink's log must hold every batch id: batches without dead letters too.
            write_empty=spec.errors.dead_letter in _batch_logged_sinks(spec),
            log=spec.errors.log,
            on_dead_letters=on_dead_letters,
            check_batch=schema_watch(spec.source),
            select_good=select_copies(spec) if copying else (with_data_text if as_read else None),
        )
        writer = events.writeStream.foreachBatch(carried(router)).outputMode("append")
    writer = with_trigger(writer, spec.runtime)
    return writer.option("checkpointLocation", checkpoint_dir).queryName(query_name(channel))


def with_data_text(healthy: DataFrame) -> DataFrame:
    """What the error gate hands the sink of a channel that writes its data as read: the
    events and their records' text (:func:`pipelines.query.writes_data_as_read`)."""
    from pipelines.cloudevents import EVENT_COLUMNS

    return healthy.select(*EVENT_COLUMNS, DEFERRED_TEXT)


def record_empty_batches(
    spark: SparkSession, spec: ChannelSpec | Mapping[str, object], batch_ids: range
) -> None:
    """Record micro-batches that carry no events in a sink that logs every batch id.

    A files sink's ``_spark_metadata`` log must hold every batch id (its readers fail on a
    gap); a batch added to the checkpoint without being run (the runtime moving offsets) is
    written to it as an empty batch. Ids it already has are skipped, as in a replay. Other
    sinks keep no per-batch log: nothing to do.
    """
    from pipelines.cloudevents import EVENT_SCHEMA
    from pipelines.sinks.files import write_files_batch

    spec = validate_spec(spec)
    empty = spark.createDataFrame([], EVENT_SCHEMA)
    for stage in _batch_logged_sinks(spec):
        config = parse_stage_config("sink", stage)
        assert isinstance(config, FilesSinkConfig)  # the stage's type is "files"
        for batch_id in batch_ids:
            write_files_batch(empty, config, batch_id)


def _batch_logged_sinks(spec: ChannelSpec) -> list[StageSpec]:
    """The channel's sinks (its sinks, its dead-letter sink) that log every batch id."""
    stages = [stage for _, stage in spec.sink_stages()] + [spec.errors.dead_letter]
    return [stage for stage in stages if stage is not None and stage.type == "files"]


class StrictRetriedSink:
    """``errors.tolerance: none`` with a retried sink: the ``foreachBatch`` function that
    persists each micro-batch (each attempt reads it again) and writes it under the retry
    policy; a write that still fails after it fails the query (``RetriesExhausted``). The
    batch is computed before the first attempt, so a bad event fails it at once, as
    without a policy."""

    def __init__(self, write: Callable[[DataFrame, int], DataFrame | None]) -> None:
        self.write = write

    def __call__(self, batch: DataFrame, batch_id: int) -> None:
        from pipelines.cloudevents import select_event_columns

        events = select_event_columns(batch).persist(StorageLevel.MEMORY_AND_DISK)
        try:
            # Computed (and cached) first: a bad event fails the batch here with its own
            # message (the error gate), not as a sink write that would be retried.
            events.count()
            self.write(events, batch_id)
        finally:
            events.unpersist()


def schema_watch(source: StageSpec) -> Callable[[DataFrame], None] | None:
    """For a Kafka source in a wire format: the check that fails a batch naming schema
    versions registered after the query was built (:class:`pipelines.wire.NewVersionWatch`)."""
    if source.type != "kafka":
        return None
    config = parse_stage_config("source", source)
    assert isinstance(config, KafkaSourceConfig)
    if config.schema_registry is None:  # set (defaults filled in) for wire formats only
        return None
    from pipelines.spec.configs.schema_registry import default_subject
    from pipelines.wire import NewVersionWatch

    subject = default_subject(config.schema_registry, config.topics[0] if config.topics else None)
    assert subject is not None
    return NewVersionWatch(config.schema_registry, subject, config.format)
