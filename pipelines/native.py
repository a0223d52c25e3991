"""Sluice's own Spark functions: VARIANT values parsed, read, matched and written faster.

Spark's ``variant_get(v, path, type)`` builds and evaluates a ``Cast`` expression for every
value it reads (and ``variant_get(v, path, 'variant')`` rebuilds the value's metadata), so
reading three fields of an event costs about as much as parsing it. Sluice's functions are
written in Java (``spark/src/main/java/io/sluice/spark/``, built into
``.cache/jars/sluice-spark/`` by ``scripts/fetch-jars.sh`` and given to every driver with
Spark's Kafka connector) and read the VARIANT encoding directly, in generated code:

* ``field(v, key)`` - the member ``key`` of an object (NULL when absent or not an object);
* ``text(v)`` - the text of a string (NULL for any other value);
* ``number(v)`` - a number as a DOUBLE, as ``try_variant_get(v, '$', 'double')`` gives it
  (NaN for any other value: JSON has no NaN);
* ``kind(v)`` - the first word of ``schema_of_variant(v)`` (``OBJECT``, ``STRING``, ...);
* ``route(v, routes)`` - a bus's routing on one field: the targets of the rules that hold,
  many rules decided in one call with an index on their exact values;
* ``protobuf_decode(value, plan)`` / ``protobuf_encode(data, plan)`` - Kafka record values in
  Confluent's Protobuf wire format read into, and written from, an event's ``data``
  (:mod:`pipelines.wire`), on protobuf-java relocated inside the jar;
* ``matches(v, steps)`` - the event-pattern filter's test: whether the steps of a rule that
  start at one top-level field hold below that field's value ``v`` (NULL: missing), with
  event-ruler's array-consistent semantics, in one pass over the VARIANT bytes and never
  NULL; ``steps`` is the JSON text ``pipelines.patterns.steps_json`` writes, compiled once
  per distinct literal. ``pipelines.patterns`` makes a pattern one small expression of these.

More do what Spark's own functions do, without their per-value setup: sources parse with
``parse`` (``try_parse_json`` creates a Jackson ``JsonFactory`` per document), sinks write
with ``json`` (``to_json`` of a VARIANT creates a JSON generator per string), a CloudEvent
without extensions with ``envelope`` (its JSON object in one buffer) and its ``time`` with
``time`` (the same text as :func:`pipelines.cloudevents.time_text_sql`, one call instead of a
dozen built-in expressions that Spark optimizes again on every micro-batch).

They are a Spark function catalog, registered in a session on first use
(:func:`native_functions`). A session without the jar (a user's own) still runs every
channel: the filter then uses built-in expressions only, with the same results.
"""

from __future__ import annotations

import json as json_module
import logging
import os
import threading
from collections.abc import Sequence

from pyspark.sql import Column, DataFrame, SparkSession
from pyspark.sql import functions as F

from pipelines.sql import sql_column, sql_string

CATALOG = "sluice_fn"
CATALOG_CLASS = "io.sluice.spark.VariantFunctions"
PREFIX = f"{CATALOG}.variant."
DISABLE_ENV = "SLUICE_NATIVE_FUNCTIONS"
"""``false`` makes every query use built-in expressions only (for comparisons)."""

PROBE = "parse_json('\"x\"')"
"""A VARIANT string: the registration probe analyzes ``text(PROBE)``."""

_log = logging.getLogger(__name__)
_lock = threading.Lock()
_sessions: dict[int, bool] = {}


CHECKPOINT_FILE_MANAGER = "io.sluice.spark.checkpoint.LocalCheckpointFileManager"
"""Sluice's checkpoint file manager (``LocalCheckpointFileManager.java``): Spark's file-system
based one writing local files with Java's own streams. Spark's default forked ``readlink`` and
``chmod`` processes for each log file a micro-batch writes (Hadoop's local file system without
its native library): 120 of a batch's 180 ms on an idle 2-core machine."""


def checkpoint_options(spark: SparkSession) -> dict[str, str]:
    """The session options that make its queries write their checkpoints with
    :data:`CHECKPOINT_FILE_MANAGER`, when Sluice's jar is on the session's class path (else
    none: Spark's own manager)."""
    try:
        spark._jvm.org.apache.spark.util.Utils.classForName(  # type: ignore[union-attr]
            CHECKPOINT_FILE_MANAGER, False, False
        )
    except Exception:
        _log.info("%s is not on the class path: Spark's checkpoint files", CHECKPOINT_FILE_MANAGER)
        return {}
    return {"spark.sql.streaming.checkpointFileManagerClass": CHECKPOINT_FILE_MANAGER}


