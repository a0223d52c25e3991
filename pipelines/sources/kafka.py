"""Kafka source: read records from topics and turn each into a CloudEvent.

Reading is a thin edge (:func:`read_kafka`); the conversion is a pure function of a DataFrame
with Spark's Kafka source schema (``key``, ``value``, ``topic``, ``partition``, ``offset``,
``timestamp``, ...), so it is tested on small batch DataFrames without Kafka.

* ``format: json`` - the value is any JSON document; it becomes ``data`` of a new event with
  ``id = "{topic}/{partition}/{offset}"`` (stable across replays), ``source =
  "kafka://{topic}"``, ``type = "sluice.kafka.record"``, ``specversion = "1.0"``, ``time`` =
  the record timestamp and ``datacontenttype = "application/json"``.
* ``format: cloudevents`` - the value is a structured-mode CloudEvent (JSON object with
  ``specversion`` "1.0", ``id``, ``source``, ``type``, optional attributes, extensions and
  ``data``).
* ``format: cloudevents-binary`` - CloudEvents Kafka binding, binary mode: the attributes are
  ``ce_*`` headers (``ce_id``, ``ce_source``, ``ce_type``, ``ce_specversion`` required;
  ``ce_time``, ``ce_subject``, ``ce_dataschema`` optional; every other ``ce_*`` header is an
  extension with a string value), the ``content-type`` header is ``datacontenttype`` and the
  value is the data: parsed as JSON when the content type is JSON (``application/json``,
  ``*/*+json``) or absent, otherwise kept as UTF-8 text (a VARIANT string; byte payloads are
  not kept exactly). A NULL value is an event without data. Header names are matched without
  regard to case; when a header repeats, the last one wins.
* ``format: raw`` - the value as UTF-8 text, never parsed and never refused: a VARIANT string
  under ``data`` of an event wrapped as for ``json``, ``datacontenttype = "text/plain;
  charset=utf-8"``.

In every format the record's key is kept as the event's ``partitionkey`` extension (the
CloudEvents Kafka binding), unless the event names its own: a Kafka sink writes it back as the
record's key, so partitioning, ordering per key and compaction survive a channel. A key that is
not UTF-8 text (a serialized Avro key, say) is not kept; the sink's ``key_field`` then chooses.

A record whose value is not valid JSON (or, for ``cloudevents``, not a valid CloudEvent)
becomes a failed event (:mod:`pipelines.errors`) whose message names its topic, partition and
offset: the channel's error policy fails the query or sends it to the dead-letter target.
Records with a NULL value (tombstones) carry no event and are skipped, except in binary mode.
"""

from __future__ import annotations

import json
from collections.abc import Sequence

from pyspark.sql import Column, DataFrame, SparkSession
from pyspark.sql import functions as F

from pipelines import native
from pipelines.cloudevents import (
    EVENT_COLUMNS,
    JSON_CONTENT_TYPE,
    OPTIONAL_STRING_ATTRIBUTES,
    PARTITION_KEY,
    RESERVED_MEMBERS,
    SPECVERSION,
    no_extensions,
    select_event_columns,
)
from pipelines.errors import SNIPPET_CHARS, mark_failures, no_failure
from pipelines.kafka_options import security_options
from pipelines.plan import computed_once
from pipelines.spec.configs import KafkaSourceConfig
from pipelines.spec.configs.kafka import OffsetsStart, TimestampStart
from pipelines.spec.configs.schema_registry import WIRE_FORMATS, default_subject

KAFKA_RECORD_TYPE = "sluice.kafka.record"
RAW_CONTENT_TYPE = "text/plain; charset=utf-8"
BINARY_REQUIRED_HEADERS = ("ce_specversion", "ce_id", "ce_source", "ce_type")
BINARY_ATTRIBUTE_HEADERS = (
    *BINARY_REQUIRED_HEADERS,
    "ce_time",
    "ce_subject",
    "ce_dataschema",
    "ce_datacontenttype",
)
"""Headers that carry a context attribute (the other ``ce_*`` headers are extensions)."""
JSON_MEDIA_TYPE = r"^\s*[a-z0-9.+-]+/([a-z0-9.-]*\+)?json\s*(;.*)?$"
"""A JSON content type: application/json, text/json, application/cloudevents+json, ..."""


