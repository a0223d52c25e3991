"""Spark implementations of transform plugins, keyed by plugin type.

Each transform is a pure function ``(events DataFrame, config model) -> events DataFrame``
that keeps the event columns (:data:`pipelines.cloudevents.EVENT_SCHEMA`).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from types import MappingProxyType
from typing import Any

from pyspark.sql import DataFrame

from pipelines.transforms.filter import filter_events_by_pattern

Transform = Callable[[DataFrame, Any], DataFrame]

TRANSFORMS: Mapping[str, Transform] = MappingProxyType({"filter": filter_events_by_pattern})
"""Transform plugin type -> implementation (same keys as the catalogue's transforms)."""
