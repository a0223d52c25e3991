"""Input transformer: EventBridge input paths and template, compiled to one SQL ``concat``.

The template's output becomes the event's new ``data``: a JSON template is parsed into a
VARIANT (object, array or scalar, as the template says); a text template becomes a VARIANT
string. Values come from the input paths, read from the event's CloudEvents JSON form:

* JSON template, placeholder outside quotes: the value as JSON; ``null`` when missing;
* JSON template, placeholder inside quotes: the value's text (a string as is, anything else
  as JSON) escaped for a JSON string; empty when missing;
* text template: the value's text; empty when missing.
"""

from __future__ import annotations

from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from pipelines.cloudevents import select_event_columns
from pipelines.spec.configs.input_transformer import InputTransformerConfig
from pipelines.spec.fieldpaths import parse_json_path
from pipelines.spec.input_template import Placeholder, parse_template
from pipelines.sql import sql_string
from pipelines.transforms.variants import read_sql, text_sql


def transform_input(events: DataFrame, config: InputTransformerConfig) -> DataFrame:
    """Replace each event's ``data`` by the rendered template (other columns unchanged)."""
    return select_event_columns(events.withColumn("data", F.expr(input_template_sql(config))))


def input_template_sql(config: InputTransformerConfig) -> str:
    """SQL for the VARIANT the template renders to for one event."""
    template = parse_template(config.template)
    values = {name: read_sql(parse_json_path(path)) for name, path in config.input_paths.items()}
    parts = [
        sql_string(piece) if isinstance(piece, str) else _value_sql(piece, values, template.is_json)
        for piece in template.pieces
    ]
    text = f"concat({', '.join(parts)})" if parts else "''"
    return f"parse_json({text})" if template.is_json else f"CAST({text} AS VARIANT)"


def _value_sql(placeholder: Placeholder, values: dict[str, str], is_json: bool) -> str:
    value = values[placeholder.name]
    if not is_json:
        return f"coalesce({text_sql(value)}, '')"
    if not placeholder.in_string:
        return f"coalesce(to_json({value}), 'null')"
    quoted = f"to_json(CAST(coalesce({text_sql(value)}, '') AS VARIANT))"
    return f"substr({quoted}, 2, length({quoted}) - 2)"