OFFSETS_TIMEOUT_MS = 15_000
"""``kafka.default.api.timeout.ms`` unless a channel sets its own: how long Spark's offset
reader waits for one attempt to list a topic's offsets. Kafka's 60 s default held every
micro-batch of a channel for a minute when a broker leading one of its partitions was killed
(the admin client waited for the dead leader; the fault suite's killed-broker test); Spark
tries again (``fetchOffset.numRetries``, 3) and the next attempt finds the new leader."""
REQUEST_TIMEOUT_MS = 10_000
"""``kafka.request.timeout.ms`` unless a channel sets its own: Kafka's clients refuse an API
timeout shorter than the request timeout (30 s by default)."""


FETCH_DEFAULTS = {"kafka.max.poll.records": "10000", "kafka.max.partition.fetch.bytes": "2097152"}
"""How the source's consumers fetch unless a channel sets its own. Spark's Kafka reader asks
the broker for the partition's first and last offsets after every ``poll``: with Kafka's 500
records a poll, that listing was 6 % of a draining channel's CPU and the fetch as a whole 24 %
(JFR, the data-plane benchmark); with polls of up to 10,000 records the fetch is 15 %. Fetches
of up to 2 MiB a partition (Kafka's default: 1 MiB) let a poll find that many records; their
own share was not measured apart."""


MICRO_BATCH_FETCH = {"kafka.fetch.max.wait.ms": "0"}
"""How the source's consumers fetch in a micro-batch unless a channel sets its own: without
waiting at the broker for records that are not there yet. A micro-batch task reads an offset
range that exists, and after each poll Kafka's consumer already asks for the next records
while Spark's reader asks for the partition's first and last offsets, on the same connection:
at the end of the log that fetch waited at the broker (up to ``fetch.max.wait.ms``, 500 ms by
default) until a record arrived, and the offsets' answers behind it. At 5,000 events/s this
took a micro-batch's p99 latency from 248 to 215 ms and its p99.9 from 591 to 249 ms
(``python -m bench.dataplane --only latency``). Not in real-time mode, whose tasks poll
without end: there the wait is what keeps an idle consumer from asking again at once."""


def offsets_timeouts(properties: dict[str, str]) -> dict[str, str]:
    """The timeouts Sluice sets for the source's Kafka clients, given the channel's own
    properties: none that the channel sets, and an API timeout never shorter than the
    request timeout."""
    if "kafka.default.api.timeout.ms" in properties:
        return {}
    request = properties.get("kafka.request.timeout.ms")
    if request is not None:
        return {"kafka.default.api.timeout.ms": str(max(OFFSETS_TIMEOUT_MS, int(request)))}
    return {
        "kafka.default.api.timeout.ms": str(OFFSETS_TIMEOUT_MS),
        "kafka.request.timeout.ms": str(REQUEST_TIMEOUT_MS),
    }


def kafka_source_options(
    config: KafkaSourceConfig, *, headers: bool = False, real_time: bool = False
) -> dict[str, str]:
    """The options given to Spark's Kafka source (``format("kafka")``).

    Starting offsets map to ``startingOffsets`` (``earliest``, ``latest`` or the per-partition
    JSON) or to ``startingTimestamp`` with ``startingOffsetsByTimestampStrategy=latest``, so a
    partition with no record at or after the time starts at its end instead of failing.
    Offsets are listed with :data:`OFFSETS_TIMEOUT_MS` per attempt unless the channel's
    properties say otherwise (:func:`offsets_timeouts`). Consumers fetch as
    :data:`FETCH_DEFAULTS` and, unless the query runs in ``real_time`` mode,
    :data:`MICRO_BATCH_FETCH` say.
    """
    options = {
        "kafka.bootstrap.servers": config.bootstrap_servers,
        **offsets_timeouts(config.properties),
        **FETCH_DEFAULTS,
        **({} if real_time else MICRO_BATCH_FETCH),
    }
    if config.topics is not None:
        options["subscribe"] = ",".join(config.topics)
    else:
        options["subscribePattern"] = str(config.topic_pattern)
    start = config.starting_offsets
    if isinstance(start, TimestampStart):
        options["startingTimestamp"] = str(start.millis)
        options["startingOffsetsByTimestampStrategy"] = "latest"
    elif isinstance(start, OffsetsStart):
        options["startingOffsets"] = json.dumps(start.offsets, separators=(",", ":"))
    else:
        options["startingOffsets"] = start
    if config.max_events_per_trigger is not None:
        options["maxOffsetsPerTrigger"] = str(config.max_events_per_trigger)
    if config.format == "cloudevents-binary" or headers:
        options["includeHeaders"] = "true"
    return {**options, **security_options(config.security), **config.properties}


