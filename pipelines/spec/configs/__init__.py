"""Config models of the built-in plugins (pydantic, no pyspark)."""

from pipelines.spec.configs.base import StageConfig
from pipelines.spec.configs.files import FilesSinkConfig, FilesSourceConfig
from pipelines.spec.configs.filter import FilterConfig
from pipelines.spec.configs.generator import GeneratorSourceConfig
from pipelines.spec.configs.http import HttpSourceConfig
from pipelines.spec.configs.http_sink import HttpSinkConfig
from pipelines.spec.configs.jdbc import JdbcSinkConfig
from pipelines.spec.configs.kafka import KafkaSinkConfig, KafkaSourceConfig
from pipelines.spec.configs.preview import PreviewSinkConfig

__all__ = [
    "FilesSinkConfig",
    "FilesSourceConfig",
    "FilterConfig",
    "GeneratorSourceConfig",
    "HttpSinkConfig",
    "HttpSourceConfig",
    "JdbcSinkConfig",
    "KafkaSinkConfig",
    "KafkaSourceConfig",
    "PreviewSinkConfig",
    "StageConfig",
]
