"""Protobuf: a schema is a serialized ``FileDescriptorProto`` in base64, the form
confluent-kafka's serializers register and ask back for (``format=serialized``); it must
build in protobuf's own ``DescriptorPool`` with its references and the well-known types.
``.proto`` text is not parsed (there is no ``protoc`` here): it is refused with 42201.

Compatibility follows the rules Confluent documents for Protobuf: the package may not
change, no message may be removed, and a field number kept on both sides must keep a
compatible type (scalars within Protobuf's wire-compatible groups, the same message or enum
type) and its label (a ``required`` field neither added nor removed). Fields may be added or
removed freely (unknown fields are skipped, missing ones take their defaults).
"""

from __future__ import annotations

import base64
import binascii
from collections.abc import Iterator, Mapping
from typing import Any

from google.protobuf import descriptor_pb2, descriptor_pool
from google.protobuf.message import DecodeError

from console.schemas.base import PROTOBUF, InvalidSchema, ParsedSchema

FDP = descriptor_pb2.FileDescriptorProto
FIELD = descriptor_pb2.FieldDescriptorProto

#: Scalar types a field may change between without breaking the wire (Protobuf's guide).
_GROUPS = [
    {FIELD.TYPE_INT32, FIELD.TYPE_UINT32, FIELD.TYPE_INT64, FIELD.TYPE_UINT64, FIELD.TYPE_BOOL},
    {FIELD.TYPE_SINT32, FIELD.TYPE_SINT64},
    {FIELD.TYPE_FIXED32, FIELD.TYPE_SFIXED32},
    {FIELD.TYPE_FIXED64, FIELD.TYPE_SFIXED64},
    {FIELD.TYPE_STRING, FIELD.TYPE_BYTES},
]
_NAMED = {FIELD.TYPE_MESSAGE, FIELD.TYPE_ENUM, FIELD.TYPE_GROUP}


def _decode(name: str, text: str) -> Any:
    try:
        raw = base64.b64decode(text.strip(), validate=True)
    except (binascii.Error, ValueError):
        raise InvalidSchema(
            f"Invalid schema {name}: Protobuf schemas are accepted as a base64 serialized "
            "FileDescriptorProto (as confluent-kafka's serializers send them), not .proto text"
        ) from None
    proto = FDP()
    try:
        proto.ParseFromString(raw)
    except DecodeError as exc:
        raise InvalidSchema(f"Invalid schema {name}: not a FileDescriptorProto: {exc}") from exc
    return proto


def _pool() -> descriptor_pool.DescriptorPool:
    from google.protobuf import (
        any_pb2,
        api_pb2,
        duration_pb2,
        empty_pb2,
        field_mask_pb2,
        source_context_pb2,
        struct_pb2,
        timestamp_pb2,
        type_pb2,
        wrappers_pb2,
    )

    pool = descriptor_pool.DescriptorPool()
    for module in (
        any_pb2,
        source_context_pb2,
        type_pb2,
        api_pb2,
        descriptor_pb2,
        duration_pb2,
        empty_pb2,
        field_mask_pb2,
        struct_pb2,
        timestamp_pb2,
        wrappers_pb2,
    ):
        pool.AddSerializedFile(module.DESCRIPTOR.serialized_pb)
    return pool


def parse(text: str, references: Mapping[str, str]) -> ParsedSchema:
    _, proto = _build(text, references)
    canonical = base64.b64encode(proto.SerializeToString(deterministic=True)).decode("ascii")
    return ParsedSchema(PROTOBUF, canonical, proto)


def build_file(text: str, references: Mapping[str, str]) -> Any:
    """The ``FileDescriptor`` of a schema built with its references (its messages'
    descriptors resolve imported types); :class:`InvalidSchema` when it does not build."""
    pool, proto = _build(text, references)
    return pool.FindFileByName(proto.name)


def _build(text: str, references: Mapping[str, str]) -> tuple[descriptor_pool.DescriptorPool, Any]:
    pool = _pool()
    try:
        for name, ref_text in references.items():
            ref = _decode(name, ref_text)
            ref.name = name
            if not _known(pool, name):
                pool.Add(ref)
        proto = _decode("", text)
        if not proto.name:
            proto.name = "schema.proto"
        pool.Add(proto)
        pool.FindFileByName(proto.name)
    except InvalidSchema:
        raise
    except Exception as exc:  # the pool's errors (TypeError, KeyError…) on a broken descriptor
        raise InvalidSchema(f"Invalid schema: {exc}") from exc
    return pool, proto


def _known(pool: descriptor_pool.DescriptorPool, name: str) -> bool:
    try:
        pool.FindFileByName(name)
    except KeyError:
        return False
    return True


def _messages(
    prefix: str, messages: Iterator[descriptor_pb2.DescriptorProto] | list
) -> Iterator[tuple[str, descriptor_pb2.DescriptorProto]]:
    for message in messages:
        full = f"{prefix}.{message.name}" if prefix else message.name
        yield full, message
        yield from _messages(full, message.nested_type)


def check(reader: ParsedSchema, writer: ParsedSchema) -> list[str]:
    """Why ``reader`` may misread data written with ``writer``; empty when it may not."""
    r_proto = reader.parsed
    w_proto = writer.parsed
    out: list[str] = []
    if r_proto.package != w_proto.package:
        out.append(f"PACKAGE_CHANGED: {w_proto.package!r} → {r_proto.package!r}")
    r_messages = dict(_messages("", r_proto.message_type))
    for name, w_message in _messages("", w_proto.message_type):
        r_message = r_messages.get(name)
        if r_message is None:
            out.append(f"MESSAGE_REMOVED: {name}")
            continue
        out += _fields(name, r_message, w_message)
    return out


def _fields(
    message: str, reader: descriptor_pb2.DescriptorProto, writer: descriptor_pb2.DescriptorProto
) -> list[str]:
    out: list[str] = []
    r_fields = {f.number: f for f in reader.field}
    w_fields = {f.number: f for f in writer.field}
    for number, r in r_fields.items():
        w = w_fields.get(number)
        where = f"{message}.{r.name} (#{number})"
        if w is None:
            if r.label == FIELD.LABEL_REQUIRED:
                out.append(f"REQUIRED_FIELD_ADDED: {where}")
            continue
        if (r.label == FIELD.LABEL_REQUIRED) != (w.label == FIELD.LABEL_REQUIRED):
            out.append(f"REQUIRED_FIELD_CHANGED: {where}")
        if (r.label == FIELD.LABEL_REPEATED) != (w.label == FIELD.LABEL_REPEATED):
            out.append(f"FIELD_LABEL_CHANGED: {where}")
        if r.type == w.type:
            if r.type in _NAMED and r.type_name.lstrip(".") != w.type_name.lstrip("."):
                out.append(f"FIELD_NAMED_TYPE_CHANGED: {where}: {w.type_name} → {r.type_name}")
        elif r.type in _NAMED or w.type in _NAMED:
            out.append(f"FIELD_KIND_CHANGED: {where}")
        elif not any(r.type in g and w.type in g for g in _GROUPS):
            out.append(
                f"FIELD_SCALAR_KIND_CHANGED: {where}: "
                f"{FIELD.Type.Name(w.type)} → {FIELD.Type.Name(r.type)}"
            )
    for number, w in w_fields.items():
        if number not in r_fields and w.label == FIELD.LABEL_REQUIRED:
            out.append(f"REQUIRED_FIELD_REMOVED: {message}.{w.name} (#{number})")
    return out
