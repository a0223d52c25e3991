"""Filter transform: keep the events that match an EventBridge event pattern."""

from __future__ import annotations

from typing import Any

from pyspark.sql import Column, DataFrame

from pipelines.cloudevents import attribute_sql
from pipelines.errors import failed_or
from pipelines.patterns import filter_by_pattern, pattern_predicate
from pipelines.spec.configs import FilterConfig


def event_predicate(pattern: Any) -> Column:
    """Native predicate: the event (its CloudEvents JSON form) matches ``pattern``."""
    return pattern_predicate(pattern, attribute_sql)


def filter_events_by_pattern(events: DataFrame, config: FilterConfig) -> DataFrame:
    """Keep the events matching ``config.pattern`` (and failed events, which go on to the
    error gate); columns and order are unchanged."""
    return filter_by_pattern(events, config.pattern, attribute_sql, failed_or)
