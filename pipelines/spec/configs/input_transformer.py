"""Config model of the input transformer (EventBridge ``InputPathsMap`` + ``InputTemplate``)."""

from __future__ import annotations

from pydantic import ConfigDict, Field, ValidationInfo, field_validator

from pipelines.spec.configs.base import StageConfig
from pipelines.spec.fieldpaths import parse_json_path
from pipelines.spec.input_template import INPUT_NAME, parse_template

MAX_INPUT_PATHS = 100


class InputTransformerConfig(StageConfig):
    """Reshape each event's data with named JSONPath values and a template."""

    model_config = ConfigDict(title="Input transformer")

    input_paths: dict[str, str] = Field(
        default_factory=dict,
        title="Input paths",
        description=(
            "Name -> JSONPath into the event's CloudEvents JSON form (attributes at the top "
            "level, the payload under data), e.g. $.source or $.data.items[0].sku."
        ),
        examples=[{"order": "$.data.order.id", "source": "$.source"}],
    )
    template: str = Field(
        title="Template",
        description=(
            "The new data, with <name> placeholders. A JSON template yields JSON: a "
            "placeholder outside quotes is replaced by the value as JSON (null when missing), "
            "one inside quotes by its text, escaped. Any other template yields a JSON string: "
            "placeholders are replaced by the value's text (empty when missing)."
        ),
        examples=['{"order": <order>, "message": "order <order> from <source>"}'],
        min_length=1,
    )

    @field_validator("input_paths")
    @classmethod
    def _check_paths(cls, value: dict[str, str]) -> dict[str, str]:
        if len(value) > MAX_INPUT_PATHS:
            raise ValueError(f"at most {MAX_INPUT_PATHS} input paths")
        for name, path in value.items():
            if not INPUT_NAME.fullmatch(name):
                raise ValueError(f"{name!r}: names are 1-64 letters, digits, '_' or '-'")
            parse_json_path(path)
        return value

    @field_validator("template")
    @classmethod
    def _check_placeholders(cls, value: str, info: ValidationInfo) -> str:
        if "input_paths" not in info.data:
            return value  # the paths are invalid; that error is reported on them
        undefined = sorted(parse_template(value).names - set(info.data["input_paths"]))
        if undefined:
            names = ", ".join(f"<{name}>" for name in undefined)
            raise ValueError(f"placeholders without an input path: {names}")
        return value
