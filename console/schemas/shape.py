"""A registry schema as the shape of events: the JSON Schema of the payload a channel reads.

The builder knows the fields of a channel's events from a JSON Schema (field-path suggestions,
the "unknown field" warning, the test bench's sample event). A JSON Schema subject is that
already; an Avro or Protobuf subject is turned into the JSON Schema of the value its wire
format gives the event's ``data`` (:mod:`pipelines.wire`: Spark's ``from_avro`` /
``from_protobuf``, then a VARIANT), so that the paths match what patterns see:

* Avro: a record is an object of its fields, an array an array, a map an object of any keys
  (open: the schema cannot tell its keys), an enum a string of its symbols. A union of
  ``null`` and one type is that type or null; ``[int, long]`` and ``[float, double]`` are one
  number; any other union is an object of ``member0``, ``member1``… (one per non-null branch,
  as Spark's ``from_avro`` reads it). Logical types: timestamps, dates and times are strings
  (``date-time``, ``date``, ``time``), decimals numbers, ``uuid`` a string; bytes and fixed
  are strings (base64 in JSON).
* Protobuf: one message of the file (the first by default, or the one named): its fields by
  name, ``repeated`` ones arrays, map fields objects of any keys, enums strings of their value
  names, 64-bit integers integers, bytes strings; ``google.protobuf.Timestamp`` a date-time
  string, the wrapper types their value, ``Struct``/``Value``/``Any`` open.

A recursive type (a record holding itself, directly or not) is expanded :data:`MAX_RECURSION`
times on each path; where it reappears past that it is an open object that names it. The whole
shape is held to :data:`MAX_NODES` nodes and :data:`MAX_DEPTH` levels: a type reached past
either is open too. Before, a record with three optional fields of its own type, expanded 12
levels deep, took 38 s and 670 MB and answered 57 MB for a 211-byte schema.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import avro.schema

from console.schemas.base import AVRO, JSON, PROTOBUF, InvalidSchema, check_schema_depth

MAX_DEPTH = 12
"""Nesting levels expanded before a type is left open."""
MAX_NODES = 5_000
"""Nodes a shape may have (about 0.5 MB of JSON); past them every type is left open."""
MAX_RECURSION = 3
"""Times a named type is expanded on one path (a linked list shows three links)."""


class _Walk:
    """What a shape's expansion has spent: its nodes, counted against :data:`MAX_NODES`."""

    def __init__(self) -> None:
        self.nodes = 0

    def spent(self) -> bool:
        """Count one node; True once the shape is over its budget."""
        self.nodes += 1
        return self.nodes > MAX_NODES


def _open(name: str, why: str) -> JsonSchema:
    return {"type": "object", "description": f"{name} ({why})"}


_RECURSIVE = "recursive: as above, not expanded again"
_LIMIT = "not expanded: the shape is at its size limit"

JsonSchema = dict[str, Any]


@dataclass(frozen=True)
class Shape:
    """The JSON Schema of a payload, and for Protobuf the file's messages and the one used."""

    schema: JsonSchema
    messages: list[str] = field(default_factory=list)
    message: str = ""


def shape_of(
    schema_type: str, text: str, references: Mapping[str, str], *, message: str = ""
) -> Shape:
    """The shape of a schema of ``schema_type`` (``references``: name → text). ``message``
    picks a Protobuf message by its full name (default: the file's first). Raises
    :class:`InvalidSchema` for a schema that does not parse or a message it has not."""
    if schema_type == JSON:
        check_schema_depth(text)
        try:
            parsed = json.loads(text)
        except ValueError as exc:
            raise InvalidSchema(f"Invalid schema: {exc}") from exc
        return Shape(parsed if isinstance(parsed, dict) else {})
    if schema_type == AVRO:
        from console.schemas import avro as avro_format

        return Shape(avro_shape(avro_format.parse(text, references).parsed))
    if schema_type == PROTOBUF:
        return protobuf_shape(text, references, message)
    raise InvalidSchema(f"Unknown schema type {schema_type!r}")


# -- Avro ------------------------------------------------------------------------------------

