"""Parsing and compatibility, whatever the format (the formats' modules do the work)."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from console.strict_json import StrictJSONError, check_depth

AVRO, JSON, PROTOBUF = "AVRO", "JSON", "PROTOBUF"
#: Confluent's schema types, in the order ``GET /schemas/types`` lists them.
SCHEMA_TYPES = (JSON, PROTOBUF, AVRO)

BACKWARD, FORWARD, FULL, NONE = "BACKWARD", "FORWARD", "FULL", "NONE"
#: Confluent's compatibility levels; ``BACKWARD`` is its default and ours.
COMPATIBILITY_LEVELS = (
    BACKWARD,
    "BACKWARD_TRANSITIVE",
    FORWARD,
    "FORWARD_TRANSITIVE",
    FULL,
    "FULL_TRANSITIVE",
    NONE,
)
DEFAULT_COMPATIBILITY = BACKWARD


class InvalidSchema(ValueError):
    """The text is not a schema of its type (Confluent's 42201); the message says why."""


MAX_SCHEMA_DEPTH = 256
"""How deep objects and arrays may nest in a schema's JSON text (Avro, JSON Schema): about 80
levels of records within records, far beyond a real schema, and far short of what exhausts
Python's recursion in the decoder or in the schema libraries (a 500 before)."""


def check_schema_depth(text: str) -> None:
    """Refuse a schema text nested deeper than :data:`MAX_SCHEMA_DEPTH` (:class:`InvalidSchema`,
    the registry's 42201, naming where)."""
    try:
        check_depth(text, MAX_SCHEMA_DEPTH)
    except StrictJSONError as exc:
        raise InvalidSchema(f"Invalid schema: {exc}") from None


@dataclass(frozen=True)
class ParsedSchema:
    """A schema that parsed: its type, its canonical text (what is stored, compared and
    returned: the same schema written twice has one canonical text, hence one id) and
    the format library's object that the compatibility checks read."""

    schema_type: str
    canonical: str
    parsed: Any


def parse_schema(
    schema_type: str, text: str, references: Mapping[str, str] | None = None
) -> ParsedSchema:
    """Parse ``text`` as a ``schema_type`` schema; ``references`` maps each reference's
    name to its schema text (already registered, of the same type). Raises
    :class:`InvalidSchema`."""
    from console.schemas import avro, jsonschema, protobuf

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
    from console.schemas import avro, jsonschema, protobuf

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
