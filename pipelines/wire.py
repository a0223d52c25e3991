"""Confluent's wire format in Kafka stages: ``avro``, ``protobuf`` and ``json-schema`` values.

A value is magic byte ``0``, the writer schema's registry id (4 bytes, big-endian), then the
payload: Avro's binary encoding (no container header), Confluent's message indexes and the
Protobuf message, or JSON text. Schemas come from the registry the stage names
(:mod:`pipelines.registry_client`), fetched when the query is built.

Reading (:func:`wire_records_to_events`): each record is decoded with Spark's own
``from_avro``, once per schema id of the subject (a ``CASE`` on the record's id, no Python on
the per-event path): with the writer schema its id names, resolved into the subject's latest
version (Avro's schema resolution: a field added with a default gets the default, a removed
field is dropped), then turned into the event's ``data`` (a VARIANT). A ``json-schema`` payload
is parsed as JSON. A ``protobuf`` record is decoded by Sluice's ``protobuf_decode``
(:mod:`pipelines.native`; Spark's ``spark-protobuf`` is not on this project's Maven mirror) with
the writer schema its id names and the message its indexes name, straight into the VARIANT
(the JSON mapping: ``io.sluice.spark.protobuf.ProtoDecoder``); every version's descriptors
(the schema and the files it imports, from the registry's references) are handed to it in one
literal, compiled once per executor. A record that fails becomes a failed event (dead letters under
``errors.tolerance: all``) with the reason: ``InvalidWireFormat`` (no magic byte),
``UnknownSchemaId`` (an id that is no version of the subject) or ``UndecodableRecord``.

Writing (:func:`wire_value`): the event's ``data`` is read into the Spark type of the subject's
latest Avro schema and written by ``to_avro`` behind that version's id; ``json-schema`` writes
the data as JSON text behind the id; ``protobuf`` reads the data into the latest version's
message (``schema_registry.message``, default the file's first) with Sluice's
``protobuf_encode`` and writes it behind the id and the message's indexes. An event whose data
does not fit the schema (a type that does not cast, a required field missing) fails with
``DataDoesNotFitSchema``.

A version registered after the query was built is read once the query is built again: under
``errors.tolerance: none`` its first record fails the query, under ``all``
:class:`NewVersionWatch` fails the batch before anything is written (not a dead letter), and
the restart policy builds the query again, which reads the batch again with the new version.
A sink re-reads its subject's latest version at most every :data:`CACHE_SECONDS`.
"""

from __future__ import annotations

import base64
import json
import re
import threading
import time
from dataclasses import dataclass
from typing import Any

from pyspark.sql import Column, DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql.avro.functions import from_avro, to_avro
from pyspark.sql.types import ArrayType, DataType, MapType, StructType

from pipelines import native
from pipelines.registry_client import (
    RegisteredSchema,
    SubjectSchemas,
    fetch_references,
    fetch_subject,
)
from pipelines.spec.configs.schema_registry import SchemaRegistryConfig
from pipelines.sql import sql_column

AVRO = "avro"
JSON_SCHEMA = "json-schema"
PROTOBUF = "protobuf"
REGISTRY_TYPES = {AVRO: "AVRO", JSON_SCHEMA: "JSON", PROTOBUF: "PROTOBUF"}
"""The registry's schemaType each wire format reads and writes."""
CACHE_SECONDS = 30.0
"""How long a sink keeps a subject's schemas before it asks the registry again."""

_cache: dict[tuple[str | None, str], tuple[float, SubjectSchemas]] = {}
_cache_lock = threading.Lock()


def subject_schemas(
    registry: SchemaRegistryConfig, subject: str, format_: str, *, max_age: float = 0.0
) -> SubjectSchemas:
    """Every version of ``subject``, checked to be of the format's schema type; a copy at
    most ``max_age`` seconds old may be reused."""
    key = (registry.url, subject)
    now = time.monotonic()
    with _cache_lock:
        cached = _cache.get(key)
    if cached is not None and now - cached[0] <= max_age:
        return cached[1]
    found = fetch_subject(registry, subject)
    expected = REGISTRY_TYPES[format_]
    if found.latest.schema_type != expected:
        raise ValueError(
            f"subject {subject!r}: its latest version is a {found.latest.schema_type} schema; "
            f"the {format_} format needs {expected}"
        )
    with _cache_lock:
        _cache[key] = (now, found)
    return found


