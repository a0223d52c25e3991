"""Spark implementations of source plugins, keyed by plugin type.

A source has two parts: ``read(spark, config)`` returns the raw streaming DataFrame (a thin
edge), and ``to_events(raw, config)`` is a pure function turning it into events
(:data:`pipelines.cloudevents.EVENT_SCHEMA`), testable on batch DataFrames.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from types import MappingProxyType
from typing import Any

from pyspark.sql import DataFrame

from pipelines.sources.files import file_records_to_events, read_files
from pipelines.sources.generator import read_generator, ticks_to_events
from pipelines.sources.http import http_records_to_events, read_http
from pipelines.sources.kafka import kafka_records_to_events, read_kafka


@dataclass(frozen=True)
class Source:
    """How to read one source type and turn what it reads into events."""

    read: Callable[..., DataFrame]
    """``(spark, config, *, real_time=False)``: the streaming DataFrame of what it reads, for a
    query in real-time mode when ``real_time``."""
    to_events: Callable[[DataFrame, Any], DataFrame]


SOURCES: Mapping[str, Source] = MappingProxyType(
    {
        "kafka": Source(read=read_kafka, to_events=kafka_records_to_events),
        "files": Source(read=read_files, to_events=file_records_to_events),
        "generator": Source(read=read_generator, to_events=ticks_to_events),
        "http": Source(read=read_http, to_events=http_records_to_events),
    }
)
"""Source plugin type -> implementation (same keys as the ``source`` plugins of the catalogue)."""
