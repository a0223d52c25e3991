"""Field operations (Kafka Connect SMT style) on the event payload, as native SQL.

Every operation that edits ``data`` requires it to be a JSON object: any other event (no
data, an array, a scalar) fails (error class ``NotAnObject``, see :mod:`pipelines.errors`)
with a message naming the stage type, the field and the event id, and is left as it was.
Missing fields are ignored (except by ``insert``, which creates missing parent objects, and
by ``set_key`` / ``route``, which need their value).
"""

from __future__ import annotations

import json
from collections.abc import Callable

from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from pipelines.cloudevents import select_event_columns, time_text_sql
from pipelines.errors import mark_failures
from pipelines.spec.configs.fields import (
    CastConfig,
    DropConfig,
    ExtractConfig,
    FlattenConfig,
    InsertConfig,
    MaskConfig,
    RenameConfig,
    RouteConfig,
    SetKeyConfig,
)
from pipelines.spec.fieldpaths import parse_field_path
from pipelines.sql import sql_string
from pipelines.transforms.variants import (
    edit_object_sql,
    failure_message,
    is_object_sql,
    map_value_sql,
    members_sql,
    read_sql,
    set_path_sql,
    text_sql,
    with_key_sql,
    without_key_sql,
)

FLATTEN_LEVELS = 8
"""Nesting levels ``flatten`` unfolds; objects nested deeper stay objects."""
PARTITION_KEY = "partitionkey"
TOPIC_EXTENSION = "sluicetopic"

_METADATA_SQL = {
    "topic": "CAST(`origin_topic` AS VARIANT)",
    "partition": "CAST(`origin_partition` AS VARIANT)",
    "offset": "CAST(`origin_offset` AS VARIANT)",
    "timestamp": f"CAST({time_text_sql('`origin_timestamp`')} AS VARIANT)",
    "id": "CAST(`id` AS VARIANT)",
    "source": "CAST(`source` AS VARIANT)",
    "type": "CAST(`type` AS VARIANT)",
    "time": f"CAST({time_text_sql('`time`')} AS VARIANT)",
}
_CAST_TYPES = {"double": "double", "long": "bigint", "string": "string", "boolean": "boolean"}


def rename_fields(events: DataFrame, config: RenameConfig) -> DataFrame:
    """Move each ``old`` path's value to ``new`` (in config order); missing ones are skipped."""
    for old, new in config.fields.items():
        old_keys, new_keys = _keys(old), _keys(new)
        value = read_sql(("data", *old_keys))
        moved = set_path_sql(_drop_sql("`data`", old_keys), new_keys, value)
        events = _edit_data(
            events, "rename", old, f"CASE WHEN {value} IS NULL THEN `data` ELSE {moved} END"
        )
    return select_event_columns(events)


def drop_fields(events: DataFrame, config: DropConfig) -> DataFrame:
    """Remove every listed path from ``data``."""
    for field in config.fields:
        events = _edit_data(events, "drop", field, _drop_sql("`data`", _keys(field)))
    return select_event_columns(events)


def insert_field(events: DataFrame, config: InsertConfig) -> DataFrame:
    """Set ``config.field`` to the static value or the metadata named by ``from``."""
    if config.from_ is not None:
        value = _METADATA_SQL[config.from_]
    else:
        value = f"parse_json({sql_string(_json(config.value))})"
    edited = set_path_sql("`data`", _keys(config.field), value)
    return select_event_columns(_edit_data(events, "insert", config.field, edited))


def mask_fields(events: DataFrame, config: MaskConfig) -> DataFrame:
    """Replace each listed value by a mask of the same JSON type."""
    replacement = f"CAST({sql_string(config.replacement)} AS VARIANT)"

    def mask(value: str) -> str:
        kind = f"schema_of_variant({value})"
        return (
            f"CASE WHEN {kind} = 'STRING' THEN {replacement} "
            f"WHEN {kind} = 'BOOLEAN' THEN CAST(false AS VARIANT) "
            f"WHEN {kind} LIKE 'OBJECT%' THEN parse_json('{{}}') "
            f"WHEN {kind} LIKE 'ARRAY%' THEN parse_json('[]') "
            f"WHEN {kind} = 'VOID' THEN {value} ELSE CAST(0 AS VARIANT) END"
        )

    for field in config.fields:
        events = _edit_data(events, "mask", field, _change_sql(field, mask))
    return select_event_columns(events)


