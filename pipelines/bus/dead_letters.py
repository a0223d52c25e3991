"""A bus's dead letters: the context a bus adds to a linear channel's (``rule`` and
``target``, the sink's path ``rules[1].sinks[0]``), for the rows a target could not take
and for the events that failed in a stage.
"""

from __future__ import annotations

from typing import Any

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F

from pipelines.bus.plan import RULE, TARGET, BusPlan
from pipelines.cloudevents import event_json
from pipelines.errors import dead_letters_of


def dead_letter_rows(
    plan: BusPlan, rows: DataFrame, error_class: Column, message: Column
) -> DataFrame:
    """Dead letters of delivery rows that a target could not take (stage: its path)."""
    paths = F.array(*(F.lit(t.path) for t in plan.targets))
    names = F.array(*(F.lit(t.rule_name) for t in plan.targets))
    target = F.element_at(paths, F.col(TARGET) + 1)
    return rows.select(
        F.col("id").alias("event_id"),
        event_json().alias("event"),
        target.alias("stage"),
        error_class.alias("error_class"),
        message.alias("message"),
        "origin_topic",
        "origin_partition",
        "origin_offset",
        "origin_timestamp",
        "origin_payload",
        F.element_at(names, F.col(TARGET) + 1).alias("rule"),
        target.alias("target"),
    )


def failed_event_letters(plan: BusPlan, deliveries: DataFrame) -> DataFrame:
    """Dead letters of the events that failed in a stage (shared or a rule's)."""
    names = F.array(*(F.lit(rule.name) for rule in plan.rules))
    rule = F.when(F.col(RULE) >= 0, F.element_at(names, F.col(RULE) + 1))
    return dead_letters_of(
        deliveries,
        rule.cast("string").alias("rule"),
        F.lit(None).cast("string").alias("target"),
    )


def dead_letter_schema() -> Any:
    from pyspark.sql.types import StringType, StructField, StructType

    from pipelines.errors import DEAD_LETTER_SCHEMA

    return StructType(
        [
            *DEAD_LETTER_SCHEMA.fields,
            StructField("rule", StringType()),
            StructField("target", StringType()),
        ]
    )
