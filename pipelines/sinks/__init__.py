"""Spark implementations of sink plugins, keyed by plugin type.

A sink turns events into a configured ``DataStreamWriter`` (format, options, output mode);
the builder adds the checkpoint location and query name, and the caller starts it. The
serialization of events is a pure DataFrame function in each sink module.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from types import MappingProxyType
from typing import Any

from pyspark.sql import DataFrame
from pyspark.sql.streaming.readwriter import DataStreamWriter

from pipelines.sinks.files import write_files, write_files_batch
from pipelines.sinks.http import write_http, write_http_batch
from pipelines.sinks.jdbc import write_jdbc, write_jdbc_batch
from pipelines.sinks.kafka import mark_bad_topics, write_kafka, write_kafka_batch
from pipelines.sinks.preview import write_preview, write_preview_batch

Sink = Callable[[DataFrame, Any], DataStreamWriter]

SINKS: Mapping[str, Sink] = MappingProxyType(
    {
        "kafka": write_kafka,
        "files": write_files,
        "preview": write_preview,
        "jdbc": write_jdbc,
        "http": write_http,
    }
)
"""Sink plugin type -> implementation (same keys as the catalogue's sinks)."""

BatchSink = Callable[..., DataFrame | None]
"""``(events, config, batch_id) -> rejected dead letters or None``: writes one micro-batch
from ``foreachBatch`` (the ``preview`` sink also takes ``publisher=``)."""

BATCH_SINKS: Mapping[str, BatchSink] = MappingProxyType(
    {
        "kafka": write_kafka_batch,
        "files": write_files_batch,
        "preview": write_preview_batch,
        "jdbc": write_jdbc_batch,
        "http": write_http_batch,
    }
)
"""Sink plugin type -> micro-batch writer, used when the channel routes dead letters (every
sink has one). A sink that rejects events after its own retries returns them as dead
letters (:data:`pipelines.errors.DEAD_LETTER_SCHEMA`)."""

SinkCheck = Callable[[DataFrame, Any], DataFrame]
SINK_CHECKS: Mapping[str, SinkCheck] = MappingProxyType({"kafka": mark_bad_topics})
"""Sink plugin type -> per-event checks run before the error gate (mark failures)."""