def read_kafka(
    spark: SparkSession,
    config: KafkaSourceConfig,
    *,
    headers: bool = False,
    real_time: bool = False,
) -> DataFrame:
    """Streaming DataFrame of the raw records of the configured topics (with their
    ``headers`` when asked, or when the format reads them), for a query in real-time mode
    when ``real_time`` (see :func:`kafka_source_options`)."""
    options = kafka_source_options(config, headers=headers, real_time=real_time)
    return spark.readStream.format("kafka").options(**options).load()


def json_records_checked(records: DataFrame, *, keep_payload: bool) -> DataFrame:
    """Records of a ``format: json`` source checked but never parsed, for a channel that
    writes them as they are (a pass-through, :func:`pipelines.passthrough.passes_through`):
    Spark's ``key``, ``value``, ``headers`` and ``timestamp`` with ``failure`` set on each
    record whose value is not valid JSON (the failure :func:`kafka_records_to_events` gives
    it, checked by :func:`pipelines.native.is_valid_json` without building the value),
    ``origin_*`` and, for failed records only, ``id`` (as an event's) and, with
    ``keep_payload``, ``origin_payload``: what a dead letter needs. Tombstones are skipped,
    as in the event path."""
    present = records.filter(F.col("value").isNotNull())
    rows = present.select(
        "key",
        "value",
        "headers",
        "timestamp",
        F.col("topic").alias("origin_topic"),
        F.col("partition").alias("origin_partition"),
        F.col("offset").alias("origin_offset"),
        F.col("timestamp").alias("origin_timestamp"),
        F.col("value").cast("string").alias("_text"),
        no_failure().alias("failure"),
    )
    valid = native.is_valid_json(rows, "_text")
    checked = _fail_on_problem(rows, F.when(~valid, F.lit("value is not valid JSON")))
    failed = F.col("failure").isNotNull()
    payload = F.col("_text") if keep_payload else F.lit(None).cast("string")
    return checked.select(
        "*",
        F.when(failed, F.concat_ws("/", "origin_topic", "origin_partition", "origin_offset")).alias(
            "id"
        ),
        F.when(failed, payload).alias("origin_payload"),
    ).drop("_text")


def kafka_records_to_events(
    records: DataFrame,
    config: KafkaSourceConfig,
    *,
    data_paths: Sequence[Sequence[str]] | None = None,
) -> DataFrame:
    """Turn Kafka records into events (:data:`pipelines.cloudevents.EVENT_SCHEMA`).

    Skips tombstones; the resulting DataFrame fails, when evaluated, on the first record
    that cannot be read (see the module docstring).

    ``data_paths`` (``format: json`` only; the session must have Sluice's functions): the
    events' ``data`` holds only the members on those paths (checked as a whole all the
    same: a record that is not valid JSON fails as without them), for filters that read
    nothing else, and the record's text follows in :data:`DEFERRED_TEXT` until
    :func:`parse_deferred_data` parses the whole data of the events the filters kept.
    """
    if config.format == "cloudevents-binary":
        return binary_records_to_events(records)
    records = records.filter(F.col("value").isNotNull())
    if config.format in WIRE_FORMATS:
        return wire_records_to_events(records, config)
    if config.format == "cloudevents":
        return structured_records_to_events(records)
    if config.format == "raw":
        return raw_records_to_events(records)
    return json_records_to_events(records, data_paths)


DEFERRED_TEXT = "_sluice_data_text"
"""The record's text, carried beside events whose ``data`` is pruned (see
:func:`kafka_records_to_events`) until :func:`parse_deferred_data`."""


def json_records_to_events(
    records: DataFrame, data_paths: Sequence[Sequence[str]] | None = None
) -> DataFrame:
    """Wrap records whose value is plain JSON into events (``format: json``); with
    ``data_paths``, their data pruned (see :func:`kafka_records_to_events`)."""
    origin = _with_origin(records)
    if data_paths is None:
        data = native.try_parse_json(origin, "_text")
    else:
        data = native.try_parse_json_pruned(origin, "_text", data_paths)
    parsed = origin.withColumn("data", computed_once(data))
    checked = _fail_on_problem(
        parsed, F.when(F.col("data").isNull(), F.lit("value is not valid JSON"))
    )
    if data_paths is None:
        return _wrapped(checked, JSON_CONTENT_TYPE)
    return _wrapped(
        checked.withColumn(DEFERRED_TEXT, F.col("_text")), JSON_CONTENT_TYPE, DEFERRED_TEXT
    )


