"""Build small event DataFrames (the columns of ``pipelines.cloudevents``) for transform tests."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from typing import Any

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from pipelines.cloudevents import EVENT_COLUMNS, event_json
from pipelines.errors import no_failure

EVENT_TIME = datetime(2024, 6, 1, 8, 15, 30, tzinfo=UTC)
_NO_DATA = object()

_ROW_SCHEMA = (
    "id string, source string, specversion string, type string, subject string, "
    "time timestamp, datacontenttype string, dataschema string, extensions_json string, "
    "data_json string, origin_topic string, origin_partition int, origin_offset bigint, "
    "origin_timestamp timestamp"
)


def events_frame(spark: SparkSession, events: list[dict[str, Any]]) -> DataFrame:
    """An event DataFrame: each dict gives ``data`` (JSON; omit it for no data) and any
    attribute or ``extensions`` (a dict of JSON values) to override the defaults. Event n
    comes from Kafka record ``orders/0/n``."""
    rows = [_row(n, event) for n, event in enumerate(events)]
    frame = spark.createDataFrame(rows, _ROW_SCHEMA)
    return frame.select(
        "*",
        F.expr(
            "CAST(from_json(extensions_json, 'map<string,string>') AS map<string,string>)"
        ).alias("_ext"),
        F.expr("parse_json(data_json)").alias("data"),
        F.col("data_json").alias("origin_payload"),
        no_failure().alias("failure"),
    ).select(
        *[
            F.expr("transform_values(_ext, (k, v) -> parse_json(v))").alias("extensions")
            if name == "extensions"
            else F.col(name)
            for name in EVENT_COLUMNS
        ]
    )


def failures(events: DataFrame) -> list[tuple[str, str]]:
    """``(error class, message)`` of each failed event, in row order."""
    failed = events.filter(F.col("failure").isNotNull())
    return [tuple(row) for row in failed.select("failure.error_class", "failure.message").collect()]


def passed(events: DataFrame) -> DataFrame:
    """The events that did not fail."""
    return events.filter(F.col("failure").isNull())


def json_forms(events: DataFrame) -> list[dict[str, Any]]:
    """Every event's CloudEvents JSON form, parsed, in row order."""
    return [json.loads(row[0]) for row in events.select(event_json()).collect()]


def data_of(events: DataFrame) -> list[Any]:
    """Every event's data as parsed JSON (``None`` for no data or JSON null)."""
    rows = events.select(F.to_json("data")).collect()
    return [None if row[0] is None else json.loads(row[0]) for row in rows]


def _row(n: int, event: dict[str, Any]) -> tuple[Any, ...]:
    data = event.get("data", _NO_DATA)
    extensions = {key: json.dumps(value) for key, value in event.get("extensions", {}).items()}
    return (
        event.get("id", f"orders/0/{n}"),
        event.get("source", "kafka://orders"),
        "1.0",
        event.get("type", "sluice.kafka.record"),
        event.get("subject"),
        event.get("time", EVENT_TIME),
        event.get("datacontenttype", "application/json"),
        event.get("dataschema"),
        json.dumps(extensions),
        None if data is _NO_DATA else json.dumps(data),
        "orders",
        0,
        n,
        event.get("origin_timestamp", EVENT_TIME),
    )
