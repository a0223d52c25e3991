"""Generator source: synthetic CloudEvents at a steady rate, for demos and tests.

Built on Spark's ``rate`` source (columns ``timestamp`` and ``value``, a gap-free sequence
from 0 kept in the checkpoint). Each tick becomes one event:

* ``id = "generator/{seq}"``, so a replay produces the same ids;
* ``source``, ``type`` from the config, ``specversion = "1.0"``,
  ``datacontenttype = "application/json"``, ``time`` = the tick's timestamp;
* ``data`` = the config's template (:mod:`pipelines.spec.generator_template`) with its
  placeholders computed from ``seq`` by native expressions (``xxhash64`` and ``pmod``, no UDF);
* ``origin_offset = seq`` and ``origin_timestamp`` = the tick's timestamp.

The whole template compiles to one JSON text (``concat`` of literals and computed pieces)
parsed once by ``parse_json``: every computed piece is a number or a quoted, pre-escaped
literal, so the text is always valid JSON.
"""

from __future__ import annotations

import json
from typing import Any

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from pipelines.cloudevents import (
    JSON_CONTENT_TYPE,
    SPECVERSION,
    no_extensions,
    select_event_columns,
    time_text_sql,
)
from pipelines.errors import no_failure
from pipelines.spec.configs.generator import GeneratorSourceConfig
from pipelines.spec.generator_template import Placeholder, TemplateString, parse_template
from pipelines.sql import sql_string

GENERATOR_ID_PREFIX = "generator/"

Piece = tuple[bool, str]
"""A piece of generated JSON text: ``(True, literal text)`` or ``(False, SQL expression)``."""


def read_generator(
    spark: SparkSession, config: GeneratorSourceConfig, *, real_time: bool = False
) -> DataFrame:
    """Streaming DataFrame of ticks (``timestamp``, ``value``) at ``config.rate`` per second;
    read alike in every mode."""
    return spark.readStream.format("rate").option("rowsPerSecond", config.rate).load()


def ticks_to_events(ticks: DataFrame, config: GeneratorSourceConfig) -> DataFrame:
    """Turn rate-source ticks into events (:data:`pipelines.cloudevents.EVENT_SCHEMA`)."""
    seq, time = F.col("value"), F.col("timestamp")
    data = F.expr(template_sql(config.template, seq="`value`", time="`timestamp`"))
    events = ticks.select(
        F.concat(F.lit(GENERATOR_ID_PREFIX), seq.cast("string")).alias("id"),
        F.lit(config.source).alias("source"),
        F.lit(SPECVERSION).alias("specversion"),
        F.lit(config.type).alias("type"),
        F.lit(None).cast("string").alias("subject"),
        time.alias("time"),
        F.lit(JSON_CONTENT_TYPE).alias("datacontenttype"),
        F.lit(None).cast("string").alias("dataschema"),
        no_extensions().alias("extensions"),
        data.alias("data"),
        F.lit(None).cast("string").alias("origin_topic"),
        F.lit(None).cast("int").alias("origin_partition"),
        seq.cast("bigint").alias("origin_offset"),
        time.alias("origin_timestamp"),
        F.lit(None).cast("string").alias("origin_payload"),
        no_failure().alias("failure"),
    )
    return select_event_columns(events)


def template_sql(template: Any, *, seq: str, time: str) -> str:
    """SQL for the VARIANT a template gives for the event whose sequence number is ``seq``.

    ``seq`` and ``time`` are SQL expressions (a BIGINT and a TIMESTAMP). Raises
    ``TemplateError`` if the template is invalid.
    """
    pieces = _merged(_value_pieces(parse_template(template), seq, time))
    parts = [sql_string(text) if literal else text for literal, text in pieces]
    return f"parse_json(concat({', '.join(parts)}))"


def _value_pieces(value: Any, seq: str, time: str) -> list[Piece]:
    if isinstance(value, TemplateString):
        return _string_pieces(value, seq, time)
    if isinstance(value, dict):
        pieces: list[Piece] = [(True, "{")]
        for index, (key, item) in enumerate(value.items()):
            pieces.append((True, ("," if index else "") + json.dumps(key) + ":"))
            pieces.extend(_value_pieces(item, seq, time))
        return [*pieces, (True, "}")]
    if isinstance(value, list):
        pieces = [(True, "[")]
        for index, item in enumerate(value):
            pieces.extend([(True, ",")] if index else [])
            pieces.extend(_value_pieces(item, seq, time))
        return [*pieces, (True, "]")]
    return [(True, json.dumps(value))]


def _string_pieces(value: TemplateString, seq: str, time: str) -> list[Piece]:
    single = value.single
    if single is not None and single.kind in ("seq", "number"):
        return [(False, _placeholder_text(single, seq, time))]
    pieces: list[Piece] = [(True, '"')]
    for part in value.parts:
        if isinstance(part, str):
            pieces.append((True, json.dumps(part)[1:-1]))
        else:
            pieces.append((False, _placeholder_text(part, seq, time)))
    return [*pieces, (True, '"')]


def _placeholder_text(placeholder: Placeholder, seq: str, time: str) -> str:
    """SQL for a placeholder's text inside a JSON string (escaped, without quotes)."""
    if placeholder.kind == "seq":
        return f"CAST({seq} AS STRING)"
    if placeholder.kind == "time":
        return time_text_sql(time)
    pick = f"pmod(xxhash64({seq}, {placeholder.salt}), {{n}})"
    if placeholder.kind == "choice":
        options = ", ".join(sql_string(json.dumps(c)[1:-1]) for c in placeholder.choices)
        index = pick.format(n=len(placeholder.choices))
        return f"element_at(array({options}), CAST({index} AS INT) + 1)"
    # number: an integer count of 10**-decimals units, exact as a DECIMAL of that scale
    decimals, scale = placeholder.decimals, 10**placeholder.decimals
    choices = (placeholder.high - placeholder.low) * scale + 1
    units = f"({placeholder.low * scale} + {pick.format(n=choices)})"
    if not decimals:
        return f"CAST({units} AS STRING)"
    exact = f"CAST(CAST({units} AS DECIMAL(38, 0)) / {scale} AS DECIMAL(38, {decimals}))"
    return f"CAST({exact} AS STRING)"


def _merged(pieces: list[Piece]) -> list[Piece]:
    """Join neighbouring literal pieces (fewer ``concat`` arguments)."""
    merged: list[Piece] = []
    for literal, text in pieces:
        if literal and merged and merged[-1][0]:
            merged[-1] = (True, merged[-1][1] + text)
        else:
            merged.append((literal, text))
    return merged
