"""Parsing and compatibility, whatever the format (the formats' modules do the work)."""

from __future__ import annotations

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
