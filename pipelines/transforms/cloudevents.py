"""CloudEvents transform: wrap (set type/source/subject), unwrap, or set attributes.

``set`` / ``wrap``: static values are literals; ``{field: path}`` values are the text of a
value of the event as it was *before* the stage. A required attribute (id, source, type)
whose field is missing, or a time that is not a timestamp, fails the event (see
:mod:`pipelines.errors`) with a message naming the stage, the field and the event id; an
optional attribute whose field is missing is removed.
Extensions set from a field keep the value's JSON type; static ones are strings.

``unwrap``: ``data`` must be a structured-mode CloudEvent (a JSON object with specversion
1.0, id, source and type); its attributes, extensions (its other members) and ``data``
replace the event's. Origin columns are kept. Any other event fails (``InvalidCloudEvent``)
and keeps its columns.
"""

from __future__ import annotations

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F

from pipelines.cloudevents import (
    OPTIONAL_STRING_ATTRIBUTES,
    RESERVED_MEMBERS,
    SPECVERSION,
    select_event_columns,
)
from pipelines.errors import Check, mark_failures
from pipelines.spec.configs.cloudevents import (
    REQUIRED_ATTRIBUTES,
    SETTABLE_ATTRIBUTES,
    AttributeValue,
    CloudEventsConfig,
    FromField,
)
from pipelines.spec.fieldpaths import parse_field_path
from pipelines.sql import sql_string
from pipelines.transforms.variants import (
    failure_message,
    is_object_sql,
    members_sql,
    read_sql,
    text_sql,
    with_key_sql,
    without_key_sql,
)

STAGE = "cloudevents"


def transform_cloudevents(events: DataFrame, config: CloudEventsConfig) -> DataFrame:
    """Apply the configured action; the result has the event columns."""
    if config.action == "unwrap":
        return unwrap_events(events)
    return set_attributes(events, config.attribute_values())


def set_attributes(events: DataFrame, attributes: dict[str, AttributeValue]) -> DataFrame:
    """Set attributes and extensions, all computed from the event before the stage."""
    columns: dict[str, Column] = {}
    checks: list[Check] = []
    extensions = "`extensions`"
    for name, value in attributes.items():
        if name in SETTABLE_ATTRIBUTES:
            columns[name] = F.expr(_attribute_sql(name, value))
            checks.extend(_attribute_checks(name, value))
        else:
            extensions = _extension_sql(extensions, name, value)
    columns["extensions"] = F.expr(extensions)
    return select_event_columns(mark_failures(events, checks).withColumns(columns))


def unwrap_events(events: DataFrame) -> DataFrame:
    """Make the structured CloudEvent held in ``data`` the event."""
    inner = "`data`"
    strings = {
        name: f"try_variant_get({inner}, '$.{name}', 'string')"
        for name in ("id", "source", "type", "specversion", *OPTIONAL_STRING_ATTRIBUTES)
    }
    time_text = f"try_variant_get({inner}, '$.time', 'string')"
    checked = mark_failures(events, _unwrap_checks(strings, time_text))
    columns = {name: F.expr(sql) for name, sql in strings.items()}
    reserved = ", ".join(sql_string(name) for name in RESERVED_MEMBERS)
    extensions = f"map_filter({members_sql(inner)}, (mk, mv) -> NOT mk IN ({reserved}))"
    lifted = {
        **columns,
        "time": F.expr(f"try_to_timestamp({time_text})"),
        "extensions": F.expr(f"coalesce({extensions}, CAST(map() AS map<string,variant>))"),
        "data": F.expr(f"try_variant_get({inner}, '$.data', 'variant')"),
    }
    # A failed event keeps its columns: what the dead-letter target gets stays readable.
    kept = {
        name: F.when(F.col("failure").isNull(), value).otherwise(F.col(name))
        for name, value in lifted.items()
    }
    return select_event_columns(checked.withColumns(kept))


def _unwrap_checks(strings: dict[str, str], time_text: str) -> list[Check]:
    checks = [
        (f"NOT {is_object_sql('`data`')}", "data is not a JSON object"),
        *(
            (f"coalesce({strings[name]}, '') = ''", f"data has no {name} attribute")
            for name in REQUIRED_ATTRIBUTES
        ),
        (
            f"coalesce({strings['specversion']}, '') != '{SPECVERSION}'",
            f"data is not a CloudEvents {SPECVERSION} event",
        ),
        (
            f"{time_text} IS NOT NULL AND try_to_timestamp({time_text}) IS NULL",
            "time is not an RFC 3339 timestamp",
        ),
        (
            "try_variant_get(`data`, '$.data_base64', 'variant') IS NOT NULL",
            "data_base64 (binary data) is not supported yet",
        ),
    ]
    return [
        (F.expr(condition), "InvalidCloudEvent", failure_message(STAGE, message, "data"))
        for condition, message in checks
    ]


def _attribute_sql(name: str, value: AttributeValue) -> str:
    if value is None:
        return "CAST(NULL AS STRING)"
    if isinstance(value, str):
        literal = sql_string(value)
        return f"to_timestamp({literal})" if name == "time" else literal
    text = text_sql(read_sql(parse_field_path(value.field)))
    return f"try_to_timestamp({text})" if name == "time" else text


def _attribute_checks(name: str, value: AttributeValue) -> list[Check]:
    """Why an attribute set from a field cannot be set: no timestamp, no required value."""
    if not isinstance(value, FromField):
        return []
    text = text_sql(read_sql(parse_field_path(value.field)))
    if name == "time":
        message = failure_message(STAGE, "the value is not a timestamp", value.field)
        condition = f"{text} IS NOT NULL AND try_to_timestamp({text}) IS NULL"
        return [(F.expr(condition), "InvalidTimestamp", message)]
    if name in REQUIRED_ATTRIBUTES:
        message = failure_message(STAGE, f"the event has no value for {name}", value.field)
        return [(F.expr(f"coalesce({text}, '') = ''"), "MissingField", message)]
    return []


def _extension_sql(extensions: str, name: str, value: AttributeValue) -> str:
    key = sql_string(name)
    if value is None:
        return without_key_sql(extensions, key)
    if isinstance(value, FromField):
        found = read_sql(parse_field_path(value.field))
        return (
            f"CASE WHEN {found} IS NULL THEN {without_key_sql(extensions, key)} "
            f"ELSE {with_key_sql(extensions, key, found)} END"
        )
    return with_key_sql(extensions, key, f"CAST({sql_string(value)} AS VARIANT)")
