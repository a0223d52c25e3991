"""Spark implementations of transform plugins, keyed by plugin type.

Each transform is a pure function ``(events DataFrame, config model) -> events DataFrame``
that keeps the event columns (:data:`pipelines.cloudevents.EVENT_SCHEMA`).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from types import MappingProxyType
from typing import Any

from pyspark.sql import DataFrame

from pipelines.transforms.cloudevents import transform_cloudevents
from pipelines.transforms.enrich import enrich_events
from pipelines.transforms.fields import (
    cast_fields,
    drop_fields,
    extract_field,
    flatten_data,
    insert_field,
    mask_fields,
    rename_fields,
    route_by_field,
    set_partition_key,
)
from pipelines.transforms.filter import filter_events_by_pattern
from pipelines.transforms.input_transformer import transform_input
from pipelines.transforms.sql import compute_data_with_sql

Transform = Callable[[DataFrame, Any], DataFrame]

TRANSFORMS: Mapping[str, Transform] = MappingProxyType(
    {
        "filter": filter_events_by_pattern,
        "rename": rename_fields,
        "drop": drop_fields,
        "insert": insert_field,
        "mask": mask_fields,
        "cast": cast_fields,
        "flatten": flatten_data,
        "extract": extract_field,
        "set_key": set_partition_key,
        "route": route_by_field,
        "cloudevents": transform_cloudevents,
        "sql": compute_data_with_sql,
        "input_transformer": transform_input,
        "enrich": enrich_events,
    }
)
"""Transform plugin type -> implementation (same keys as the catalogue's transforms)."""
