"""The CloudEvents 1.0 record every stage of a channel works on, and its JSON form.

Inside a query each event is one row with these columns (:data:`EVENT_SCHEMA`):

* ``id``, ``source``, ``specversion``, ``type`` - required string attributes;
* ``subject``, ``datacontenttype``, ``dataschema`` (string), ``time`` (timestamp) - optional
  attributes, NULL when absent;
* ``extensions`` - every other attribute, ``map<string, variant>``, never NULL;
* ``data`` - the payload as VARIANT: SQL NULL when the event has no data, a VARIANT null
  when the data is JSON ``null``;
* ``origin_topic``, ``origin_partition``, ``origin_offset``, ``origin_timestamp`` - where the
  event was read from (error context, dead-letter routing); not part of the event itself;
* ``origin_payload`` - the source record as it was read (UTF-8 text), for dead letters; NULL
  when the channel does not route dead letters (the optimizer then never carries it);
* ``failure`` - NULL while the event is fine; once a stage cannot handle it,
  ``struct<stage, error_class, message, event>`` saying which stage failed, with what, why,
  and on which event. Later stages never fail it again and filters keep it, so it reaches
  the channel's error gate, which fails the query (``errors.tolerance: none``) or sends it
  to the dead-letter target (``all``); see :mod:`pipelines.errors`.

The *JSON form* of an event is the structured-mode CloudEvents JSON object: the attributes at
the top level (absent ones omitted, ``time`` as RFC 3339 UTC text), extensions next to them,
the payload under ``data``. Event patterns match it, and the ``cloudevents`` sink format
writes it.
"""

from __future__ import annotations

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F
from pyspark.sql.types import (
    IntegerType,
    LongType,
    MapType,
    StringType,
    StructField,
    StructType,
    TimestampType,
    VariantType,
)

from pipelines import native
from pipelines.sql import sql_column, sql_string

SPECVERSION = "1.0"
PARTITION_KEY = "partitionkey"
"""The CloudEvents Partitioning extension: a Kafka record's key, read and written as such by
the Kafka source and sink (the CloudEvents Kafka binding)."""
STRUCTURED_CONTENT_TYPE = "application/cloudevents+json; charset=UTF-8"
JSON_CONTENT_TYPE = "application/json"

REQUIRED_ATTRIBUTES = ("id", "source", "specversion", "type")
OPTIONAL_STRING_ATTRIBUTES = ("subject", "datacontenttype", "dataschema")
ATTRIBUTES = (*REQUIRED_ATTRIBUTES, "subject", "time", "datacontenttype", "dataschema")
"""Context attributes with a column of their own, in CloudEvents order."""
RESERVED_MEMBERS = (*ATTRIBUTES, "data", "data_base64")
"""Top-level members of the JSON form that are not extensions."""
ORIGIN_COLUMNS = ("origin_topic", "origin_partition", "origin_offset", "origin_timestamp")
FAILURE_TYPE = StructType(
    [
        StructField("stage", StringType()),
        StructField("error_class", StringType()),
        StructField("message", StringType()),
        StructField("event", StringType()),
    ]
)
"""Why a stage could not handle an event (the ``failure`` column): the stage, an error class,
a message, and the event's JSON text as that stage received it (NULL when the source could
not read the record)."""

EVENT_SCHEMA = StructType(
    [
        *(StructField(name, StringType(), nullable=False) for name in REQUIRED_ATTRIBUTES),
        StructField("subject", StringType()),
        StructField("time", TimestampType()),
        StructField("datacontenttype", StringType()),
        StructField("dataschema", StringType()),
        StructField("extensions", MapType(StringType(), VariantType()), nullable=False),
        StructField("data", VariantType()),
        StructField("origin_topic", StringType()),
        StructField("origin_partition", IntegerType()),
        StructField("origin_offset", LongType()),
        StructField("origin_timestamp", TimestampType()),
        StructField("origin_payload", StringType()),
        StructField("failure", FAILURE_TYPE),
    ]
)
"""Column names and types of an event DataFrame (nullability is informative)."""