def parse_deferred_data(events: DataFrame) -> DataFrame:
    """Events whose data was pruned (see :func:`kafka_records_to_events`) with their whole
    data, parsed from :data:`DEFERRED_TEXT` (then dropped): once per event that reaches it."""
    data = computed_once(native.try_parse_json(events, DEFERRED_TEXT))
    return events.withColumn("data", data).drop(DEFERRED_TEXT)


def wire_records_to_events(records: DataFrame, config: KafkaSourceConfig) -> DataFrame:
    """Decode records in Confluent's wire format (``avro``, ``protobuf``, ``json-schema``) into
    events wrapped as for ``json`` (:mod:`pipelines.wire`); the subject's schemas are read from the
    registry now, when the query is built."""
    from pipelines import wire  # spark-avro's Python functions only when a stage needs them

    assert config.schema_registry is not None  # validation fills it in for wire formats
    subject = default_subject(config.schema_registry, config.topics[0] if config.topics else None)
    assert subject is not None  # validated: a subject, or exactly one topic
    schemas = wire.subject_schemas(config.schema_registry, subject, config.format)
    framed, schema_id, payload = wire.wire_header(F.col("value"))
    whole = [F.col("value").alias("_value")] if config.format == wire.PROTOBUF else []
    origin = _with_origin(
        records,
        framed.alias("_framed"),
        schema_id.alias("_schema_id"),
        payload.alias("_payload"),
        F.base64(F.col("value")).alias("_value_base64"),
        *whole,
    ).withColumn("origin_payload", F.col("_value_base64"))  # binary: kept as base64
    if config.format == wire.PROTOBUF:
        # Sluice's protobuf_decode reads the header's message indexes itself: the whole value.
        wire.require_protobuf_functions(records.sparkSession)
        plan = wire.protobuf_decode_plan(config.schema_registry, schemas)
        with_data = origin.withColumn("data", computed_once(wire.decode_protobuf("_value", plan)))
        what, decoded_ok = "Protobuf", F.col("data").isNotNull()
    elif config.format == wire.AVRO:
        spark = records.sparkSession
        data_type = wire.avro_spark_type(spark, schemas.latest.schema)
        decoded = computed_once(wire.decode_avro(F.col("_payload"), F.col("_schema_id"), schemas))
        # Both computed once: the filter after the source refers to data once per field.
        with_data = origin.withColumn("_decoded", decoded).withColumn(
            "data", computed_once(wire.to_variant(F.col("_decoded"), data_type))
        )
        what, decoded_ok = "Avro", wire.avro_decoded(F.col("_decoded"), schemas)
    else:
        with_text = origin.withColumn("_text", F.col("_payload").cast("string"))
        with_data = with_text.withColumn(
            "data", computed_once(native.try_parse_json(with_text, "_text"))
        )
        what, decoded_ok = "JSON", F.col("data").isNotNull()
    problem, error_class = wire.wire_problem(
        F.col("_framed"), F.col("_schema_id"), decoded_ok, schemas, what
    )
    location = F.concat(
        F.lit("Kafka record topic="),
        F.col("origin_topic"),
        F.lit(" partition="),
        F.col("origin_partition").cast("string"),
        F.lit(" offset="),
        F.col("origin_offset").cast("string"),
        F.lit(": "),
    )
    checked = mark_failures(
        with_data, [(problem.isNotNull(), error_class, F.concat(location, problem))], source=True
    )
    return _wrapped(checked, JSON_CONTENT_TYPE)


def raw_records_to_events(records: DataFrame) -> DataFrame:
    """Wrap each value, as UTF-8 text, into an event (``format: raw``); never fails."""
    with_text = _with_origin(records).withColumn("data", F.col("_text").cast("variant"))
    return _wrapped(with_text, RAW_CONTENT_TYPE)


def _wrapped(records: DataFrame, content_type: str, *carried: str) -> DataFrame:
    """Events around ``data``, identified by where each record came from (then the
    ``carried`` columns of ``records``)."""
    events = records.select(
        F.concat_ws("/", "origin_topic", "origin_partition", "origin_offset").alias("id"),
        F.concat(F.lit("kafka://"), F.col("origin_topic")).alias("source"),
        F.lit(SPECVERSION).alias("specversion"),
        F.lit(KAFKA_RECORD_TYPE).alias("type"),
        F.lit(None).cast("string").alias("subject"),
        F.col("origin_timestamp").alias("time"),
        F.lit(content_type).alias("datacontenttype"),
        F.lit(None).cast("string").alias("dataschema"),
        _with_key(no_extensions()).alias("extensions"),
        "data",
        "origin_topic",
        "origin_partition",
        "origin_offset",
        "origin_timestamp",
        "origin_payload",
        "failure",
        *carried,
    )
    return events.select(*EVENT_COLUMNS, *carried)


