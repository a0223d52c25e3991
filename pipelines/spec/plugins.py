"""The plugin catalogue: every stage type a channel may use, with its config model.

The console serves this catalogue (``GET /api/v1/plugins/``) and validates specs against it;
the builder finds each type's Spark implementation under the same ``(kind, type)`` key in
``pipelines.sources``, ``pipelines.transforms`` and ``pipelines.sinks``.

To add a plugin: write its config model in ``pipelines/spec/configs/``, add a ``Plugin`` to
``_BUILT_IN`` below, and register its Spark implementation in the package of its kind.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from types import MappingProxyType
from typing import Any, Literal, TypeAlias, get_args

from pydantic import BaseModel

from pipelines.spec.configs import FilterConfig, KafkaSinkConfig, KafkaSourceConfig
from pipelines.spec.configs.cloudevents import CloudEventsConfig
from pipelines.spec.configs.enrich import EnrichConfig
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
from pipelines.spec.configs.files import FilesSinkConfig, FilesSourceConfig
from pipelines.spec.configs.generator import GeneratorSourceConfig
from pipelines.spec.configs.http import HttpSourceConfig
from pipelines.spec.configs.http_sink import HttpSinkConfig
from pipelines.spec.configs.input_transformer import InputTransformerConfig
from pipelines.spec.configs.jdbc import JdbcSinkConfig
from pipelines.spec.configs.preview import PreviewSinkConfig
from pipelines.spec.configs.sql import SqlConfig

PluginKind = Literal["source", "transform", "sink"]
ConfigModel: TypeAlias = type[BaseModel]  # named here: inside Plugin, ``type`` is a field
PLUGIN_KINDS: tuple[PluginKind, ...] = get_args(PluginKind)


@dataclass(frozen=True)
class Plugin:
    """One stage type: its kind, name, human title and description, and config model."""

    type: str
    kind: PluginKind
    title: str
    description: str
    config_model: ConfigModel

    @property
    def json_schema(self) -> dict[str, Any]:
        """JSON Schema of the config (drives the builder's generated form)."""
        return self.config_model.model_json_schema()

    def describe(self) -> dict[str, Any]:
        """JSON-ready description for the catalogue API."""
        return {
            "type": self.type,
            "kind": self.kind,
            "title": self.title,
            "description": self.description,
            "json_schema": self.json_schema,
        }


class UnknownPluginError(LookupError):
    """No plugin of this kind has this type; the message lists the known types."""

    def __init__(self, kind: str, type_: str) -> None:
        known = ", ".join(plugin_types(kind)) or "none"
        super().__init__(f"unknown {kind} type {type_!r}; expected one of: {known}")
        self.kind = kind
        self.type = type_


_BUILT_IN = (
    Plugin(
        type="kafka",
        kind="source",
        title="Kafka",
        description=(
            "Read Kafka records as CloudEvents (JSON, structured, binary, raw, or Avro and "
            "JSON Schema in Confluent's wire format)."
        ),
        config_model=KafkaSourceConfig,
    ),
    Plugin(
        type="files",
        kind="source",
        title="Files",
        description="Read JSON lines, CSV or Parquet files from a directory as they arrive.",
        config_model=FilesSourceConfig,
    ),
    Plugin(
        type="generator",
        kind="source",
        title="Generator",
        description="Generate synthetic CloudEvents at a steady rate from a small template.",
        config_model=GeneratorSourceConfig,
    ),
    Plugin(
        type="http",
        kind="source",
        title="HTTP",
        description=(
            "Receive CloudEvents (structured, batch or binary mode) or plain JSON posted to "
            "POST /api/v1/channels/{name}/events."
        ),
        config_model=HttpSourceConfig,
    ),
    Plugin(
        type="filter",
        kind="transform",
        title="Filter",
        description="Keep only the events matching an EventBridge event pattern.",
        config_model=FilterConfig,
    ),
    Plugin(
        type="rename",
        kind="transform",
        title="Rename fields",
        description="Rename or move fields of the event's data.",
        config_model=RenameConfig,
    ),
    Plugin(
        type="drop",
        kind="transform",
        title="Drop fields",
        description="Remove fields from the event's data.",
        config_model=DropConfig,
    ),
    Plugin(
        type="insert",
        kind="transform",
        title="Insert field",
        description="Set a field of the data to a static value or event metadata.",
        config_model=InsertConfig,
    ),
    Plugin(
        type="mask",
        kind="transform",
        title="Mask fields",
        description="Replace sensitive values with a mask of the same JSON type.",
        config_model=MaskConfig,
    ),
    Plugin(
        type="cast",
        kind="transform",
        title="Cast fields",
        description="Convert fields of the data to double, long, string or boolean.",
        config_model=CastConfig,
    ),
    Plugin(
        type="flatten",
        kind="transform",
        title="Flatten",
        description="Turn nested objects of the data into top-level keys joined by a delimiter.",
        config_model=FlattenConfig,
    ),
    Plugin(
        type="extract",
        kind="transform",
        title="Extract field",
        description="Make one value of the event its whole data.",
        config_model=ExtractConfig,
    ),
    Plugin(
        type="set_key",
        kind="transform",
        title="Set key",
        description="Set the partitionkey extension (the Kafka record key) from a field.",
        config_model=SetKeyConfig,
    ),
    Plugin(
        type="route",
        kind="transform",
        title="Route by field",
        description="Send each event to the Kafka topic named by a field (prefix + value).",
        config_model=RouteConfig,
    ),
    Plugin(
        type="cloudevents",
        kind="transform",
        title="CloudEvents",
        description="Wrap, unwrap or set the CloudEvents attributes of events.",
        config_model=CloudEventsConfig,
    ),
    Plugin(
        type="sql",
        kind="transform",
        title="SQL",
        description="Compute the data object with Spark SQL expressions over the event.",
        config_model=SqlConfig,
    ),
    Plugin(
        type="input_transformer",
        kind="transform",
        title="Input transformer",
        description="Reshape the data with JSONPath values and an EventBridge-style template.",
        config_model=InputTransformerConfig,
    ),
    Plugin(
        type="enrich",
        kind="transform",
        title="Enrich (HTTP)",
        description=(
            "Call an HTTP endpoint for each event or batch of events and merge its answer into "
            "the data, with a cache, timeouts, a concurrency limit and retries."
        ),
        config_model=EnrichConfig,
    ),
    Plugin(
        type="kafka",
        kind="sink",
        title="Kafka",
        description=(
            "Write events to Kafka topics as data (JSON, or Avro and JSON Schema in "
            "Confluent's wire format) or CloudEvents (structured or binary)."
        ),
        config_model=KafkaSinkConfig,
    ),
    Plugin(
        type="jdbc",
        kind="sink",
        title="Database (JDBC)",
        description="Upsert events into a PostgreSQL or SQLite table, one row per event id.",
        config_model=JdbcSinkConfig,
    ),
    Plugin(
        type="http",
        kind="sink",
        title="HTTP (API destination)",
        description=(
            "Send each event as an HTTP request to an API, with authentication, a rate limit "
            "and retries."
        ),
        config_model=HttpSinkConfig,
    ),
    Plugin(
        type="files",
        kind="sink",
        title="Files",
        description="Write events to a directory as Parquet or JSON lines files, exactly once.",
        config_model=FilesSinkConfig,
    ),
    Plugin(
        type="preview",
        kind="sink",
        title="Preview",
        description="Keep the newest events of the channel for the console's live tail.",
        config_model=PreviewSinkConfig,
    ),
)

PLUGINS: Mapping[tuple[PluginKind, str], Plugin] = MappingProxyType(
    {(plugin.kind, plugin.type): plugin for plugin in _BUILT_IN}
)
"""Every plugin, keyed by ``(kind, type)``; read-only."""


def get_plugin(kind: str, type_: str) -> Plugin:
    """Return the plugin of ``kind`` named ``type_``; raise :class:`UnknownPluginError`."""
    try:
        # A kind outside PluginKind is not in the catalogue: the KeyError below reports it.
        return PLUGINS[(kind, type_)]  # type: ignore[index]
    except KeyError:
        raise UnknownPluginError(kind, type_) from None


def plugin_types(kind: str) -> list[str]:
    """The types of one kind, in catalogue order."""
    return [plugin.type for (plugin_kind, _), plugin in PLUGINS.items() if plugin_kind == kind]


def plugins(kind: str | None = None) -> list[Plugin]:
    """All plugins, or those of one kind, in catalogue order."""
    return [plugin for plugin in PLUGINS.values() if kind is None or plugin.kind == kind]
