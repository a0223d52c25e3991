"""Config models of the built-in plugins (pydantic, no pyspark)."""

from pipelines.spec.configs.base import StageConfig
from pipelines.spec.configs.filter import FilterConfig
from pipelines.spec.configs.kafka import KafkaSinkConfig, KafkaSourceConfig

__all__ = ["FilterConfig", "KafkaSinkConfig", "KafkaSourceConfig", "StageConfig"]