def structured_records_to_events(records: DataFrame, *, keep_key: bool = True) -> DataFrame:
    """Read records whose value is a structured-mode CloudEvent (``format: cloudevents``).
    ``keep_key=False``: the records' keys are Sluice's own (an HTTP source's ingest topic,
    keyed by event id), not the user's: no ``partitionkey`` is taken from them."""
    origin = _with_origin(records, keep_key=keep_key)
    parsed = origin.withColumn("_event", computed_once(native.try_parse_json(origin, "_text")))
    with_attributes = parsed.select("*", *_structured_attributes(F.col("_event")))
    checked = _fail_on_problem(with_attributes, _structured_problem())
    events = checked.withColumn("time", F.try_to_timestamp("_time")).withColumn(
        "data", F.try_variant_get("_event", "$.data", "variant")
    )
    return select_event_columns(
        events.withColumn("extensions", _with_key(_extensions(F.col("_event"))))
    )


def binary_records_to_events(records: DataFrame) -> DataFrame:
    """Read binary-mode CloudEvents: attributes in ``ce_*`` headers, data in the value."""
    with_headers = _with_origin(records, F.expr(_HEADER_MAP_SQL).alias("_headers"))
    attributes = with_headers.select(
        "*",
        *(_header(f"ce_{name}").alias(name) for name in ("specversion", "id", "source", "type")),
        *(_header(f"ce_{name}").alias(name) for name in ("subject", "dataschema")),
        _header("ce_time").alias("_time"),
        F.coalesce(_header("content-type"), _header("ce_datacontenttype")).alias("datacontenttype"),
    )
    is_json = F.col("datacontenttype").isNull() | F.lower("datacontenttype").rlike(JSON_MEDIA_TYPE)
    with_data = attributes.withColumn(
        "data",
        computed_once(
            F.when(is_json, native.try_parse_json(attributes, "_text")).otherwise(
                F.col("_text").cast("variant")
            )
        ),
    ).withColumn("_bad_json", is_json & F.col("_text").isNotNull() & F.col("data").isNull())
    checked = _fail_on_problem(with_data, _binary_problem())
    events = checked.withColumn("time", F.try_to_timestamp("_time")).withColumn(
        "extensions", _with_key(F.expr(_HEADER_EXTENSIONS_SQL))
    )
    return select_event_columns(events)


_HEADER_MAP_SQL = (
    "aggregate(coalesce(headers, CAST(array() AS array<struct<key:string,value:binary>>)), "
    "CAST(map() AS map<string,string>), (acc, h) -> map_concat("
    "map_filter(acc, (k, v) -> k != lower(h.key)), map(lower(h.key), CAST(h.value AS STRING))))"
)
"""The record's headers as a map from lower-case name to UTF-8 text (the last one wins)."""
_HEADER_EXTENSIONS_SQL = (
    "transform_keys(transform_values(map_filter(_headers, (k, v) -> startswith(k, 'ce_') AND "
    f"NOT k IN ({', '.join(repr(name) for name in BINARY_ATTRIBUTE_HEADERS)})), "
    "(k, v) -> CAST(v AS VARIANT)), (k, v) -> substring(k, 4))"
)


def _header(name: str) -> Column:
    return F.try_element_at(F.col("_headers"), F.lit(name))


def _binary_problem() -> Column:
    """Why a binary-mode record is not a usable CloudEvent (NULL when it is)."""
    problem = _attribute_problems(
        F.when(F.lit(False), F.lit(None).cast("string")),
        missing="not a binary-mode CloudEvent: header 'ce_{name}' is missing",
        time_name="header 'ce_time'",
    )
    return problem.when(
        F.col("_bad_json"),
        F.concat(
            F.lit("value is not valid JSON (content-type "),
            F.coalesce("datacontenttype", F.lit("absent")),
            F.lit(")"),
        ),
    )


