"""Config models of the Kafka source and sink plugins (and their shared security settings)."""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationInfo, field_validator, model_validator

from pipelines import timestamps
from pipelines.spec import reach
from pipelines.spec.configs.base import (
    Secret,
    StageConfig,
    check_bootstrap_servers,
    check_topic,
)
from pipelines.spec.configs.http_sink import canonical_host
from pipelines.spec.configs.kafka_properties import check_properties
from pipelines.spec.configs.retry import RETRY_FIELD, SinkRetry
from pipelines.spec.configs.schema_registry import (
    WIRE_FORMATS,
    SchemaRegistryConfig,
    registry_secret_binding,
)
from pipelines.spec.fieldpaths import READS_FIELD, parse_field_path

SourceFormat = Literal[
    "json", "cloudevents", "cloudevents-binary", "raw", "avro", "protobuf", "json-schema"
]
SinkFormat = Literal["json", "cloudevents", "cloudevents-binary", "avro", "protobuf", "json-schema"]
SecurityProtocol = Literal["PLAINTEXT", "SSL", "SASL_PLAINTEXT", "SASL_SSL"]
SaslMechanism = Literal["PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512"]
StoreType = Literal["JKS", "PKCS12", "PEM"]

_BOOTSTRAP_SERVERS = Field(
    title="Bootstrap servers",
    description="Kafka brokers to connect to, as a comma-separated list of host:port.",
    examples=["localhost:9092"],
)


class KafkaSecurity(StageConfig):
    """How to authenticate to the brokers and encrypt the connection (SASL and/or TLS)."""

    model_config = ConfigDict(title="Security")

    protocol: SecurityProtocol = Field(
        "PLAINTEXT",
        title="Security protocol",
        description="kafka security.protocol: PLAINTEXT, SSL, SASL_PLAINTEXT or SASL_SSL.",
    )
    sasl_mechanism: SaslMechanism | None = Field(
        None,
        title="SASL mechanism",
        description="PLAIN, SCRAM-SHA-256 or SCRAM-SHA-512 (required with SASL_* protocols).",
    )
    username: str | None = Field(None, title="SASL username")
    password: Secret | None = Field(None, title="SASL password")
    ssl_truststore_location: str | None = Field(
        None,
        title="Truststore location",
        description="Path of the truststore with the brokers' CA, on every Spark host.",
    )
    ssl_truststore_password: Secret | None = Field(None, title="Truststore password")
    ssl_truststore_type: StoreType | None = Field(None, title="Truststore type")
    ssl_keystore_location: str | None = Field(
        None, title="Keystore location", description="Client certificate (mutual TLS)."
    )
    ssl_keystore_password: Secret | None = Field(None, title="Keystore password")
    ssl_key_password: Secret | None = Field(None, title="Key password")
    ssl_keystore_type: StoreType | None = Field(None, title="Keystore type")
    ssl_endpoint_identification: bool = Field(
        True,
        title="Verify the broker host name",
        description="Turn off only for test brokers whose certificate does not name the host.",
    )

    @model_validator(mode="after")
    def _check_protocol(self) -> KafkaSecurity:
        sasl = self.protocol.startswith("SASL_")
        ssl = self.protocol.endswith("SSL")
        sasl_fields = ("sasl_mechanism", "username", "password")
        if sasl:
            missing = [name for name in sasl_fields if getattr(self, name) in (None, "")]
            if missing:
                raise ValueError(f"{self.protocol} needs {', '.join(missing)}")
        elif any(getattr(self, name) is not None for name in sasl_fields):
            raise ValueError(
                f"sasl_mechanism, username and password need a SASL_* protocol, not {self.protocol}"
            )
        ssl_set = [name for name in type(self).model_fields if name.startswith("ssl_")]
        if not ssl and any(
            getattr(self, name) is not None
            for name in ssl_set
            if name != "ssl_endpoint_identification"
        ):
            raise ValueError(
                f"ssl_* settings need the SSL or SASL_SSL protocol, not {self.protocol}"
            )
        return self


_SECURITY = Field(
    default_factory=KafkaSecurity,
    title="Security",
    description="SASL and TLS settings; passwords are write-only.",
)
_PROPERTIES: dict[str, str] = Field(
    default_factory=dict,
    title="Other Kafka properties",
    description=(
        'Further Kafka client tuning settings, each prefixed "kafka." (e.g. '
        '"kafka.request.timeout.ms"): timeouts, sizes, batching, compression, acks, client id. '
        "Only an allow-list of settings is accepted: none that loads a class, reads a file or "
        "URL, or holds a secret. Numbers are held to ranges (sizes at most a few times Kafka's "
        "defaults: the driver is shared with other channels)."
    ),
)


