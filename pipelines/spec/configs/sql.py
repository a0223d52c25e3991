"""Config model of the SQL transform (Spark SQL expressions that compute the new data)."""

from __future__ import annotations

from typing import Annotated

from pydantic import AfterValidator, ConfigDict, Field, field_validator

from pipelines.spec.configs.base import StageConfig
from pipelines.spec.sql_expressions import check_expression


def _checked(expression: str) -> str:
    check_expression(expression)
    return expression


class SqlConfig(StageConfig):
    """Compute each event's new data object with Spark SQL expressions."""

    model_config = ConfigDict(title="SQL")

    expressions: list[Annotated[str, AfterValidator(_checked)]] = Field(
        title="Expressions",
        description=(
            "Spark SQL expressions over the event columns (id, source, type, subject, time, "
            "extensions, data as VARIANT: data:amount::double). Each one ends with AS <name> "
            "or is a bare column; the results become the keys of the new data object. "
            "Expressions only: no ';', no comments, no SELECT/INSERT/DROP/... keywords."
        ),
        examples=[["data:order.id::string AS order_id", "data:amount::double * 1.2 AS total"]],
        min_length=1,
    )

    @field_validator("expressions")
    @classmethod
    def _distinct_names(cls, value: list[str]) -> list[str]:
        names = [check_expression(expression) for expression in value]
        duplicates = sorted({name for name in names if names.count(name) > 1})
        if duplicates:
            raise ValueError(f"several expressions are named {', '.join(duplicates)}")
        return value