def _with_origin(records: DataFrame, *more: Column, keep_key: bool = True) -> DataFrame:
    key = _record_key(records) if keep_key else F.lit(None).cast("string")
    return records.select(
        key.alias("_key"),
        F.col("topic").alias("origin_topic"),
        F.col("partition").alias("origin_partition"),
        F.col("offset").alias("origin_offset"),
        F.col("timestamp").alias("origin_timestamp"),
        F.col("value").cast("string").alias("_text"),
        F.col("value").cast("string").alias("origin_payload"),
        no_failure().alias("failure"),
        *more,
    )


def _structured_attributes(event: Column) -> list[Column]:
    strings = ("id", "source", "specversion", "type", *OPTIONAL_STRING_ATTRIBUTES)
    columns = [F.try_variant_get(event, f"$.{name}", "string").alias(name) for name in strings]
    return [
        *columns,
        F.try_variant_get(event, "$.time", "string").alias("_time"),
        F.try_variant_get(event, "$.data_base64", "variant").isNotNull().alias("_binary"),
    ]


def _structured_problem() -> Column:
    """Why a parsed structured record is not a usable CloudEvent (NULL when it is)."""
    problem = _attribute_problems(
        F.when(F.col("_event").isNull(), F.lit("value is not valid JSON")),
        missing="value is not a CloudEvent: attribute '{name}' is missing",
        time_name="attribute 'time'",
    )
    return problem.when(F.col("_binary"), F.lit("data_base64 (binary data) is not supported yet"))


def _attribute_problems(problem: Column, *, missing: str, time_name: str) -> Column:
    """``problem`` (a CASE WHEN chain) extended with the checks every CloudEvent must pass.

    ``missing`` is the message for an absent required attribute (``{name}`` is replaced);
    ``time_name`` names where the time came from in the message for an unreadable time.
    """
    for name in ("specversion", "id", "source", "type"):
        problem = problem.when(
            F.col(name).isNull() | (F.col(name) == ""), F.lit(missing.format(name=name))
        )
    return problem.when(
        F.col("specversion") != SPECVERSION,
        F.concat(F.lit("unsupported CloudEvents specversion "), F.col("specversion")),
    ).when(
        F.col("_time").isNotNull() & F.try_to_timestamp("_time").isNull(),
        F.concat(F.lit(f"{time_name} is not an RFC 3339 timestamp: "), F.col("_time")),
    )


def _record_key(records: DataFrame) -> Column:
    """The record's key as text: NULL when it has none, or when it is not UTF-8 (such a key
    is not kept; see the module docstring). Records without a ``key`` column (read from
    elsewhere than Spark's Kafka source) have none."""
    if "key" not in records.columns:
        return F.lit(None).cast("string")
    return F.when(F.is_valid_utf8(F.col("key")), F.col("key").cast("string"))


def _with_key(extensions: Column) -> Column:
    """``extensions`` with the record's key as ``partitionkey`` (the CloudEvents Kafka
    binding), unless the event names its own or the record has no key."""
    keyed = F.map_concat(
        extensions, F.create_map(F.lit(PARTITION_KEY), F.col("_key").cast("variant"))
    )
    return F.when(
        F.col("_key").isNull() | F.map_contains_key(extensions, F.lit(PARTITION_KEY)), extensions
    ).otherwise(keyed)


def _extensions(event: Column) -> Column:
    """Members of the JSON object that are not CloudEvents core members."""
    members = F.try_variant_get(event, "$", "map<string,variant>")
    kept = F.map_filter(members, lambda name, _: ~name.isin(*RESERVED_MEMBERS))
    return F.coalesce(kept, no_extensions())


def _fail_on_problem(df: DataFrame, problem: Column) -> DataFrame:
    """Mark the rows whose ``problem`` is not NULL as failed (see :mod:`pipelines.errors`).

    The message names the record: ``Kafka record topic=orders partition=3 offset=42: value
    is not valid JSON (value starts with: ...)``; the error class is ``InvalidJson`` or
    ``InvalidCloudEvent``.
    """
    location = F.concat(
        F.lit("Kafka record topic="),
        F.col("origin_topic"),
        F.lit(" partition="),
        F.col("origin_partition").cast("string"),
        F.lit(" offset="),
        F.col("origin_offset").cast("string"),
        F.lit(": "),
    )
    snippet = F.concat(
        F.lit(" (value starts with: "), F.substring("_text", 1, SNIPPET_CHARS), F.lit(")")
    )
    error_class = F.when(problem.startswith("value is not valid JSON"), "InvalidJson").otherwise(
        "InvalidCloudEvent"
    )
    message = F.concat(location, problem, snippet)
    return mark_failures(df, [(problem.isNotNull(), error_class, message)], source=True)
