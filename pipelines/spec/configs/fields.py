"""Config models of the field-operation transforms (Kafka Connect SMT style).

Field paths are dotted paths into the event's CloudEvents JSON form
(:mod:`pipelines.spec.fieldpaths`). Operations that edit the payload take ``data.<key>...``
paths; those that read a value (``set_key``, ``route``, ``extract``) take any path.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import ConfigDict, Field, field_validator, model_validator

from pipelines.spec.configs.base import StageConfig
from pipelines.spec.fieldpaths import READS_FIELD, WRITES_FIELD, parse_field_path

CastType = Literal["double", "long", "string", "boolean"]
MetadataName = Literal["topic", "partition", "offset", "timestamp", "id", "source", "type", "time"]


def _data_path(value: str) -> str:
    parse_field_path(value, data_only=True)
    return value


def _any_path(value: str) -> str:
    parse_field_path(value)
    return value


def _data_paths(values: list[str]) -> list[str]:
    return [_data_path(value) for value in values]


class RenameConfig(StageConfig):
    """Rename (move) fields of the payload; a missing field is left alone."""

    model_config = ConfigDict(title="Rename fields")

    fields: dict[str, str] = Field(
        title="Fields",
        description="Old path -> new path, both inside data (e.g. data.old -> data.new).",
        examples=[{"data.cust": "data.customer_id"}],
        min_length=1,
    )

    @field_validator("fields")
    @classmethod
    def _check_fields(cls, value: dict[str, str]) -> dict[str, str]:
        for old, new in value.items():
            _data_path(old), _data_path(new)
        return value


class DropConfig(StageConfig):
    """Remove fields from the payload; a missing field is ignored."""

    model_config = ConfigDict(title="Drop fields")

    fields: list[str] = Field(
        title="Fields",
        description="Paths inside data to remove (e.g. data.card.number).",
        examples=[["data.secret"]],
        min_length=1,
    )

    _check_fields = field_validator("fields")(_data_paths)


class InsertConfig(StageConfig):
    """Insert a static JSON value, or a piece of event metadata, at a path in the payload."""

    model_config = ConfigDict(title="Insert field", serialize_by_alias=True, validate_by_name=True)

    field: str = Field(
        title="Field",
        description="Path inside data to set; missing parent objects are created.",
        examples=["data.channel"],
        json_schema_extra=WRITES_FIELD,
    )
    value: Any = Field(
        None,
        title="Static value",
        description="The JSON value to insert (give either this or from).",
        examples=["web"],
    )
    from_: MetadataName | None = Field(
        None,
        alias="from",
        title="From event metadata",
        description=(
            "Insert event metadata instead of a static value: topic, partition, offset or "
            "timestamp of the Kafka record it came from, or the event's id, source, type or "
            "time (timestamps as RFC 3339 text)."
        ),
    )

    _check_field = field_validator("field")(_data_path)

    @model_validator(mode="after")
    def _one_value(self) -> InsertConfig:
        if self.from_ is None and "value" not in self.model_fields_set:
            raise ValueError("give either value (a static JSON value) or from (event metadata)")
        if self.from_ is not None and self.value is not None:
            raise ValueError("give either value or from, not both")
        return self


class MaskConfig(StageConfig):
    """Replace field values by a type-preserving mask (strings -> replacement, numbers -> 0,
    booleans -> false, objects -> {}, arrays -> []; null stays null)."""

    model_config = ConfigDict(title="Mask fields")

    fields: list[str] = Field(
        title="Fields",
        description="Paths inside data whose values are masked; missing ones are ignored.",
        examples=[["data.card.number"]],
        min_length=1,
    )
    replacement: str = Field(
        "****", title="Replacement", description="The text that replaces string values."
    )

    _check_fields = field_validator("fields")(_data_paths)


class CastConfig(StageConfig):
    """Convert field values to another JSON type."""

    model_config = ConfigDict(title="Cast fields")

    fields: dict[str, CastType] = Field(
        title="Fields",
        description=(
            "Path inside data -> double, long, string or boolean. A value that cannot be "
            "converted fails the channel; missing or null values are left alone."
        ),
        examples=[{"data.amount": "double"}],
        min_length=1,
    )

    @field_validator("fields")
    @classmethod
    def _check_fields(cls, value: dict[str, str]) -> dict[str, str]:
        for path in value:
            _data_path(path)
        return value


class FlattenConfig(StageConfig):
    """Flatten nested objects of the payload into top-level keys joined by a delimiter."""

    model_config = ConfigDict(title="Flatten")

    delimiter: str = Field(
        ".",
        title="Delimiter",
        description="Joins the keys of nested objects: {a: {b: 1}} becomes {'a.b': 1}.",
        min_length=1,
    )


class ExtractConfig(StageConfig):
    """Replace the payload by one of its values (or any value of the event)."""

    model_config = ConfigDict(title="Extract field")

    field: str = Field(
        title="Field",
        description="Path of the value that becomes data (e.g. data.order); when the event "
        "has no such value the event is left without data.",
        examples=["data.order"],
        json_schema_extra=READS_FIELD,
    )

    _check_field = field_validator("field")(_any_path)


class SetKeyConfig(StageConfig):
    """Set the CloudEvents partitioning extension ``partitionkey`` from a field's text."""

    model_config = ConfigDict(title="Set key")

    field: str = Field(
        title="Field",
        description="Path whose value (as text) becomes partitionkey, the Kafka record key "
        "of the Kafka sink. An event without the value fails the channel.",
        examples=["data.customer_id"],
        json_schema_extra=READS_FIELD,
    )

    _check_field = field_validator("field")(_any_path)


class RouteConfig(StageConfig):
    """Choose each event's Kafka topic from a field: extension ``sluicetopic``."""

    model_config = ConfigDict(title="Route by field")

    field: str = Field(
        title="Field",
        description="Path whose value (as text) names the topic; the Kafka sink writes to "
        "sluicetopic when present. An event without the value fails the channel.",
        examples=["data.region"],
        json_schema_extra=READS_FIELD,
    )
    prefix: str = Field(
        "",
        title="Prefix",
        description="Text put before the value (letters, digits, '.', '_' or '-').",
        examples=["orders-"],
        pattern=r"^[A-Za-z0-9._-]{0,200}$",
    )

    _check_field = field_validator("field")(_any_path)
