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
from pyspark.sql.streaming import DataStreamWriter

from pipelines.sinks.files import write_files
from pipelines.sinks.jdbc import write_jdbc
from pipelines.sinks.kafka import write_kafka
from pipelines.sinks.preview import write_preview

Sink = Callable[[DataFrame, Any], DataStreamWriter]

SINKS: Mapping[str, Sink] = MappingProxyType(
    {"kafka": write_kafka, "files": write_files, "preview": write_preview, "jdbc": write_jdbc}
)
"""Sink plugin type -> implementation (same keys as the catalogue's sinks)."""
