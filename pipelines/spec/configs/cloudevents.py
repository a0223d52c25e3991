"""Config model of the CloudEvents transform (wrap, unwrap, set attributes)."""

from __future__ import annotations

from typing import Literal

from pydantic import ConfigDict, Field, field_validator, model_validator

from pipelines.spec.configs.base import StageConfig
from pipelines.spec.fieldpaths import EXTENSION_NAME, READS_FIELD, parse_field_path
from pipelines.timestamps import parse_rfc3339

SETTABLE_ATTRIBUTES = ("id", "source", "type", "subject", "time", "datacontenttype", "dataschema")
REQUIRED_ATTRIBUTES = ("id", "source", "type")
_RESERVED = ("specversion", "data", "data_base64", "extensions")
_ACTION_FIELDS = {
    "wrap": {"type", "source", "subject_field"},
    "unwrap": set(),
    "set": {"attributes"},
}


class FromField(StageConfig):
    """An attribute value taken from a field of the event."""

    model_config = ConfigDict(title="From a field")

    field: str = Field(
        title="Field",
        description="Path of the value in the event's JSON form, e.g. data.order_id.",
        examples=["data.order_id"],
        json_schema_extra=READS_FIELD,
    )

    @field_validator("field")
    @classmethod
    def _check_field(cls, value: str) -> str:
        parse_field_path(value)
        return value


AttributeValue = str | FromField | None


class CloudEventsConfig(StageConfig):
    """Wrap, unwrap or re-label events as CloudEvents."""

    model_config = ConfigDict(title="CloudEvents")

    action: Literal["wrap", "unwrap", "set"] = Field(
        title="Action",
        description=(
            "wrap: set type, source and subject of wrapped plain events. unwrap: the data "
            "is itself a structured CloudEvent; it becomes the event (its attributes, "
            "extensions and data replace the current ones). set: set attributes."
        ),
    )
    type: str | None = Field(None, title="Type", description="wrap: the new type attribute.")
    source: str | None = Field(None, title="Source", description="wrap: the new source attribute.")
    subject_field: str | None = Field(
        None,
        title="Subject field",
        description="wrap: path of the value (as text) that becomes the subject.",
        examples=["data.order_id"],
        json_schema_extra=READS_FIELD,
    )
    attributes: dict[str, AttributeValue] = Field(
        default_factory=dict,
        title="Attributes",
        description=(
            "set: attribute or extension name -> a static text, {field: path} for a value "
            "of the event, or null to remove an optional one. Attributes: "
            f"{', '.join(SETTABLE_ATTRIBUTES)}; time must be RFC 3339."
        ),
        examples=[{"type": "order.placed", "subject": {"field": "data.order_id"}}],
    )

    @field_validator("subject_field")
    @classmethod
    def _check_subject_field(cls, value: str | None) -> str | None:
        if value is not None:
            parse_field_path(value)
        return value

    @field_validator("type", "source")
    @classmethod
    def _not_empty(cls, value: str | None) -> str | None:
        if value == "":
            raise ValueError("must not be empty")
        return value

    @field_validator("attributes", mode="before")
    @classmethod
    def _check_shapes(cls, value: object) -> object:
        for name, item in value.items() if isinstance(value, dict) else ():
            if isinstance(item, dict) and set(item) == {"field"} and isinstance(item["field"], str):
                try:
                    parse_field_path(item["field"])
                except ValueError as error:
                    raise ValueError(f"{name}: {error}") from None
            elif item is not None and not isinstance(item, str):
                raise ValueError(f'{name}: must be a text, {{"field": "<path>"}} or null')
        return value

    @field_validator("attributes")
    @classmethod
    def _check_attributes(cls, value: dict[str, AttributeValue]) -> dict[str, AttributeValue]:
        for name, item in value.items():
            _check_attribute(name, item)
        return value

    @model_validator(mode="after")
    def _fields_of_the_action(self) -> CloudEventsConfig:
        used = {name for name in ("type", "source", "subject_field") if getattr(self, name)}
        used |= {"attributes"} if self.attributes else set()
        extra = sorted(used - _ACTION_FIELDS[self.action])
        if extra:
            raise ValueError(f"{', '.join(extra)} cannot be used with action {self.action}")
        if self.action == "set" and not self.attributes:
            raise ValueError("action set needs attributes")
        if self.action == "wrap" and not used:
            raise ValueError("action wrap needs type, source or subject_field")
        return self

    def attribute_values(self) -> dict[str, AttributeValue]:
        """The attributes the action sets (``wrap`` expressed as ``set``)."""
        if self.action != "wrap":
            return dict(self.attributes)
        values: dict[str, AttributeValue] = {"type": self.type, "source": self.source}
        values = {name: item for name, item in values.items() if item is not None}
        if self.subject_field:
            values["subject"] = FromField(field=self.subject_field)
        return values


def _check_attribute(name: str, value: AttributeValue) -> None:
    if name in _RESERVED or (
        name not in SETTABLE_ATTRIBUTES and not EXTENSION_NAME.fullmatch(name)
    ):
        raise ValueError(
            f"{name!r} is neither a settable attribute ({', '.join(SETTABLE_ATTRIBUTES)}) "
            "nor an extension name (1-20 lower-case letters and digits)"
        )
    if value is None and name in REQUIRED_ATTRIBUTES:
        raise ValueError(f"{name} is required and cannot be removed")
    if value == "" and name in REQUIRED_ATTRIBUTES:
        raise ValueError(f"{name} must not be empty")
    if name == "time" and isinstance(value, str):
        try:
            parse_rfc3339(value)
        except ValueError as exc:
            raise ValueError(f"time {exc}") from None