# -- reading -------------------------------------------------------------------------------


def wire_header(value: Column) -> tuple[Column, Column, Column]:
    """``(is wire format, schema id, payload)`` of a binary record value."""
    framed = (F.length(value) >= 5) & (F.substring(value, 1, 1) == F.lit(bytearray(b"\x00")))
    schema_id = F.conv(F.hex(F.substring(value, 2, 4)), 16, 10).cast("long")
    payload = F.substring(value, 6, 2**31 - 1)
    return framed, schema_id, payload


def avro_reader_options(reader: str) -> dict[str, str]:
    """``from_avro`` options: resolve into ``reader``; a corrupt record is NULL (not a crash)."""
    return {"avroSchema": reader, "mode": "PERMISSIVE"}


def decode_avro(payload: Column, schema_id: Column, schemas: SubjectSchemas) -> Column:
    """The record decoded into the subject's latest schema (a struct), NULL when its id is no
    version of the subject or the payload does not decode."""
    options = avro_reader_options(schemas.latest.schema)
    chain: Column | None = None
    for registered in schemas.versions:
        decoded = from_avro(payload, registered.schema, options)
        condition = schema_id == F.lit(registered.id)
        chain = F.when(condition, decoded) if chain is None else chain.when(condition, decoded)
    assert chain is not None  # a subject has at least one version
    return chain


def required_fields(schema: str) -> list[str]:
    """The top-level fields of an Avro record schema that cannot be null (not a union with
    "null"): a record ``from_avro`` could not decode comes back (PERMISSIVE) with all of them
    NULL, which is how a corrupt payload is told from a good one."""
    parsed = json.loads(schema)
    if not isinstance(parsed, dict) or parsed.get("type") != "record":
        return []
    required = []
    for field in parsed.get("fields", []):
        kind = field.get("type")
        if not (isinstance(kind, list) and "null" in kind) and kind != "null":
            required.append(str(field["name"]))
    return required


def avro_decoded(decoded: Column, schemas: SubjectSchemas) -> Column:
    """Whether a decoded record is real: not NULL, and its required fields set."""
    ok = decoded.isNotNull()
    for name in required_fields(schemas.latest.schema):
        ok = ok & decoded[name].isNotNull()
    return ok


def avro_spark_type(spark: SparkSession, schema: str) -> DataType:
    """The Spark type ``from_avro`` gives ``schema`` (analysed on an empty frame, no job)."""
    empty = spark.createDataFrame([], "b binary")
    return empty.select(from_avro(F.col("b"), schema).alias("v")).schema["v"].dataType


def to_variant(value: Column, data_type: DataType) -> Column:
    """A decoded value as a VARIANT (structs and maps become objects)."""
    if isinstance(data_type, (StructType, ArrayType, MapType)):
        return F.to_variant_object(value)
    return value.cast("variant")


# -- Protobuf --------------------------------------------------------------------------------


class ProtobufUnavailable(ValueError):
    """The session cannot call Sluice's Protobuf functions (the query cannot be built)."""


def require_protobuf_functions(spark: SparkSession) -> None:
    if not native.native_functions(spark):
        raise ProtobufUnavailable(
            "the protobuf format needs Sluice's Spark functions (the sluice-spark jar on the "
            f"driver's class path, and {native.DISABLE_ENV} not false): Spark's own "
            "spark-protobuf is not available"
        )


def protobuf_files(registry: SchemaRegistryConfig, schema: RegisteredSchema) -> list[str]:
    """The schema's file, then every file it imports from the registry (base64 serialized
    ``FileDescriptorProto``s, each import named by its reference name, as Confluent's
    clients resolve them); the well-known types are protobuf-java's own."""
    from google.protobuf import descriptor_pb2

    files = [schema.schema]
    for name, text in fetch_references(registry, schema).items():
        proto = descriptor_pb2.FileDescriptorProto()
        proto.ParseFromString(base64.b64decode(text))
        proto.name = name
        files.append(base64.b64encode(proto.SerializeToString()).decode("ascii"))
    return files


