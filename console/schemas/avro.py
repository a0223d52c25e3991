"""Avro: parsed by Apache Avro (``avro.schema``), checked by its schema-resolution module
(``avro.compatibility``, the port of Java Avro's ``SchemaCompatibility`` that Confluent's
registry uses)."""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

import avro.errors
import avro.name
import avro.schema
from avro.compatibility import ReaderWriterCompatibilityChecker, SchemaCompatibilityType

from console.schemas.base import AVRO, InvalidSchema, ParsedSchema, check_schema_depth


def _json(text: str) -> Any:
    check_schema_depth(text)
    try:
        return json.loads(text)
    except ValueError:
        # A bare type name ("string") is a schema too.
        stripped = text.strip()
        if stripped.isidentifier():
            return stripped
        raise InvalidSchema(f"Invalid schema: not JSON: {text[:80]!r}") from None


def parse(text: str, references: Mapping[str, str]) -> ParsedSchema:
    """Named types from ``references`` (their full names) may be used by name."""
    names = avro.name.Names()
    try:
        for ref_text in references.values():
            avro.schema.make_avsc_object(_json(ref_text), names)
        data = _json(text)
        parsed = avro.schema.make_avsc_object(data, names)
    except InvalidSchema:
        raise
    except (avro.errors.AvroException, TypeError, KeyError, ValueError, AttributeError) as exc:
        raise InvalidSchema(f"Invalid schema: {exc}") from exc
    canonical = json.dumps(data, separators=(",", ":"), ensure_ascii=False)
    return ParsedSchema(AVRO, canonical, parsed)


def check(reader: ParsedSchema, writer: ParsedSchema) -> list[str]:
    """Why data written with ``writer`` cannot be read with ``reader`` (Avro's schema
    resolution); empty when it can."""
    result = ReaderWriterCompatibilityChecker().get_compatibility(reader.parsed, writer.parsed)
    if result.compatibility is SchemaCompatibilityType.compatible:
        return []
    kinds = [i.name.upper() for i in result.incompatibilities] or ["INCOMPATIBLE"]
    details = sorted(result.messages) or [""]
    where = ", ".join(sorted(result.locations))
    return [f"{kinds[0]}: {'; '.join(d for d in details if d)} at {where}".replace(":  at", ": at")]