_REGISTRY = Field(
    None,
    validate_default=True,
    title="Schema registry",
    description=(
        "For the avro, protobuf and json-schema formats: the registry (Sluice's own unless a "
        "URL is given) and the subject (default <topic>-value)."
    ),
)


def check_wire_format(
    format_: str,
    registry: SchemaRegistryConfig | None,
    topics: list[str] | None,
    *,
    sink: bool = False,
) -> SchemaRegistryConfig | None:
    """The registry settings of a stage in a wire format (defaults filled in), or raise
    ``ValueError`` naming the field; ``topics`` are the topics whose subject is the default."""
    if format_ not in WIRE_FORMATS:
        # All defaults (what a form fills in for an optional object) says nothing: left out.
        if registry is not None and registry != SchemaRegistryConfig():
            raise ValueError(
                f"is only for the avro, protobuf and json-schema formats, not {format_}"
            )
        return None
    registry = registry or SchemaRegistryConfig()
    if registry.message is not None and format_ != "protobuf":
        raise ValueError(f"message: is only for the protobuf format, not {format_}")
    if registry.message is not None and not sink:
        raise ValueError(
            "message: is for a sink (a source reads the message each record's indexes name)"
        )
    if registry.subject is None and (topics is None or len(topics) != 1):
        raise ValueError(
            "subject: name the subject (the default <topic>-value needs exactly one topic)"
        )
    return registry


def _title_security(schema: dict[str, Any]) -> None:
    """Give the ``security`` property a title (pydantic leaves it off a field that is a $ref)."""
    schema["properties"]["security"]["title"] = "Security"


def kafka_secret_binding(config: Mapping[str, Any]) -> dict[str, Any]:
    """What a Kafka stage's secrets authenticate to (:mod:`pipelines.spec.secrets`): the set
    of brokers (order, spaces and the case of host names aside), the security protocol (no
    downgrade from TLS to plaintext), the SASL mechanism and user name, and what the TLS
    client trusts (truststore, host name verification). Any change asks for every password
    of the stage again, the TLS ones included."""
    security = config.get("security") or {}
    brokers = (broker.strip().rpartition(":") for broker in config["bootstrap_servers"].split(","))
    return {
        "bootstrap_servers": frozenset(
            (canonical_host(host), int(port)) for host, _, port in brokers
        ),
        "security.protocol": security.get("protocol", "PLAINTEXT"),
        "security.sasl_mechanism": security.get("sasl_mechanism"),
        "security.username": security.get("username"),
        "security.ssl_truststore_location": security.get("ssl_truststore_location"),
        "security.ssl_endpoint_identification": security.get("ssl_endpoint_identification", True),
        **registry_secret_binding(config),
    }


class TimestampStart(BaseModel):
    """Start at the first record at or after a time."""

    model_config = ConfigDict(extra="forbid", strict=True, title="From a time")

    timestamp: int | str = Field(
        title="Timestamp",
        description="Epoch milliseconds, or RFC 3339 text such as 2024-06-01T08:00:00Z.",
    )

    @field_validator("timestamp")
    @classmethod
    def _check_timestamp(cls, value: int | str) -> int | str:
        epoch_millis(value)
        return value

    @property
    def millis(self) -> int:
        return epoch_millis(self.timestamp)


class OffsetsStart(BaseModel):
    """Start at explicit offsets; every partition of every topic must be named."""

    model_config = ConfigDict(extra="forbid", strict=True, title="From explicit offsets")

    offsets: dict[str, dict[str, int]] = Field(
        title="Offsets",
        description='{"topic": {"partition": offset}}; -2 means earliest, -1 latest.',
        examples=[{"orders": {"0": 12, "1": -2}}],
    )

    @field_validator("offsets")
    @classmethod
    def _check_offsets(cls, value: dict[str, dict[str, int]]) -> dict[str, dict[str, int]]:
        if not value:
            raise ValueError("must name at least one topic")
        for topic, partitions in value.items():
            check_topic(topic)
            if not partitions:
                raise ValueError(f"topic {topic!r}: name at least one partition")
            for partition, offset in partitions.items():
                if not partition.isdigit():
                    raise ValueError(f"topic {topic!r}: partition {partition!r} is not a number")
                if offset < -2:
                    raise ValueError(
                        f"topic {topic!r} partition {partition}: offset must be >= 0, "
                        "or -2 (earliest) or -1 (latest)"
                    )
        return value


