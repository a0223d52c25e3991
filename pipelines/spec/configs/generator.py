"""Config model of the generator source (synthetic CloudEvents for demos and tests)."""

from __future__ import annotations

import copy
from typing import Any

from pydantic import ConfigDict, Field, JsonValue, field_validator

from pipelines.spec.configs.base import StageConfig
from pipelines.spec.generator_template import DEFAULT_TEMPLATE, parse_template

MAX_RATE = 100_000


class GeneratorSourceConfig(StageConfig):
    """Generate synthetic CloudEvents at a steady rate; every field has a default."""

    model_config = ConfigDict(title="Generator source")

    rate: int = Field(
        10,
        title="Events per second",
        description="How many events to generate per second.",
        ge=1,
        le=MAX_RATE,
    )
    type: str = Field(
        "sluice.demo.order",
        title="Event type",
        description="The CloudEvents type attribute of every generated event.",
        min_length=1,
    )
    source: str = Field(
        "sluice://generator",
        title="Event source",
        description="The CloudEvents source attribute of every generated event.",
        min_length=1,
    )
    template: JsonValue = Field(
        default_factory=lambda: copy.deepcopy(DEFAULT_TEMPLATE),
        title="Data template",
        description=(
            "The data of each event, as JSON whose strings may hold placeholders computed from "
            "the event's sequence number: {{seq}}, {{number:MIN:MAX}}, "
            "{{number:MIN:MAX:DECIMALS}}, {{choice:a,b,c}}, {{time}}. A string that is exactly "
            "one placeholder takes its type (a number for seq and number)."
        ),
        examples=[DEFAULT_TEMPLATE],
    )

    @field_validator("template")
    @classmethod
    def _check_template(cls, value: Any) -> Any:
        parse_template(value)  # raises TemplateError (a ValueError) naming the bad string
        return value
