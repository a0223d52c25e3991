"""Kafka sink: serialize events into Kafka records and write them to topics.

Each record gets:

* ``key`` - the text of ``key_field`` (a path in the event's JSON form) when set and present,
  else the ``partitionkey`` extension (CloudEvents Partitioning), else the event id; UTF-8.
* ``topic`` - the text of ``topic_field`` when set and present, else the ``sluicetopic``
  extension (set by the ``route`` transform), else the configured ``topic``. An event whose
  topic is not a legal Kafka topic name fails (:func:`mark_bad_topics`, error class
  ``InvalidTopic``) with a message naming the event.
* ``value`` - ``format: json``: the event's ``data`` as JSON text (NULL when the event has
  no data, i.e. a tombstone); ``format: cloudevents``: the whole event as structured-mode
  CloudEvents JSON; ``format: cloudevents-binary``: the data (JSON text; a string under a
  non-JSON ``datacontenttype`` such as ``text/plain`` is written as the text itself).
* ``headers`` - ``content-type``: ``application/json``,
  ``application/cloudevents+json; charset=UTF-8`` (structured mode), or in binary mode the
  event's ``datacontenttype`` (no header when it has none) plus one ``ce_<name>`` header per
  attribute and extension that is set (``ce_time`` as RFC 3339 UTC; non-string extension
  values as JSON text). The formats that write the data alone (``json``, ``avro``,
  ``protobuf``, ``json-schema``) would drop a replay's or redrive's marks with the rest of the
  event, so a run's events get them as headers of their own: ``sluicereplay`` (the run id)
  and ``sluicerun`` (``replay`` or ``redrive``), see :data:`pipelines.spec.runs.RUN_MARKERS`.

Serialization is a pure function (:func:`events_to_kafka_records`); writing is a thin edge.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from pyspark.sql import Column, DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql.streaming.readwriter import DataStreamWriter

from pipelines import native
from pipelines.cloudevents import (
    JSON_CONTENT_TYPE,
    PARTITION_KEY,
    STRUCTURED_CONTENT_TYPE,
    attribute_sql,
    binary_data_sql,
    data_text,
    event_json,
    event_json_of_text,
    time_text_sql,
    variant_text_sql,
)
from pipelines.errors import mark_failures
from pipelines.kafka_options import kafka_sink_options
from pipelines.plan import computed_once
from pipelines.sources.kafka import DEFERRED_TEXT, JSON_MEDIA_TYPE
from pipelines.spec import reach
from pipelines.spec.configs import KafkaSinkConfig
from pipelines.spec.configs.schema_registry import WIRE_FORMATS, default_subject
from pipelines.spec.runs import RUN_MARKERS
from pipelines.sql import sql_string

if TYPE_CHECKING:
    from pipelines.wire import WireWriter

CONTENT_TYPE_HEADER = "content-type"
TOPIC_EXTENSION = "sluicetopic"
LEGAL_TOPIC = "^[A-Za-z0-9._-]{1,249}$"
"""Producer settings of every Kafka sink unless its ``properties`` say otherwise. Spark's
connector ships kafka-clients 3.9, whose defaults (``linger.ms=0``, ``batch.size=16384``:
~30 CloudEvents per produce request) cost a pass-through channel ~10 % more CPU per event
than MirrorMaker 2 (``python -m bench.dataplane --only mirror``); Kafka 4 itself moved
``linger.ms`` to 5 (KIP-1030). A micro-batch waits for its sends to finish anyway, so 5 ms
of linger adds nothing to its latency that the batch did not already have."""


def events_to_kafka_records(
    events: DataFrame, config: KafkaSinkConfig, *, topic: Column | None = None
) -> DataFrame:
    """Rows for Spark's Kafka sink: ``topic``, ``key``, ``value`` (binary) and ``headers``.

    Events whose topic is not a legal name are failed before (:func:`mark_bad_topics`).
    ``topic`` overrides :func:`record_topic` (a bus writes several targets' rows at once,
    each with its own target's topic). Events that still carry their record's text
    (:data:`pipelines.sources.kafka.DEFERRED_TEXT`, in formats ``cloudevents`` and ``json``
    only) are written with it as their data (:func:`pipelines.query.writes_data_as_read`).
    """
    if config.format in WIRE_FORMATS:
        writer = sink_wire_writer(events.sparkSession, config)
        struct = F.col(WIRE_STRUCT) if WIRE_STRUCT in events.columns else None
        value = writer.value(native.to_json(events, "data"), struct)
        headers = _with_run_marks(
            F.array(_header(CONTENT_TYPE_HEADER, F.lit(WIRE_CONTENT_TYPES[config.format])))
        )
    elif config.format == "cloudevents-binary":
        value, headers = F.expr(_BINARY_VALUE_SQL), F.expr(_binary_headers_sql())
    elif config.format == "cloudevents":
        zone = native.json_zone(events)
        if DEFERRED_TEXT in events.columns:  # data as read (pipelines.query.writes_data_as_read)
            assert zone is not None, "data as read needs Sluice's functions"
            value = event_json_of_text(F.col(DEFERRED_TEXT), zone)
        else:
            value = event_json(zone)
        headers = F.array(_header(CONTENT_TYPE_HEADER, F.lit(STRUCTURED_CONTENT_TYPE)))
    else:
        if DEFERRED_TEXT in events.columns:
            value = data_text(F.col(DEFERRED_TEXT))
        else:
            value = native.to_json(events, "data")
        headers = _with_run_marks(F.array(_header(CONTENT_TYPE_HEADER, F.lit(JSON_CONTENT_TYPE))))
    key = F.coalesce(*_field_text(config.key_field), _text(PARTITION_KEY), F.col("id"))
    records = events.select(
        (record_topic(config) if topic is None else topic).alias("topic"),
        key.cast("binary").alias("key"),
        value.cast("binary").alias("value"),
        headers.alias("headers"),
    )
    return records


WIRE_STRUCT = "_wire_struct"
"""The column in which the sink's check leaves an Avro sink's data in the schema's type, a
Protobuf sink's encoded record (so the check and the write read the VARIANT once)."""
WIRE_CONTENT_TYPES = {
    "avro": "application/vnd.apache.avro+binary",
    "protobuf": "application/x-protobuf",
    "json-schema": JSON_CONTENT_TYPE,
}
"""The content-type header of records in a wire format."""


def sink_wire_writer(spark: SparkSession, config: KafkaSinkConfig) -> WireWriter:
    """How a sink in a wire format writes (its subject's latest version, from the registry)."""
    from pipelines.wire import wire_writer

    assert config.schema_registry is not None  # validation fills it in for wire formats
    subject = default_subject(config.schema_registry, config.topic)
    assert subject is not None
    return wire_writer(spark, config.format, config.schema_registry, subject)


def record_topic(config: KafkaSinkConfig) -> Column:
    """The topic an event goes to (see the module docstring)."""
    return F.coalesce(*_field_text(config.topic_field), _text(TOPIC_EXTENSION), F.lit(config.topic))


def invalid_topic_message(topic: Column) -> Column:
    """``event <id>: <topic> is not a valid Kafka topic name``, the failure of such an event
    (or, for a legal name outside the team's reach, :func:`topic_refusal`'s reason)."""
    return F.concat(
        F.lit("event "),
        F.col("id"),
        F.lit(": "),
        F.coalesce(topic, F.lit("(no topic)")),
        topic_refusal(topic),
    )


def within_reach(topic: Column) -> Column | None:
    """Whether ``topic`` starts with a prefix of the team's reach in effect
    (:mod:`pipelines.spec.reach`); ``None`` when it limits no topic. An event's topic
    (``topic_field``, the ``sluicetopic`` extension) is only known as it is written."""
    limited = reach.topic_prefixes()
    if limited is None:
        return None
    allowed = F.lit(False)
    for prefix in limited[1]:
        allowed = allowed | topic.startswith(prefix)
    return F.coalesce(allowed, F.lit(False))


def topic_refusal(topic: Column) -> Column:
    """Why an event's ``topic`` is refused: `` is not a valid Kafka topic name``, or, for a
    legal name, that it is outside the team's reach."""
    invalid = F.lit(" is not a valid Kafka topic name")
    limited = reach.topic_prefixes()
    if limited is None:
        return invalid
    outside = f" is outside the team's reach: {reach.may_only(*limited)}"
    legal_name = F.coalesce(topic.rlike(LEGAL_TOPIC), F.lit(False))
    return F.when(legal_name, F.lit(outside)).otherwise(invalid)


def topic_error_class(topic: Column) -> Column:
    """``InvalidTopic``, or ``TopicNotAllowed`` for a legal name outside the team's reach."""
    if reach.topic_prefixes() is None:
        return F.lit("InvalidTopic")
    legal_name = F.coalesce(topic.rlike(LEGAL_TOPIC), F.lit(False))
    return F.when(legal_name, F.lit("TopicNotAllowed")).otherwise(F.lit("InvalidTopic"))


def mark_bad_topics(events: DataFrame, config: KafkaSinkConfig) -> DataFrame:
    """Fail (``InvalidTopic``) each event whose topic is not a legal Kafka topic name, and
    (``TopicNotAllowed``) each whose topic is outside the team's reach."""
    topic = record_topic(config)
    message = invalid_topic_message(topic)
    # The configured topic is legal (validated): most events need no regular expression.
    legal = F.coalesce((topic == F.lit(config.topic)) | topic.rlike(LEGAL_TOPIC), F.lit(False))
    checks = [(~legal, "InvalidTopic", message)]
    within = within_reach(topic)
    if within is not None:
        checks.append((legal & ~within, "TopicNotAllowed", message))
    if config.format in WIRE_FORMATS:
        writer = sink_wire_writer(events.sparkSession, config)
        if writer.checks_fit:  # Avro, Protobuf: the data read into the schema once
            events = events.withColumn(WIRE_STRUCT, computed_once(writer.struct()))
            misfit = writer.misfit(F.col(WIRE_STRUCT))
            checks.append((misfit, "DataDoesNotFitSchema", writer.misfit_message()))
    return mark_failures(events, checks)


TIMESTAMP_HEADER = "sluice.record.timestamp"
"""The header in which a copied record's timestamp (epoch milliseconds) reaches the producer,
whose :data:`RECORD_TIMESTAMP_INTERCEPTOR` sets it and drops the header: Spark's Kafka sink
has no timestamp column. Reserved: a record's own header of that name is dropped too."""
RECORD_TIMESTAMP_INTERCEPTOR = "io.sluice.spark.kafka.RecordTimestampInterceptor"


def copied_records(rows: DataFrame, config: KafkaSinkConfig) -> DataFrame:
    """Rows for Spark's Kafka sink from records read as they are
    (:func:`pipelines.sources.kafka.json_records_checked`): a pass-through's copy.

    The value and key are the record's bytes (a record without a key gets its event id, as
    in the event path); the headers are the record's, plus ``content-type:
    application/json`` when it has none of that name, plus the record's timestamp for the
    producer (:data:`TIMESTAMP_HEADER`, written with :func:`copy_options`). The topic is the
    configured one (a pass-through has no ``topic_field``)."""
    located = F.concat_ws("/", "origin_topic", "origin_partition", "origin_offset")
    key = F.coalesce(F.col("key"), located.cast("binary"))
    stamp = _header(TIMESTAMP_HEADER, F.unix_millis("timestamp").cast("string"))
    content_type = _header(CONTENT_TYPE_HEADER, F.lit(JSON_CONTENT_TYPE))
    own = F.col("headers")
    typed = F.exists(own, lambda header: F.lower(header["key"]) == F.lit(CONTENT_TYPE_HEADER))
    # Most records carry no headers: those never reach the lambda (evaluated row by row).
    headers = (
        F.when(own.isNull() | (F.size(own) == 0), F.array(content_type, stamp))
        .when(typed, F.concat(own, F.array(stamp)))
        .otherwise(F.concat(own, F.array(content_type, stamp)))
    )
    return rows.select(
        F.lit(config.topic).alias("topic"),
        key.alias("key"),
        F.col("value"),
        headers.alias("headers"),
    )


def copy_options(config: KafkaSinkConfig) -> dict[str, str]:
    """:func:`~pipelines.kafka_options.kafka_sink_options` with the producer interceptor that
    gives each copied record its timestamp (:data:`TIMESTAMP_HEADER`); a channel cannot set
    interceptors of its own (refused by the config)."""
    return {
        **kafka_sink_options(config),
        "kafka.interceptor.classes": RECORD_TIMESTAMP_INTERCEPTOR,
    }


def write_kafka_copies(records: DataFrame, config: KafkaSinkConfig) -> DataStreamWriter:
    """A streaming writer of :func:`copied_records` (append mode)."""
    return records.writeStream.format("kafka").options(**copy_options(config)).outputMode("append")


def write_kafka_copies_batch(records: DataFrame, config: KafkaSinkConfig, batch_id: int) -> None:
    """Write one micro-batch of :func:`copied_records` (from ``foreachBatch``)."""
    records.write.format("kafka").options(**copy_options(config)).save()


def write_kafka(events: DataFrame, config: KafkaSinkConfig) -> DataStreamWriter:
    """A streaming writer of the events to their topics (append mode)."""
    records = events_to_kafka_records(events, config)
    return (
        records.writeStream.format("kafka")
        .options(**kafka_sink_options(config))
        .outputMode("append")
    )


def write_kafka_batch(events: DataFrame, config: KafkaSinkConfig, batch_id: int) -> None:
    """Write one micro-batch (from ``foreachBatch``); a replayed batch is written again."""
    records = events_to_kafka_records(events, config)
    records.write.format("kafka").options(**kafka_sink_options(config)).save()


def field_text_sql(path: str) -> str:
    """SQL for the text of the member at a dotted ``path`` of an event's JSON form.

    A string is its own text, another JSON value its JSON text; NULL when absent or JSON null.
    """
    head, *rest = path.split(".")
    value = attribute_sql(head)
    if rest:
        json_path = "$" + "".join(_json_path_step(part) for part in rest)
        value = f"try_variant_get({value}, {sql_string(json_path)}, 'variant')"
    return variant_text_sql(value)


def _json_path_step(key: str) -> str:
    return f'["{key}"]' if "'" in key else f"['{key}']"


def _field_text(path: str | None) -> list[Column]:
    return [] if path is None else [F.expr(field_text_sql(path))]


def _text(extension: str) -> Column:
    return F.expr(field_text_sql(extension))


def _header(key: str, value: Column) -> Column:
    return F.struct(F.lit(key).alias("key"), value.cast("binary").alias("value"))


def _with_run_marks(headers: Column) -> Column:
    """``headers`` plus one header per run mark the event carries (a replayed or redriven
    event's :data:`~pipelines.spec.runs.RUN_MARKERS`, which a format writing the data alone
    would otherwise drop). A live event has no extensions at all: its headers stay as they
    are, without the filter's lambda (evaluated row by row outside Spark's generated code)."""
    marks = F.filter(
        F.array(*(_header(name, _text(name)) for name in RUN_MARKERS)),
        lambda header: header["value"].isNotNull(),
    )
    return F.when(F.size("extensions") == 0, headers).otherwise(F.concat(headers, marks))


_BINARY_VALUE_SQL = binary_data_sql(JSON_MEDIA_TYPE)


def _binary_headers_sql() -> str:
    """SQL for binary mode's headers: content-type, then ce_* for each attribute that is set."""

    def header(name: str, text: str) -> str:
        return f"named_struct('key', {sql_string(name)}, 'value', CAST({text} AS BINARY))"

    attributes = [
        header(CONTENT_TYPE_HEADER, "datacontenttype"),
        *(
            header(f"ce_{name}", f"`{name}`")
            for name in ("specversion", "id", "source", "type", "subject", "dataschema")
        ),
        header("ce_time", time_text_sql("`time`")),
    ]
    extensions = (
        "transform(map_entries(extensions), e -> named_struct('key', concat('ce_', e.key), "
        f"'value', CAST({variant_text_sql('e.value')} AS BINARY)))"
    )
    return f"filter(concat(array({', '.join(attributes)}), {extensions}), h -> h.value IS NOT NULL)"
