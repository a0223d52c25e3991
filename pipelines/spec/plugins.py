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
from typing import Any, Literal, get_args

from pydantic import BaseModel

from pipelines.spec.configs import FilterConfig, KafkaSinkConfig, KafkaSourceConfig

PluginKind = Literal["source", "transform", "sink"]
PLUGIN_KINDS: tuple[PluginKind, ...] = get_args(PluginKind)


@dataclass(frozen=True)
class Plugin:
    """One stage type: its kind, name, human title and description, and config model."""

    type: str
    kind: PluginKind
    title: str
    description: str
    config_model: type[BaseModel]

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
        description="Read records from Kafka topics as CloudEvents (plain JSON or structured).",
        config_model=KafkaSourceConfig,
    ),
    Plugin(
        type="filter",
        kind="transform",
        title="Filter",
        description="Keep only the events matching an EventBridge event pattern.",
        config_model=FilterConfig,
    ),
    Plugin(
        type="kafka",
        kind="sink",
        title="Kafka",
        description="Write events to a Kafka topic, as their data or as whole CloudEvents.",
        config_model=KafkaSinkConfig,
    ),
)

PLUGINS: Mapping[tuple[PluginKind, str], Plugin] = MappingProxyType(
    {(plugin.kind, plugin.type): plugin for plugin in _BUILT_IN}
)
"""Every plugin, keyed by ``(kind, type)``; read-only."""


def get_plugin(kind: str, type_: str) -> Plugin:
    """Return the plugin of ``kind`` named ``type_``; raise :class:`UnknownPluginError`."""
    try:
        return PLUGINS[(kind, type_)]  # type: ignore[index]
    except KeyError:
        raise UnknownPluginError(kind, type_) from None


def plugin_types(kind: str) -> list[str]:
    """The types of one kind, in catalogue order."""
    return [plugin.type for (plugin_kind, _), plugin in PLUGINS.items() if plugin_kind == kind]


def plugins(kind: str | None = None) -> list[Plugin]:
    """All plugins, or those of one kind, in catalogue order."""
    return [plugin for plugin in PLUGINS.values() if kind is None or plugin.kind == kind]
