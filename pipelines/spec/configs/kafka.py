"""Config models of the Kafka source and sink plugins."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import ConfigDict, Field, field_validator

from pipelines.spec.configs.base import StageConfig, check_bootstrap_servers, check_topic

RecordFormat = Literal["json", "cloudevents"]

_BOOTSTRAP_SERVERS = Field(
    title="Bootstrap servers",
    description="Kafka brokers to connect to, as a comma-separated list of host:port.",
    examples=["localhost:9092"],
)


class KafkaSourceConfig(StageConfig):
    """Read events from Kafka topics."""

    model_config = ConfigDict(title="Kafka source")

    bootstrap_servers: str = _BOOTSTRAP_SERVERS
    topics: list[str] = Field(
        title="Topics",
        description="The topics to read; every partition of each topic becomes one task.",
        examples=[["orders"]],
        min_length=1,
    )
    starting_offsets: Literal["earliest", "latest"] = Field(
        "latest",
        title="Starting offsets",
        description=(
            "Where the channel starts reading the first time it runs: earliest (all retained "
            "records) or latest (only new records). Later runs resume from their checkpoint."
        ),
    )
    format: RecordFormat = Field(
        "json",
        title="Record format",
        description=(
            "json: each record value is a JSON document, wrapped into a CloudEvent whose id is "
            "topic/partition/offset. cloudevents: each value is a structured-mode CloudEvent."
        ),
    )

    _check_servers = field_validator("bootstrap_servers")(check_bootstrap_servers)

    @field_validator("topics", mode="before")
    @classmethod
    def _check_topics(cls, value: Any) -> Any:
        if not isinstance(value, list) or not all(isinstance(item, str) for item in value):
            raise ValueError("must be a list of strings")
        if not value:
            raise ValueError("must name at least one topic")
        return [check_topic(topic) for topic in dict.fromkeys(value)]


class KafkaSinkConfig(StageConfig):
    """Write events to a Kafka topic."""

    model_config = ConfigDict(title="Kafka sink")

    bootstrap_servers: str = _BOOTSTRAP_SERVERS
    topic: str = Field(
        title="Topic",
        description="The topic to write to. Each record's key is the event id.",
        examples=["orders-filtered"],
    )
    format: RecordFormat = Field(
        "json",
        title="Record format",
        description=(
            "json: the value is the event's data as JSON. cloudevents: the value is the whole "
            "event in structured-mode CloudEvents JSON (content-type "
            "application/cloudevents+json)."
        ),
    )

    _check_servers = field_validator("bootstrap_servers")(check_bootstrap_servers)
    _check_topic = field_validator("topic")(check_topic)