_AVRO_PRIMITIVES: dict[str, JsonSchema] = {
    "null": {"type": "null"},
    "boolean": {"type": "boolean"},
    "int": {"type": "integer"},
    "long": {"type": "integer"},
    "float": {"type": "number"},
    "double": {"type": "number"},
    "string": {"type": "string"},
    "bytes": {"type": "string", "contentEncoding": "base64"},
}
_AVRO_LOGICAL: dict[str, JsonSchema] = {
    "timestamp-millis": {"type": "string", "format": "date-time"},
    "timestamp-micros": {"type": "string", "format": "date-time"},
    "local-timestamp-millis": {"type": "string", "format": "date-time"},
    "local-timestamp-micros": {"type": "string", "format": "date-time"},
    "date": {"type": "string", "format": "date"},
    "time-millis": {"type": "string", "format": "time"},
    "time-micros": {"type": "string", "format": "time"},
    "decimal": {"type": "number"},
    "uuid": {"type": "string", "format": "uuid"},
}
_NUMERIC_UNIONS = ({"int", "long"}, {"float", "double"})


def avro_shape(schema: avro.schema.Schema) -> JsonSchema:
    """The JSON Schema of the value ``schema`` decodes to (see the module doc)."""
    return _avro(schema, 0, _Walk(), ())


def _avro(
    schema: avro.schema.Schema, depth: int, walk: _Walk, within: tuple[str, ...]
) -> JsonSchema:
    """``within``: the named types being expanded around this one (its path)."""
    if depth > MAX_DEPTH:
        return {}
    if walk.spent():
        name = getattr(schema, "fullname", None)
        return _open(name, _LIMIT) if isinstance(name, str) else {}
    logical = getattr(schema, "logical_type", None) or (schema.props or {}).get("logicalType")
    if isinstance(logical, str) and logical in _AVRO_LOGICAL:
        return dict(_AVRO_LOGICAL[logical])
    if isinstance(schema, avro.schema.RecordSchema):
        name = schema.fullname
        if within.count(name) >= MAX_RECURSION:
            return _open(name, _RECURSIVE)
        inner = (*within, name)
        node: JsonSchema = {
            "type": "object",
            "properties": {f.name: _avro(f.type, depth + 1, walk, inner) for f in schema.fields},
        }
        required = [f.name for f in schema.fields if not _nullable(f.type)]
        if required:
            node["required"] = required
        if schema.doc:
            node["description"] = schema.doc
        return node
    if isinstance(schema, avro.schema.ArraySchema):
        return {"type": "array", "items": _avro(schema.items, depth + 1, walk, within)}
    if isinstance(schema, avro.schema.MapSchema):
        values = _avro(schema.values, depth + 1, walk, within)
        return {"type": "object", "additionalProperties": values}
    if isinstance(schema, avro.schema.EnumSchema):
        return {"type": "string", "enum": list(schema.symbols)}
    if isinstance(schema, avro.schema.FixedSchema):
        return {"type": "string", "contentEncoding": "base64"}
    if isinstance(schema, avro.schema.UnionSchema):
        return _avro_union(schema, depth, walk, within)
    return dict(_AVRO_PRIMITIVES.get(schema.type, {}))


def _avro_union(
    schema: avro.schema.UnionSchema, depth: int, walk: _Walk, within: tuple[str, ...]
) -> JsonSchema:
    branches = [s for s in schema.schemas if s.type != "null"]
    nullable = len(branches) < len(schema.schemas)
    kinds = {s.type for s in branches}
    if len(branches) == 1 or any(kinds == numbers for numbers in _NUMERIC_UNIONS):
        # [int, long] reads as long, [float, double] double
        node = _avro(branches[-1], depth, walk, within)
    elif not branches:
        return {"type": "null"}
    else:  # Spark's from_avro: a struct of member0, member1… one set, the others null
        members = {f"member{i}": _avro(s, depth + 1, walk, within) for i, s in enumerate(branches)}
        node = {"type": "object", "properties": members}
    if nullable:
        kind = node.get("type")
        if isinstance(kind, str):
            node["type"] = [kind, "null"]
    return node


def _nullable(schema: avro.schema.Schema) -> bool:
    return isinstance(schema, avro.schema.UnionSchema) and any(
        s.type == "null" for s in schema.schemas
    )


