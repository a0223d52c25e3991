"""Where a Kafka stage in a Confluent wire format (``avro``, ``protobuf``, ``json-schema``)
finds its schemas: Sluice's own registry (the default) or an external one speaking Confluent's
REST API, at a URL its allow-list names (``SLUICE_SCHEMA_REGISTRY_ALLOW``) and with write-only
credentials, as the ``http`` sink's auth works."""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Annotated, Any

from pydantic import ConfigDict, Field, field_validator, model_serializer, model_validator
from pydantic.json_schema import SkipJsonSchema

from pipelines.net import REGISTRY_ALLOW_ENV, SCHEMA_REGISTRY
from pipelines.spec.configs.base import StageConfig
from pipelines.spec.configs.http_sink import (
    BasicAuth,
    BearerAuth,
    NoAuth,
    check_http_url,
    url_origin,
)

WIRE_FORMATS = frozenset({"avro", "protobuf", "json-schema"})
"""Record formats in Confluent's wire format: magic byte 0, the 4-byte schema id, the payload."""

RegistryAuth = Annotated[NoAuth | BasicAuth | BearerAuth, Field(discriminator="type")]
_SUBJECT = re.compile(r"[\x20-\x7e]{1,255}")
_TEAM = re.compile(r"[a-z0-9][a-z0-9_-]{0,62}")
_MESSAGE = re.compile(r"[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z_][A-Za-z0-9_]*)*")


class SchemaRegistryConfig(StageConfig):
    """The schema registry of a Kafka stage in a wire format, and the subject it uses."""

    model_config = ConfigDict(title="Schema registry")

    url: str | None = Field(
        None,
        title="Registry URL",
        description=(
            "An external registry speaking Confluent's REST API (http:// or https://). Empty: "
            "Sluice's own registry (/schema-registry/). Non-public addresses are refused unless "
            f"{REGISTRY_ALLOW_ENV} names them."
        ),
        examples=["https://registry.example.com"],
    )
    auth: RegistryAuth = Field(
        NoAuth(type="none"),
        title="Authentication",
        description=(
            "For an external registry: none, basic (a user and password, Confluent's "
            "basic.auth.user.info) or bearer (a token). Secrets are write-only."
        ),
    )
    subject: str | None = Field(
        None,
        title="Subject",
        description=(
            "The subject whose schemas are used. A source reads each record with the schema "
            "its id names (any version of the subject) into the subject's latest version; a "
            "sink writes with the subject's latest version. Default: <topic>-value "
            "(Confluent's TopicNameStrategy)."
        ),
        examples=["orders-value"],
    )
    message: str | None = Field(
        None,
        title="Protobuf message",
        description=(
            "For a protobuf sink: the full name of the message the data is written as, when "
            "the subject's file has several (e.g. shop.Order). Default: the file's first "
            "message. A source reads the message each record's indexes name."
        ),
        examples=["shop.Order"],
    )

    team: SkipJsonSchema[str | None] = Field(
        None,
        description=(
            "Set by the runtime, never by an editor (the console refuses it): the channel's team, "
            "whose registry (/schema-registry/teams/<team>/) Sluice's own registry means "
            "(:func:`pipelines.registry_client.bind_registry_team`)."
        ),
    )

    @field_validator("team")
    @classmethod
    def _check_team(cls, value: str | None) -> str | None:
        if value is not None and not _TEAM.fullmatch(value):
            raise ValueError("must be a team's name")
        return value

    @model_serializer(mode="wrap")
    def _without_unset_team(self, handler: Any) -> Any:
        data = handler(self)
        if isinstance(data, dict) and data.get("team") is None:
            data.pop("team", None)  # stored specs never carry it
        return data

    @field_validator("url")
    @classmethod
    def _check_url(cls, value: str | None) -> str | None:
        if value is None:
            return None
        return check_http_url(value.rstrip("/"), SCHEMA_REGISTRY)

    @field_validator("subject")
    @classmethod
    def _check_subject(cls, value: str | None) -> str | None:
        if value is not None and not _SUBJECT.fullmatch(value):
            raise ValueError("must be 1 to 255 printable ASCII characters")
        return value

    @field_validator("message")
    @classmethod
    def _check_message(cls, value: str | None) -> str | None:
        if value is not None and (len(value) > 255 or not _MESSAGE.fullmatch(value)):
            raise ValueError("must be a message's full name: dotted identifiers (shop.Order)")
        return value

    @model_validator(mode="after")
    def _check_auth(self) -> SchemaRegistryConfig:
        if self.url is None and not isinstance(self.auth, NoAuth):
            raise ValueError("auth is for an external registry: set url, or leave auth none")
        if self.url is not None and self.team is not None:
            raise ValueError("team is for Sluice's own registry")
        return self


def registry_secret_binding(config: Mapping[str, Any]) -> dict[str, Any]:
    """What a registry's credentials authenticate to: its URL's origin, the auth type and
    user name (part of the Kafka stage's binding: see :func:`kafka_secret_binding`)."""
    registry = config.get("schema_registry") or {}
    auth = registry.get("auth") or {}
    url = registry.get("url")
    return {
        "schema_registry.url": url_origin(url) if url else None,
        "schema_registry.auth.type": auth.get("type", "none"),
        "schema_registry.auth.username": auth.get("username"),
    }


def default_subject(registry: SchemaRegistryConfig | None, topic: str | None) -> str | None:
    """The subject a stage uses: the configured one, else ``<topic>-value``."""
    if registry is not None and registry.subject is not None:
        return registry.subject
    return None if topic is None else f"{topic}-value"