EVENT_COLUMNS = tuple(EVENT_SCHEMA.fieldNames())


def select_event_columns(df: DataFrame) -> DataFrame:
    """Project ``df`` onto :data:`EVENT_COLUMNS`, in order (a stage's output contract)."""
    return df.select(*EVENT_COLUMNS)


def time_text_sql(timestamp: str) -> str:
    """SQL rendering a timestamp as RFC 3339 text in UTC, e.g. ``2024-06-01T08:15:30.120Z``.

    Independent of the session time zone (computed from epoch microseconds); fractional
    seconds are written only when present (3 digits for milliseconds, else 6).
    """
    seconds_pattern = "yyyy-MM-dd'T'HH:mm:ss"
    micros = f"unix_micros({timestamp})"
    utc = f"timestampadd(MICROSECOND, {micros}, TIMESTAMP_NTZ '1970-01-01 00:00:00')"
    fraction = f"pmod({micros}, 1000000)"
    millis = f"lpad(CAST({fraction} DIV 1000 AS STRING), 3, '0')"
    fraction_text = (
        f"CASE WHEN {fraction} = 0 THEN '' "
        f"WHEN {fraction} % 1000 = 0 THEN concat('.', {millis}) "
        f"ELSE concat('.', lpad(CAST({fraction} AS STRING), 6, '0')) END"
    )
    # One formatting call for date and time: the pattern's quotes need sql_string's literal.
    seconds = f"date_format({utc}, {sql_string(seconds_pattern)})"
    return f"CASE WHEN {timestamp} IS NOT NULL THEN concat({seconds}, {fraction_text}, 'Z') END"


def time_text(column: str = "time") -> Column:
    """Column twin of :func:`time_text_sql`, for the timestamp column named ``column``."""
    return F.expr(time_text_sql(sql_column(column)))


def attribute_sql(key: str) -> str:
    """SQL for the VARIANT value of the top-level member ``key`` of an event's JSON form.

    NULL when the event has no such member. Serves as the pattern compiler's accessor.
    """
    if key == "data":
        return "`data`"
    if key == "time":
        return f"CAST({time_text_sql('`time`')} AS VARIANT)"
    if key in ATTRIBUTES:
        return f"CAST(`{key}` AS VARIANT)"
    return f"try_element_at(`extensions`, {sql_string(key)})"


def event_variant_sql() -> str:
    """SQL for the whole event in its JSON form, as a VARIANT object."""
    members = ", ".join(
        f"{sql_string(name)}, {attribute_sql(name)}" for name in (*ATTRIBUTES, "data")
    )
    all_members = f"map_concat(`extensions`, map({members}))"
    present = f"map_filter({all_members}, (name, value) -> value IS NOT NULL)"
    return f"to_variant_object({present})"


def event_variant() -> Column:
    """The whole event in its JSON form, as a VARIANT object."""
    return F.expr(event_variant_sql())


def event_json(native_zone: str | None = None) -> Column:
    """The whole event as structured-mode CloudEvents JSON text.

    With ``native_zone`` (the session time zone, given when the session has Sluice's Spark
    functions: :func:`pipelines.native.json_zone`) an event is written with them (``envelope``
    without extensions, ``event`` with them): members in the same order and NULL ones left
    out, so the text is the same.
    """
    if native_zone is not None:
        return F.expr(_native_event_json_sql(native_zone))
    # Spark writes a VARIANT's JSON slowly (a new JSON generator per string, keys included),
    # so an event without extensions (the common case) is written from a struct of its
    # attributes: NULL ones are left out and members come in the order of a VARIANT object
    # (sorted names), so the text is the one to_json(event_variant()) gives. An object data
    # goes in as its member map (same text; its keys are then written by the fast writer).
    data_members = "try_variant_get(`data`, '$', 'map<string,variant>')"

    def attributes_json(data: str) -> str:
        values = {name: f"`{name}`" for name in ATTRIBUTES} | {"data": data}
        values["time"] = time_text_sql("`time`")
        fields = ", ".join(f"{sql_string(name)}, {values[name]}" for name in sorted(values))
        return f"to_json(named_struct({fields}), map('ignoreNullFields', 'true'))"

    no_extensions = "size(`extensions`) = 0"
    return F.expr(
        f"CASE WHEN {no_extensions} AND {data_members} IS NOT NULL "
        f"THEN {attributes_json(data_members)} "
        f"WHEN {no_extensions} THEN {attributes_json('`data`')} "
        f"ELSE to_json({event_variant_sql()}) END"
    )