def cast_fields(events: DataFrame, config: CastConfig) -> DataFrame:
    """Convert each listed value; an event with a value that cannot be converted fails
    (error class ``CastError``) and keeps it."""
    for field, target in config.fields.items():
        sql_type = _CAST_TYPES[target]

        def cannot_cast(value: str, sql_type: str = sql_type) -> str:
            return (
                f"{value} IS NOT NULL AND schema_of_variant({value}) != 'VOID' "
                f"AND try_variant_get({value}, '$', '{sql_type}') IS NULL"
            )

        def cast(value: str, sql_type: str = sql_type) -> str:
            converted = f"try_variant_get({value}, '$', '{sql_type}')"
            return (
                f"CASE WHEN schema_of_variant({value}) = 'VOID' OR {converted} IS NULL "
                f"THEN {value} ELSE CAST({converted} AS VARIANT) END"
            )

        problem = failure_message("cast", f"cannot cast the value to {target}", field)
        value = read_sql(("data", *_keys(field)))
        events = mark_failures(events, [(F.expr(cannot_cast(value)), "CastError", problem)])
        events = _edit_data(events, "cast", field, _change_sql(field, cast))
    return select_event_columns(events)


def flatten_data(events: DataFrame, config: FlattenConfig) -> DataFrame:
    """Unfold nested objects of ``data`` (up to :data:`FLATTEN_LEVELS` levels) into keys
    joined by the delimiter; arrays and empty objects are kept as values. Two paths that
    flatten to the same key fail the query (duplicate map key)."""
    delimiter = sql_string(config.delimiter)
    members = members_sql("`data`")
    for _ in range(FLATTEN_LEVELS):
        members = (
            f"map_from_entries(flatten(transform(map_entries({members}), e -> "
            f"CASE WHEN size(coalesce({members_sql('e.value')}, map())) > 0 THEN "
            f"transform(map_entries({members_sql('e.value')}), c -> "
            f"struct(concat(e.key, {delimiter}, c.key) AS key, c.value AS value)) "
            f"ELSE array(e) END)))"
        )
    flattened = f"to_variant_object({members})"
    return select_event_columns(_edit_data(events, "flatten", "data", flattened))


def extract_field(events: DataFrame, config: ExtractConfig) -> DataFrame:
    """``data`` becomes the value at ``config.field`` (SQL NULL, no data, when absent)."""
    value = read_sql(parse_field_path(config.field))
    return select_event_columns(events.withColumn("data", F.expr(value)))


def set_partition_key(events: DataFrame, config: SetKeyConfig) -> DataFrame:
    """Set extension ``partitionkey`` to the text of ``config.field``."""
    return _set_extension(events, "set_key", config.field, PARTITION_KEY, "")


def route_by_field(events: DataFrame, config: RouteConfig) -> DataFrame:
    """Set extension ``sluicetopic`` to ``prefix`` + the text of ``config.field``."""
    return _set_extension(events, "route", config.field, TOPIC_EXTENSION, config.prefix)


def _set_extension(events: DataFrame, stage: str, field: str, name: str, prefix: str) -> DataFrame:
    """Set extension ``name``; an event without a value at ``field`` fails (``MissingField``)."""
    text = text_sql(read_sql(parse_field_path(field)))
    missing = failure_message(stage, "the event has no value", field)
    events = mark_failures(events, [(F.expr(f"{text} IS NULL"), "MissingField", missing)])
    value = f"CAST(concat({sql_string(prefix)}, {text}) AS VARIANT)"
    extensions = with_key_sql("`extensions`", sql_string(name), value)
    return select_event_columns(events.withColumn("extensions", F.expr(extensions)))


def _keys(field: str) -> tuple[str, ...]:
    return parse_field_path(field, data_only=True)[1:]


def _drop_sql(node: str, keys: tuple[str, ...]) -> str:
    return edit_object_sql(
        node, keys, lambda members, key, _: without_key_sql(members, key), create=False
    )


def _change_sql(field: str, change: Callable[[str], str]) -> str:
    return edit_object_sql(
        "`data`",
        _keys(field),
        lambda members, key, _: map_value_sql(members, key, change),
        create=False,
    )


def _edit_data(events: DataFrame, stage: str, field: str, edited: str) -> DataFrame:
    """Replace ``data`` by ``edited``; an event whose data is not an object fails
    (``NotAnObject``) and keeps its data."""
    problem = failure_message(stage, "data is not a JSON object", field)
    not_object = F.expr(f"NOT {is_object_sql('`data`')}")
    events = mark_failures(events, [(not_object, "NotAnObject", problem)])
    checked = f"CASE WHEN {is_object_sql('`data`')} THEN {edited} ELSE `data` END"
    return events.withColumn("data", F.expr(checked))


def _json(value: object) -> str:
    return json.dumps(value, separators=(",", ":"))
