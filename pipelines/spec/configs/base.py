"""Base class and shared fields of stage config models."""

from __future__ import annotations

import re
from typing import Annotated

from pydantic import BaseModel, ConfigDict, GetJsonSchemaHandler
from pydantic.json_schema import JsonSchemaValue
from pydantic_core import CoreSchema

KAFKA_TOPIC = re.compile(r"[A-Za-z0-9._-]{1,249}")
_BROKER = re.compile(r"(\[[0-9A-Fa-f:.]+\]|[A-Za-z0-9._-]+):[0-9]{1,5}")


class StageConfig(BaseModel):
    """A plugin's config: strict JSON types, no unknown fields.

    The model's JSON Schema (titles, descriptions, defaults, examples) drives the config form
    in the builder, and the same model re-validates what the form sends.
    """

    model_config = ConfigDict(extra="forbid", strict=True)


class SecretMarker:
    """Marks a config value as a secret: ``"writeOnly": true, "format": "password"``.

    :mod:`pipelines.spec.secrets` finds secrets by this mark in the config's JSON Schema, so
    the console never returns them; the builder's form shows a password input.
    """

    def __get_pydantic_json_schema__(
        self, core_schema: CoreSchema, handler: GetJsonSchemaHandler
    ) -> JsonSchemaValue:
        schema = handler(core_schema)
        schema.update(writeOnly=True, format="password")
        return schema

    def __repr__(self) -> str:
        return "SecretMarker()"


Secret = Annotated[str, SecretMarker()]
"""A secret string (password, token, auth header, API key) in a config model.

Use it as a field's type, alone or nested (``Secret | None``, ``dict[str, Secret]``). Give it
no default other than ``None`` and no ``examples``: the catalogue publishes both.
"""


def check_topic(name: str) -> str:
    """Return ``name`` if it is a legal Kafka topic name, else raise ``ValueError``.

    Topic names never contain ``/``, which event ids built from them rely on.
    """
    if not KAFKA_TOPIC.fullmatch(name) or name in (".", ".."):
        raise ValueError(
            f"{name!r} is not a valid Kafka topic name (1-249 letters, digits, '.', '_' or '-')"
        )
    return name


def check_bootstrap_servers(value: str) -> str:
    """Normalize a ``host:port[,host:port...]`` list (spaces dropped) or raise ``ValueError``."""
    brokers = [broker.strip() for broker in value.split(",")]
    if not all(_BROKER.fullmatch(broker) for broker in brokers):
        raise ValueError(
            f"{value!r} is not a comma-separated list of host:port (e.g. localhost:9092)"
        )
    return ",".join(brokers)