def native_functions(spark: SparkSession) -> bool:
    """Whether ``spark`` can call Sluice's functions; registers their catalog
    (``spark.sql.catalog.sluice_fn``) the first time it is asked for a session.

    False when ``SLUICE_NATIVE_FUNCTIONS=false``, when the catalog name is taken by another
    class, or when the jar is not on the session's class path.
    """
    if os.environ.get(DISABLE_ENV, "").strip().lower() in ("0", "false", "no", "off"):
        return False
    key = spark._jsparkSession.hashCode()
    with _lock:
        if key not in _sessions:
            _sessions[key] = _register(spark)
        return _sessions[key]


def _register(spark: SparkSession) -> bool:
    conf_key = f"spark.sql.catalog.{CATALOG}"
    current = spark.conf.get(conf_key, None)
    if current not in (None, CATALOG_CLASS):
        _log.info("%s names %s, not Sluice's functions: not using them", conf_key, current)
        return False
    spark.conf.set(conf_key, CATALOG_CLASS)
    try:  # analysis only: loads the catalog and binds a function, runs nothing
        spark.sql(f"SELECT {text(PROBE)}")
    except Exception as exc:
        if current is None:
            spark.conf.unset(conf_key)
        reason = str(exc).splitlines()[0][:200] if str(exc) else type(exc).__name__
        _log.info("Sluice's Spark functions are not usable here (%s): built-in only", reason)
        return False
    return True


def field(value: str, key: str) -> str:
    """SQL: the member ``key`` of the VARIANT object ``value`` (NULL when absent)."""
    return f"{PREFIX}field({value}, {sql_string(key)})"


def text(value: str) -> str:
    """SQL: the text of the VARIANT string ``value`` (NULL for any other value)."""
    return f"{PREFIX}text({value})"


def number(value: str) -> str:
    """SQL: the VARIANT number ``value`` as a DOUBLE (NaN for any other value)."""
    return f"{PREFIX}number({value})"


def matches(node: str, steps: str) -> str:
    """SQL: whether the pattern steps of the JSON text ``steps`` hold below the VARIANT
    ``node`` (a top-level field's value, NULL when missing); never NULL."""
    return f"{PREFIX}matches({node}, {sql_string(steps)})"


def route(node: str, routes: str) -> str:
    """SQL: the targets (ARRAY<INT>, never NULL) of a bus's rules that hold below the VARIANT
    ``node`` (a top-level field's value, NULL when missing), ``routes`` being the JSON text
    :func:`pipelines.patterns.route_plans` writes."""
    return f"{PREFIX}route({node}, {sql_string(routes)})"


def time_text(timestamp: str) -> str:
    """SQL: the TIMESTAMP ``timestamp`` as RFC 3339 text in UTC (NULL for NULL), e.g.
    ``2024-06-01T08:15:30.120Z``: what :func:`pipelines.cloudevents.time_text_sql` gives."""
    return f"CASE WHEN {timestamp} IS NOT NULL THEN {PREFIX}time({timestamp}) END"


def parse(value: str, *, allow_duplicate_keys: bool, validate_unicode: bool) -> str:
    """SQL: ``try_parse_json(value)`` under those settings (NULL when not valid JSON)."""
    flags = f"{str(allow_duplicate_keys).lower()}, {str(validate_unicode).lower()}"
    return f"{PREFIX}parse({value}, {flags})"


def parse_pruned(
    value: str, paths: str, *, allow_duplicate_keys: bool, validate_unicode: bool
) -> str:
    """SQL: :func:`parse` of ``value`` keeping only the members on ``paths`` (JSON text: an
    array of member-name arrays): NULL exactly when :func:`parse` is, the members on the
    paths as it gives them (``PrunedParseFunction.java``)."""
    flags = f"{str(allow_duplicate_keys).lower()}, {str(validate_unicode).lower()}"
    return f"{PREFIX}parse_pruned({value}, {sql_string(paths)}, {flags})"


def json_valid(value: str, *, allow_duplicate_keys: bool, validate_unicode: bool) -> str:
    """SQL: whether :func:`parse` gives ``value`` a value (false when it is NULL), without
    building one (``JsonValidFunction.java``)."""
    flags = f"{str(allow_duplicate_keys).lower()}, {str(validate_unicode).lower()}"
    return f"{PREFIX}json_valid({value}, {flags})"


def json(value: str, zone: str) -> str:
    """SQL: ``to_json(value)`` of a VARIANT (``zone``: the session time zone)."""
    return f"{PREFIX}json({value}, {sql_string(zone)})"


def kind(value: str) -> str:
    """SQL: the type name ``schema_of_variant(value)`` starts with (``OBJECT``, ``ARRAY``,
    ``STRING``, ``BIGINT``, ``DECIMAL``, ...), without member types or precision."""
    return f"{PREFIX}kind({value})"


ENVELOPE_MEMBERS = (
    "datacontenttype", "dataschema", "id", "source", "specversion", "subject", "time", "type"
)  # fmt: skip
"""The string members ``envelope`` takes after the data, in its order (sorted names)."""