def _native_event_json_sql(zone: str, data: str = "`data`") -> str:
    members = {name: f"`{name}`" for name in ATTRIBUTES}
    members["time"] = native.time_text("`time`")
    envelope = native.envelope(data, zone, members)
    with_extensions = native.event(data, zone, "`extensions`", members)
    return f"CASE WHEN size(`extensions`) = 0 THEN {envelope} ELSE {with_extensions} END"


JSON_WHITESPACE = " \t\n\r"
"""What JSON allows around a value (RFC 8259's ``ws``)."""


def data_text(text: Column) -> Column:
    """The JSON text ``text`` of an event's data as it is written out as read: its ends
    trimmed of whitespace, nothing else changed. (Spark trims a string of given characters
    char by char from its start, a tenth of the benchmark channel's CPU when done to every
    record: a document that starts with ``{`` and ends with ``}`` is taken as it is.)"""
    bare = F.startswith(text, F.lit("{")) & F.endswith(text, F.lit("}"))
    return F.when(bare, text).otherwise(F.btrim(text, F.lit(JSON_WHITESPACE)))


def event_json_of_text(text: Column, native_zone: str) -> Column:
    """:func:`event_json` of an event whose data is the valid JSON ``text`` it was read from,
    put into the object as it is (:func:`data_text`) instead of parsed and written again: the
    members' order and numbers' spelling in the data are the record's own.

    ``data`` comes first, as in :func:`event_json`, when every other member's name sorts
    after it, as the attributes and the ``partitionkey`` of an event read from a Kafka record
    in ``format: json`` all do (the one kind of event this is given:
    :func:`pipelines.query.writes_data_as_read`)."""
    rest = F.expr(f"substr({_native_event_json_sql(native_zone, 'CAST(NULL AS VARIANT)')}, 2)")
    return F.concat(F.lit('{"data":'), data_text(text), F.lit(","), rest)


def no_extensions() -> Column:
    """An empty ``extensions`` map of the right type."""
    return F.expr("CAST(map() AS map<string,variant>)")


def variant_text_sql(value: str) -> str:
    """SQL for the text of a VARIANT: a string as itself, any other value as JSON text; NULL
    for SQL NULL and JSON null (header values, keys, topics taken from fields)."""
    return (
        f"CASE WHEN {value} IS NULL OR is_variant_null({value}) THEN NULL "
        f"WHEN schema_of_variant({value}) = 'STRING' THEN variant_get({value}, '$', 'string') "
        f"ELSE to_json({value}) END"
    )


def binary_data_sql(json_media_type: str) -> str:
    """SQL for the payload of binary-mode CloudEvents (Kafka and HTTP bindings): the data as
    JSON text, or as itself when it is a string under a non-JSON ``datacontenttype``
    (``json_media_type`` is the regular expression of JSON content types); NULL without data."""
    is_text = (
        "datacontenttype IS NOT NULL "
        f"AND NOT lower(datacontenttype) RLIKE {sql_string(json_media_type)} "
        "AND schema_of_variant(data) = 'STRING'"
    )
    return (
        f"CASE WHEN data IS NULL THEN NULL WHEN {is_text} "
        "THEN variant_get(data, '$', 'string') ELSE to_json(data) END"
    )
