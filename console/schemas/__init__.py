"""The schema registry's formats: parse a schema (Avro, JSON Schema, Protobuf) into a
canonical form, and check two schemas' compatibility as Confluent Schema Registry does.

Pure Python, no Django: :mod:`console.services.schemas` stores what this returns, the
Confluent REST API (:mod:`console.api.schema_registry`) and ``/api/v1/schemas/`` call the
services. Each format uses the library that confluent-kafka's own serializers use: Apache
Avro (its ``avro.compatibility`` module does the Avro schema-resolution check), jsonschema
and protobuf's descriptors.
"""

from __future__ import annotations

from console.schemas.base import (
    COMPATIBILITY_LEVELS,
    SCHEMA_TYPES,
    InvalidSchema,
    ParsedSchema,
)
from console.schemas.formats import check_compatibility, parse_schema

__all__ = [
    "COMPATIBILITY_LEVELS",
    "SCHEMA_TYPES",
    "InvalidSchema",
    "ParsedSchema",
    "check_compatibility",
    "parse_schema",
]
