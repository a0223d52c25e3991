"""A schema's format chosen by its type: parse it, check two schemas' compatibility.

The formats (:mod:`.avro`, :mod:`.jsonschema`, :mod:`.protobuf`) build on :mod:`.base`; this
module builds on them.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence

from console.schemas import avro, jsonschema, protobuf
from console.schemas.base import (
    AVRO,
    BACKWARD,
    FORWARD,
    FULL,
    JSON,
    NONE,
    PROTOBUF,
    SCHEMA_TYPES,
    InvalidSchema,
    ParsedSchema,
)


def parse_schema(
    schema_type: str, text: str, references: Mapping[str, str] | None = None
) -> ParsedSchema:
    """Parse ``text`` as a ``schema_type`` schema; ``references`` maps each reference's
    name to its schema text (already registered, of the same type). Raises
    :class:`InvalidSchema`."""
    parsers: dict[str, Callable[[str, Mapping[str, str]], ParsedSchema]] = {
        AVRO: avro.parse,
        JSON: jsonschema.parse,
        PROTOBUF: protobuf.parse,
    }
    parser = parsers.get(schema_type)
    if parser is None:
        raise InvalidSchema(
            f"Unknown schema type {schema_type!r}: one of {', '.join(SCHEMA_TYPES)}"
        )
    if not text.strip():
        raise InvalidSchema("Empty schema")
    return parser(text, references or {})


def _reader_writer_check(schema_type: str) -> Callable[[ParsedSchema, ParsedSchema], list[str]]:
    return {AVRO: avro.check, JSON: jsonschema.check, PROTOBUF: protobuf.check}[schema_type]


def check_compatibility(
    level: str, candidate: ParsedSchema, previous: Sequence[ParsedSchema]
) -> list[str]:
    """Why ``candidate`` may not follow ``previous`` (oldest first) under ``level``;
    an empty list when it may.

    As Confluent Schema Registry: BACKWARD means consumers using ``candidate`` can read
    data written with the latest previous schema, FORWARD that consumers of the latest
    previous schema can read data written with ``candidate``, FULL both; the
    ``_TRANSITIVE`` forms check against every previous schema, not only the latest.
    A schema of another type than the previous one is incompatible except under NONE.
    """
    if level == NONE or not previous:
        return []
    against = list(previous) if level.endswith("_TRANSITIVE") else [previous[-1]]
    base = level.removesuffix("_TRANSITIVE")
    messages: list[str] = []
    for old in reversed(against):
        if old.schema_type != candidate.schema_type:
            messages.append(
                f"Incompatible schema type: {candidate.schema_type} after {old.schema_type}"
            )
            continue
        check = _reader_writer_check(candidate.schema_type)
        if base in (BACKWARD, FULL):
            messages += [f"{m} (new schema reading old data)" for m in check(candidate, old)]
        if base in (FORWARD, FULL):
            messages += [f"{m} (old schema reading new data)" for m in check(old, candidate)]
    return messages