StartingOffsets = Literal["earliest", "latest"] | TimestampStart | OffsetsStart
_STARTING_OFFSETS_HELP = (
    """must be 'earliest', 'latest', {"timestamp": epoch ms or RFC 3339} """
    """or {"offsets": {"topic": {"partition": offset}}}"""
)


def epoch_millis(value: int | str) -> int:
    """Epoch milliseconds of an int (taken as is) or RFC 3339 text (read by
    :func:`pipelines.timestamps.parse_rfc3339`), neither before 1970; ``ValueError`` if not."""
    if isinstance(value, int):
        if value < 0:
            raise ValueError("a timestamp in epoch milliseconds must not be negative")
        return value
    millis = timestamps.epoch_millis(value)
    if millis < 0:
        # Kafka reads -1 and -2 as "latest" and "earliest": never let a time become them.
        raise ValueError(f"{value!r} is before 1970-01-01T00:00:00Z")
    return millis


class KafkaSourceConfig(StageConfig):
    """Read events from Kafka topics."""

    model_config = ConfigDict(title="Kafka source", json_schema_extra=_title_security)

    bootstrap_servers: str = _BOOTSTRAP_SERVERS
    topic_pattern: str | None = Field(
        None,
        title="Topic pattern",
        description=(
            "Instead of topics: a regular expression (Java syntax); every matching topic is "
            "read, including ones created later."
        ),
        examples=["orders-.*"],
    )
    topics: list[str] | None = Field(
        None,
        title="Topics",
        description="The topics to read; every partition of each topic becomes one task.",
        examples=[["orders"]],
        validate_default=True,
    )
    starting_offsets: StartingOffsets = Field(
        "latest",
        title="Starting offsets",
        description=(
            "Where the channel starts reading the first time it runs: earliest, latest, "
            '{"timestamp": ...} (first record at or after it; latest when there is none) or '
            '{"offsets": {"topic": {"partition": offset}}} naming every partition. Later runs '
            "resume from their checkpoint."
        ),
    )
    max_events_per_trigger: int | None = Field(
        None,
        ge=1,
        title="Max events per micro-batch",
        description="Upper bound on the records read per micro-batch (Spark maxOffsetsPerTrigger).",
    )
    format: SourceFormat = Field(
        "json",
        title="Record format",
        description=(
            "json: each value is a JSON document, wrapped into a CloudEvent whose id is "
            "topic/partition/offset. cloudevents: each value is a structured-mode CloudEvent. "
            "cloudevents-binary: attributes in ce_* headers, data in the value. raw: the value "
            "as UTF-8 text, wrapped like json, never parsed. avro, protobuf, json-schema: "
            "Confluent's wire format (magic byte, schema id, payload), schemas from "
            "schema_registry; the decoded record becomes data, wrapped like json."
        ),
    )
    schema_registry: SchemaRegistryConfig | None = _REGISTRY
    security: KafkaSecurity = _SECURITY
    properties: dict[str, str] = _PROPERTIES

    _check_servers = field_validator("bootstrap_servers")(check_bootstrap_servers)
    _check_servers_reach = field_validator("bootstrap_servers")(reach.check_kafka_servers)
    _check_properties = field_validator("properties")(check_properties)

    @field_validator("topic_pattern")
    @classmethod
    def _check_pattern(cls, value: str | None) -> str | None:
        if value is None:
            return None
        if not value:
            raise ValueError("must not be empty")
        try:
            re.compile(value)
        except re.error as error:
            raise ValueError(f"is not a regular expression: {error}") from None
        return reach.check_topic_pattern(value)

    @field_validator("topics", mode="before")
    @classmethod
    def _check_topics(cls, value: Any, info: ValidationInfo) -> Any:
        pattern = info.data.get("topic_pattern")
        if value is None:
            if pattern is None and "topic_pattern" in info.data:
                raise ValueError("field required (or set topic_pattern)")
            return None
        if pattern is not None:
            raise ValueError("set topics or topic_pattern, not both")
        if not isinstance(value, list) or not all(isinstance(item, str) for item in value):
            raise ValueError("must be a list of strings")
        if not value:
            raise ValueError("must name at least one topic")
        return [reach.check_topic(check_topic(topic)) for topic in dict.fromkeys(value)]

    @field_validator("starting_offsets", mode="before")
    @classmethod
    def _check_starting_offsets(cls, value: Any, info: ValidationInfo) -> Any:
        if isinstance(value, (TimestampStart, OffsetsStart)) or value in ("earliest", "latest"):
            return value
        if isinstance(value, dict) and set(value) == {"timestamp"}:
            return TimestampStart.model_validate(value)
        if isinstance(value, dict) and set(value) == {"offsets"}:
            start = OffsetsStart.model_validate(value)
            topics = info.data.get("topics")
            unknown = sorted(set(start.offsets) - set(topics or start.offsets))
            if unknown:
                raise ValueError(f"names topics that are not read: {', '.join(unknown)}")
            return start
        raise ValueError(_STARTING_OFFSETS_HELP)

    @field_validator("schema_registry")
    @classmethod
    def _check_wire_format(
        cls, value: SchemaRegistryConfig | None, info: ValidationInfo
    ) -> SchemaRegistryConfig | None:
        if "format" not in info.data:  # the format itself is invalid
            return value
        return check_wire_format(info.data["format"], value, info.data.get("topics"))

    @classmethod
    def secret_binding(cls, config: Mapping[str, Any]) -> dict[str, Any]:
        """Where this stage's secrets go: :func:`kafka_secret_binding`."""
        return kafka_secret_binding(config)