def protobuf_decode_plan(registry: SchemaRegistryConfig, schemas: SubjectSchemas) -> str:
    """``protobuf_decode``'s plan: every version's files by schema id."""
    plan = {str(version.id): protobuf_files(registry, version) for version in schemas.versions}
    return json.dumps(plan, separators=(",", ":"))


def message_names(schema: str) -> list[str]:
    """The full names of the messages of a Protobuf schema's file, in Confluent's index
    order (each message, then its nested ones)."""
    from google.protobuf import descriptor_pb2

    proto = descriptor_pb2.FileDescriptorProto()
    proto.ParseFromString(base64.b64decode(schema))
    names: list[str] = []

    def walk(prefix: str, messages: Any) -> None:
        for message in messages:
            full = f"{prefix}.{message.name}" if prefix else message.name
            names.append(full)
            walk(full, message.nested_type)

    walk(proto.package, proto.message_type)
    return names


def protobuf_encode_plan(
    registry: SchemaRegistryConfig, subject: str, latest: RegisteredSchema, message: str | None
) -> str:
    """``protobuf_encode``'s plan: the latest version's id and files and the message (checked
    to be one of its file's; ValueError when it is not)."""
    names = message_names(latest.schema)
    if not names:
        raise ValueError(f"subject {subject!r}: its latest version has no message")
    if message is not None and message not in names:
        raise ValueError(
            f"schema_registry.message: subject {subject!r}'s latest version has no message "
            f"{message!r} (it has {', '.join(names[:20])})"
        )
    plan = {"id": latest.id, "message": message or "", "files": protobuf_files(registry, latest)}
    return json.dumps(plan, separators=(",", ":"))


def decode_protobuf(value_column: str, plan: str) -> Column:
    """The record value in column ``value_column`` decoded (a VARIANT), NULL when it is not
    in the wire format, its id is not in the plan or it does not decode."""
    return F.expr(native.protobuf_decode(sql_column(value_column), plan))


def known_id(schema_id: Column, schemas: SubjectSchemas) -> Column:
    return schema_id.isin(*[registered.id for registered in schemas.versions])


def wire_problem(
    framed: Column, schema_id: Column, decoded_ok: Column, schemas: SubjectSchemas, what: str
) -> tuple[Column, Column]:
    """``(problem, error class)`` of a record: NULL when it decoded."""
    problem = (
        F.when(~framed, F.lit("value is not in Confluent's wire format (no magic byte 0)"))
        .when(
            ~known_id(schema_id, schemas),
            F.concat(
                F.lit("unknown schema id "),
                schema_id.cast("string"),
                F.lit(f": not a version of subject {schemas.subject!r} in the registry"),
            ),
        )
        .when(
            ~decoded_ok,
            F.concat(
                F.lit(f"value does not decode as {what} with schema id "),
                schema_id.cast("string"),
            ),
        )
    )
    error_class = (
        F.when(~framed, F.lit("InvalidWireFormat"))
        .when(~known_id(schema_id, schemas), F.lit("UnknownSchemaId"))
        .otherwise(F.lit("UndecodableRecord"))
    )
    return problem, error_class


class NewSchemaVersions(RuntimeError):
    """Records name versions registered after the query was built: it fails, and the restart
    policy builds it again with them (the batch is read again: no event is lost)."""


UNKNOWN_ID = re.compile(r"unknown schema id (\d+):")