# -- Protobuf --------------------------------------------------------------------------------

_WELL_KNOWN: dict[str, JsonSchema] = {
    "google.protobuf.Timestamp": {"type": "string", "format": "date-time"},
    "google.protobuf.Duration": {"type": "string"},
    "google.protobuf.Struct": {"type": "object"},
    "google.protobuf.Value": {},
    "google.protobuf.ListValue": {"type": "array"},
    "google.protobuf.Any": {"type": "object"},
    "google.protobuf.Empty": {"type": "object", "properties": {}},
    "google.protobuf.DoubleValue": {"type": "number"},
    "google.protobuf.FloatValue": {"type": "number"},
    "google.protobuf.Int64Value": {"type": "integer"},
    "google.protobuf.UInt64Value": {"type": "integer"},
    "google.protobuf.Int32Value": {"type": "integer"},
    "google.protobuf.UInt32Value": {"type": "integer"},
    "google.protobuf.BoolValue": {"type": "boolean"},
    "google.protobuf.StringValue": {"type": "string"},
    "google.protobuf.BytesValue": {"type": "string", "contentEncoding": "base64"},
}


def protobuf_shape(text: str, references: Mapping[str, str], message: str = "") -> Shape:
    """The shape of ``message`` (a full name; default the file's first message) of a
    base64 serialized ``FileDescriptorProto`` with its ``references``."""
    from console.schemas import protobuf

    file = protobuf.build_file(text, references)
    messages = {m.full_name: m for m in _all_messages(file.message_types_by_name.values())}
    if not messages:
        raise InvalidSchema("Invalid schema: the file declares no message")
    names = list(messages)
    chosen = message or names[0]
    if chosen not in messages:
        raise InvalidSchema(f"No message {chosen!r} in the schema: one of {', '.join(names)}")
    return Shape(_message(messages[chosen], 0, _Walk(), ()), names, chosen)


def _all_messages(messages: Any) -> list[Any]:
    found = []
    for m in messages:
        if m.GetOptions().map_entry:
            continue
        found.append(m)
        found += _all_messages(m.nested_types)
    return found


def _message(descriptor: Any, depth: int, walk: _Walk, within: tuple[str, ...]) -> JsonSchema:
    name = descriptor.full_name
    if name in _WELL_KNOWN:
        return dict(_WELL_KNOWN[name])
    if within.count(name) >= MAX_RECURSION:
        return _open(name, _RECURSIVE)
    if depth > MAX_DEPTH:
        return {"type": "object"}
    if walk.spent():
        return _open(name, _LIMIT)
    inner = (*within, name)
    properties = {f.name: _field(f, depth, walk, inner) for f in descriptor.fields}
    node: JsonSchema = {"type": "object", "properties": properties}
    return node


def _field(field_: Any, depth: int, walk: _Walk, within: tuple[str, ...]) -> JsonSchema:
    message = field_.message_type
    if message is not None and message.GetOptions().map_entry:
        value = message.fields_by_name["value"]
        return {"type": "object", "additionalProperties": _single(value, depth + 1, walk, within)}
    single = _single(field_, depth, walk, within)
    if field_.is_repeated:
        return {"type": "array", "items": single}
    return single


def _single(field_: Any, depth: int, walk: _Walk, within: tuple[str, ...]) -> JsonSchema:
    from google.protobuf.descriptor import FieldDescriptor as FD

    kind = field_.type
    if kind in (FD.TYPE_MESSAGE, FD.TYPE_GROUP):
        return _message(field_.message_type, depth + 1, walk, within)
    if kind == FD.TYPE_ENUM:
        return {"type": "string", "enum": [v.name for v in field_.enum_type.values]}
    if kind in (FD.TYPE_DOUBLE, FD.TYPE_FLOAT):
        return {"type": "number"}
    if kind == FD.TYPE_BOOL:
        return {"type": "boolean"}
    if kind == FD.TYPE_STRING:
        return {"type": "string"}
    if kind == FD.TYPE_BYTES:
        return {"type": "string", "contentEncoding": "base64"}
    return {"type": "integer"}  # the int, uint, sint, fixed and sfixed types
