"""Config model of the filter transform."""

from __future__ import annotations

from typing import Any

from pydantic import ConfigDict, Field, field_validator

from pipelines.spec.configs.base import StageConfig
from pipelines.spec.patterns import validate_pattern


class FilterConfig(StageConfig):
    """Keep the events that match an EventBridge event pattern; drop the others."""

    model_config = ConfigDict(title="Filter")

    pattern: dict[str, Any] = Field(
        title="Event pattern",
        description=(
            "An EventBridge event pattern (aws/event-ruler semantics) over the event in its "
            "CloudEvents JSON form: attributes at the top level, the payload under data."
        ),
        examples=[
            {"type": ["com.example.order.created"], "data": {"total": [{"numeric": [">", 100]}]}}
        ],
    )

    @field_validator("pattern", mode="before")
    @classmethod
    def _check_pattern(cls, value: Any) -> Any:
        validate_pattern(value)  # raises PatternError listing every problem
        return value