@dataclass(frozen=True)
class NewVersionWatch:
    """``errors.tolerance: all``: before a batch is written, its ``UnknownSchemaId`` records'
    ids are looked up in the registry again; one that is now a version of the subject fails
    the batch with :class:`NewSchemaVersions` instead of becoming a dead letter. One scan of
    the cached batch; the registry is asked only when the batch has such records."""

    registry: SchemaRegistryConfig
    subject: str
    format: str

    def __call__(self, batch: DataFrame) -> None:
        unknown = (
            batch.filter(F.col("failure.error_class") == F.lit("UnknownSchemaId"))
            .select(F.regexp_extract("failure.message", UNKNOWN_ID.pattern, 1).alias("id"))
            .distinct()
            .limit(100)
            .collect()
        )
        if not unknown:
            return
        ids = {int(row.id) for row in unknown if row.id}
        fresh = subject_schemas(self.registry, self.subject, self.format)
        added = sorted(ids & set(fresh.by_id))
        if added:
            raise NewSchemaVersions(
                f"subject {self.subject!r} has version(s) registered after the query was built "
                f"(schema ids {', '.join(map(str, added))}): building it again to read them"
            )


# -- writing -------------------------------------------------------------------------------


def id_prefix(schema_id: int) -> Column:
    """Magic byte and schema id, as a binary literal."""
    return F.lit(bytearray(b"\x00" + schema_id.to_bytes(4, "big")))


@dataclass(frozen=True)
class WireWriter:
    """How a sink writes: the subject's latest version (id, text) and, for Avro, its Spark type,
    for Protobuf, ``protobuf_encode``'s plan."""

    format: str
    subject: str
    schema_id: int
    schema: str
    spark_type: DataType | None
    plan: str | None = None

    @property
    def checks_fit(self) -> bool:
        """Whether events are checked against the schema before they are written (Avro and
        Protobuf: :meth:`struct` and :meth:`misfit`)."""
        return self.spark_type is not None or self.plan is not None

    def struct(self) -> Column:
        """The event's data read into the schema's Spark type (Avro), or the whole record value
        (Protobuf); NULL when it does not fit."""
        if self.plan is not None:
            return F.expr(native.protobuf_encode(sql_column("data"), self.plan))
        assert self.spark_type is not None
        return F.try_variant_get(F.col("data"), "$", self.spark_type.simpleString())

    def value(self, data_json: Column, struct: Column | None = None) -> Column:
        """The record value: magic byte, id, payload (NULL for an event without data);
        ``struct``: :meth:`struct`, when already computed."""
        if self.format == PROTOBUF:
            encoded = self.struct() if struct is None else struct
            return F.when(F.col("data").isNull(), F.lit(None).cast("binary")).otherwise(encoded)
        if self.format == AVRO:
            payload = to_avro(self.struct() if struct is None else struct, self.schema)
        else:
            payload = data_json.cast("binary")
        framed = F.concat(id_prefix(self.schema_id), payload)
        return F.when(F.col("data").isNull(), F.lit(None).cast("binary")).otherwise(framed)

    def misfit(self, struct: Column) -> Column:
        """True for an event whose data cannot be written with the schema (Avro and Protobuf);
        ``struct``: :meth:`struct`."""
        bad = struct.isNull()
        if isinstance(self.spark_type, StructType):
            for field in self.spark_type.fields:
                if not field.nullable:
                    bad = bad | struct[field.name].isNull()
        return F.col("data").isNotNull() & bad

    def misfit_message(self) -> Column:
        return F.concat(
            F.lit("event "),
            F.col("id"),
            F.lit(
                f": data does not fit schema id {self.schema_id} (subject {self.subject!r}, "
                "latest version): a field has another type or a required field is missing"
            ),
        )


def wire_writer(
    spark: SparkSession, format_: str, registry: SchemaRegistryConfig, subject: str
) -> WireWriter:
    """The writer of a sink: the subject's latest version, at most :data:`CACHE_SECONDS` old."""
    latest = subject_schemas(registry, subject, format_, max_age=CACHE_SECONDS).latest
    if format_ == PROTOBUF:
        require_protobuf_functions(spark)
        plan = protobuf_encode_plan(registry, subject, latest, registry.message)
        return WireWriter(format_, subject, latest.id, latest.schema, None, plan)
    spark_type = avro_spark_type(spark, latest.schema) if format_ == AVRO else None
    return WireWriter(format_, subject, latest.id, latest.schema, spark_type)