class KafkaSinkConfig(StageConfig):
    """Write events to Kafka topics."""

    model_config = ConfigDict(title="Kafka sink", json_schema_extra=_title_security)

    bootstrap_servers: str = _BOOTSTRAP_SERVERS
    topic: str = Field(
        title="Topic",
        description=(
            "The topic to write to, unless topic_field or the event's sluicetopic extension "
            "names another."
        ),
        examples=["orders-filtered"],
    )
    format: SinkFormat = Field(
        "json",
        title="Record format",
        description=(
            "json: the value is the event's data as JSON. cloudevents: the value is the whole "
            "event in structured-mode CloudEvents JSON (content-type "
            "application/cloudevents+json). cloudevents-binary: attributes and extensions in "
            "ce_* headers, data in the value. avro, protobuf, json-schema: the data in "
            "Confluent's wire format (magic byte, schema id, payload) with the latest schema "
            "of schema_registry's subject."
        ),
    )
    schema_registry: SchemaRegistryConfig | None = _REGISTRY
    key_field: str | None = Field(
        None,
        title="Key field",
        description=(
            "Path in the event's JSON form whose value is the record key (e.g. "
            "data.customer_id; id: the event id). Default, and when the field is absent: the "
            "partitionkey extension (a Kafka source's record key), else the event id."
        ),
        examples=["data.customer_id"],
        json_schema_extra=READS_FIELD,
    )
    topic_field: str | None = Field(
        None,
        title="Topic field",
        description=(
            "Path in the event's JSON form whose text value is the topic. Default, and when "
            "the field is absent: the sluicetopic extension, else topic."
        ),
        examples=["data.region"],
        json_schema_extra=READS_FIELD,
    )
    security: KafkaSecurity = _SECURITY
    properties: dict[str, str] = _PROPERTIES
    retry: SinkRetry | None = RETRY_FIELD

    _check_servers = field_validator("bootstrap_servers")(check_bootstrap_servers)
    _check_servers_reach = field_validator("bootstrap_servers")(reach.check_kafka_servers)
    _check_topic = field_validator("topic")(check_topic)
    _check_topic_reach = field_validator("topic")(reach.check_topic)
    _check_properties = field_validator("properties")(check_properties)

    @field_validator("key_field", "topic_field")
    @classmethod
    def _check_path(cls, value: str | None) -> str | None:
        if value is not None:
            parse_field_path(value)
        return value

    @field_validator("schema_registry")
    @classmethod
    def _check_wire_format(
        cls, value: SchemaRegistryConfig | None, info: ValidationInfo
    ) -> SchemaRegistryConfig | None:
        if "format" not in info.data or "topic" not in info.data:
            return value
        return check_wire_format(info.data["format"], value, [info.data["topic"]], sink=True)

    @classmethod
    def secret_binding(cls, config: Mapping[str, Any]) -> dict[str, Any]:
        """Where this stage's secrets go: :func:`kafka_secret_binding`."""
        return kafka_secret_binding(config)