def envelope(data: str, zone: str, members: dict[str, str]) -> str:
    """SQL: the JSON object of ``data`` (a VARIANT, written as :func:`json` writes it) and
    the string ``members`` (SQL per name of :data:`ENVELOPE_MEMBERS`), names sorted, NULL
    ones left out."""
    values = ", ".join(members[name] for name in ENVELOPE_MEMBERS)
    return f"{PREFIX}envelope({data}, {sql_string(zone)}, {values})"


def event(data: str, zone: str, extensions: str, members: dict[str, str]) -> str:
    """SQL: the JSON object of a CloudEvent with extensions: ``data`` (a VARIANT), the
    ``extensions`` (a ``map<string,variant>``) and the string ``members`` (SQL per name of
    :data:`ENVELOPE_MEMBERS`), all names sorted, NULL ones left out: the text
    ``json(to_variant_object(...))`` of the same members gives, without building it."""
    values = ", ".join(members[name] for name in ENVELOPE_MEMBERS)
    return f"{PREFIX}event({data}, {sql_string(zone)}, {extensions}, {values})"


def protobuf_decode(value: str, plan: str) -> str:
    """SQL: the BINARY ``value``, a record in Confluent's Protobuf wire format, decoded into a
    VARIANT with the schema its id names in ``plan`` (JSON text: every schema id's files,
    :func:`pipelines.wire.protobuf_decode_plan`); NULL when it does not decode. No built-in
    stands in for it (spark-protobuf is not available): the protobuf format needs the jar."""
    return f"{PREFIX}protobuf_decode({value}, {sql_string(plan)})"


def protobuf_encode(data: str, plan: str) -> str:
    """SQL: the VARIANT ``data`` as a record in Confluent's Protobuf wire format with the
    schema id, message and files of ``plan`` (:func:`pipelines.wire.protobuf_encode_plan`);
    NULL when it does not fit the message."""
    return f"{PREFIX}protobuf_encode({data}, {sql_string(plan)})"


def try_parse_json(df: DataFrame, column: str) -> Column:
    """``try_parse_json`` of ``df``'s string column ``column``: Sluice's parser when the
    session has it (same results; Spark's creates a JSON factory per document)."""
    spark = df.sparkSession
    if not native_functions(spark):
        return F.try_parse_json(column)
    return F.expr(parse(sql_column(column), **_parse_settings(spark)))


def try_parse_json_pruned(df: DataFrame, column: str, paths: Sequence[Sequence[str]]) -> Column:
    """:func:`try_parse_json` of ``df``'s string column ``column`` keeping only the members
    on ``paths`` (:func:`parse_pruned`): for a filter that reads nothing else, before the
    whole value is parsed for the events it keeps. Needs Sluice's functions in the session
    (RuntimeError without them)."""
    if not native_functions(df.sparkSession):
        raise RuntimeError("a pruned parse needs Sluice's Spark functions in the session")
    text = json_module.dumps([list(path) for path in paths], separators=(",", ":"))
    return F.expr(parse_pruned(sql_column(column), text, **_parse_settings(df.sparkSession)))


def is_valid_json(df: DataFrame, column: str) -> Column:
    """Whether :func:`try_parse_json` gives ``df``'s string column ``column`` a value, checked
    without building one (:func:`json_valid`) when the session has Sluice's functions."""
    if not native_functions(df.sparkSession):
        return F.try_parse_json(column).isNotNull()
    return F.expr(json_valid(sql_column(column), **_parse_settings(df.sparkSession)))


def _parse_settings(spark: SparkSession) -> dict[str, bool]:
    """The session's settings :func:`parse` follows, as ``try_parse_json`` follows them."""
    return {
        "allow_duplicate_keys": _conf_flag(spark, "spark.sql.variant.allowDuplicateKeys", False),
        "validate_unicode": _conf_flag(
            spark, "spark.sql.variant.validateUnicodeInJsonParsing", True
        ),
    }


def to_json(df: DataFrame, column: str) -> Column:
    """``to_json`` of ``df``'s VARIANT column ``column``: Sluice's writer when the session
    has it (same text; Spark's creates a JSON generator per string)."""
    spark = df.sparkSession
    if not native_functions(spark):
        return F.to_json(F.col(column))
    return F.expr(json(sql_column(column), session_time_zone(spark)))


def json_zone(df: DataFrame) -> str | None:
    """The session time zone when ``df``'s session has Sluice's functions, else None: what
    :func:`pipelines.cloudevents.event_json` takes to write events with them."""
    spark = df.sparkSession
    return session_time_zone(spark) if native_functions(spark) else None


def session_time_zone(spark: SparkSession) -> str:
    return spark.conf.get("spark.sql.session.timeZone") or "UTC"


def _conf_flag(spark: SparkSession, key: str, default: bool) -> bool:
    value = spark.conf.get(key, None)
    return default if value is None else value.strip().lower() == "true"
