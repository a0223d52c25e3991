"""Config model of the SQL transform (Spark SQL expressions that compute the new data)."""

from __future__ import annotations

from typing import Annotated

from pydantic import AfterValidator, ConfigDict, Field, field_validator

from pipelines.spec.configs.base import StageConfig


def check_expression(expression: str) -> str:
    """:func:`pipelines.spec.sql_expressions.check_expression`, imported when first needed:
    Spark's Python workers import this module with the plugin catalogue, and need no sqlglot."""
    from pipelines.spec.sql_expressions import check_expression as check

    return check(expression)


def _checked(expression: str) -> str:
    check_expression(expression)
    return expression


class SqlConfig(StageConfig):
    """Compute each event's new data object with Spark SQL expressions."""

    model_config = ConfigDict(title="SQL")

    expressions: list[Annotated[str, AfterValidator(_checked)]] = Field(
        title="Expressions",
        description=(
            "Spark SQL expressions over the event columns (id, source, specversion, type, "
            "subject, time, datacontenttype, dataschema, extensions, data as VARIANT: "
            "data:amount::double). Each one ends with AS <name> or is a bare column; the "
            "results become the keys of the new data object. Each expression is checked "
            "against allow-lists: only Spark's built-in scalar functions of the SQL function "
            "allow-list (string, math, date/time, conditional, array/map/struct, higher-order, "
            "JSON/VARIANT, hashing, casts), operators, CASE, casts and lambdas; no "
            "sub-queries or tables, no aggregate or window functions, no parameters, no ';' "
            "or comments."
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
