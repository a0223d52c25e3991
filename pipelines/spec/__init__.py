"""Channel specs, the plugin catalogue and event patterns: pure Python, never imports pyspark.

The console imports this package to validate specs and serve the catalogue without loading
Spark; the driver reads the same models to build the query (``pipelines.builder``).
"""

from pipelines.spec.channel import ChannelSpec, SpecError, StageSpec
from pipelines.spec.plugins import (
    PLUGIN_KINDS,
    PLUGINS,
    Plugin,
    PluginKind,
    UnknownPluginError,
    get_plugin,
    plugin_types,
    plugins,
)
from pipelines.spec.validation import parse_stage_config, validate_spec

__all__ = [
    "PLUGINS",
    "PLUGIN_KINDS",
    "ChannelSpec",
    "Plugin",
    "PluginKind",
    "SpecError",
    "StageSpec",
    "UnknownPluginError",
    "get_plugin",
    "parse_stage_config",
    "plugin_types",
    "plugins",
    "validate_spec",
]
