"""Kafka source / sink and JDBC sink configs: validation paths and messages, option mapping.

No Spark: the option mapping is plain Python.
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from pipelines.kafka_options import jaas_config, kafka_sink_options, security_options
from pipelines.sources.kafka import FETCH_DEFAULTS, MICRO_BATCH_FETCH, kafka_source_options
from pipelines.spec import SpecError, StageSpec, parse_stage_config
from pipelines.spec.configs import JdbcSinkConfig, KafkaSinkConfig, KafkaSourceConfig
from pipelines.spec.configs.kafka import KafkaSecurity
from pipelines.spec.secrets import redact, secret_paths

SERVERS = {"bootstrap_servers": "k:9092"}


def source(**config: Any) -> KafkaSourceConfig:
    return KafkaSourceConfig.model_validate({**SERVERS, **config})


def errors(kind: str, type_: str, config: dict[str, Any]) -> dict[str, list[str]]:
    with pytest.raises(SpecError) as raised:
        parse_stage_config(kind, StageSpec(type=type_, config=config))  # type: ignore[arg-type]
    return raised.value.errors


# -- Kafka source --------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("config", "path", "message"),
    [
        ({}, "config.topics", "field required (or set topic_pattern)"),
        (
            {"topics": ["a"], "topic_pattern": "a.*"},
            "config.topics",
            "set topics or topic_pattern, not both",
        ),
        ({"topic_pattern": "("}, "config.topic_pattern", "is not a regular expression"),
        ({"topics": ["a"], "starting_offsets": "soon"}, "config.starting_offsets", "must be"),
        (
            {"topics": ["a"], "starting_offsets": {"timestamp": "yesterday"}},
            "config.starting_offsets.timestamp",
            "'yesterday' is not an RFC 3339 timestamp",
        ),
        (
            {"topics": ["a"], "starting_offsets": {"timestamp": "2024-06-01T08:00:00"}},
            "config.starting_offsets.timestamp",
            "has no time zone",
        ),
        (
            {"topics": ["a"], "starting_offsets": {"offsets": {"b": {"0": 1}}}},
            "config.starting_offsets",
            "names topics that are not read: b",
        ),
        (
            {"topics": ["a"], "starting_offsets": {"offsets": {"a": {"x": 1}}}},
            "config.starting_offsets.offsets",
            "partition 'x' is not a number",
        ),
        (
            {"topics": ["a"], "starting_offsets": {"offsets": {"a": {"0": -3}}}},
            "config.starting_offsets.offsets",
            "offset must be >= 0, or -2 (earliest) or -1 (latest)",
        ),
        ({"topics": ["a"], "max_events_per_trigger": 0}, "config.max_events_per_trigger", ""),
        ({"topics": ["a"], "format": "thrift"}, "config.format", "must be"),
        (
            {"topics": ["a"], "properties": {"fetch.max.bytes": "1"}},
            "config.properties",
            "start with 'kafka.'",
        ),
        (
            {"topics": ["a"], "properties": {"kafka.sasl.jaas.config": "x"}},
            "config.properties",
            "is set by a field of its own",
        ),
        (
            {"topics": ["a"], "properties": {"kafka.basic.auth.user.info.password": "x"}},
            "config.properties",
            "looks like a secret",
        ),
        # Kafka client settings that load classes, read files or URLs: an allow-list refuses
        # them, whatever their name looks like.
        *(
            (
                {"topics": ["a"], "properties": {key: value}},
                "config.properties",
                f"{key!r} ",  # "is not an allowed Kafka property" or "looks like a secret"
            )
            for key, value in [
                ("kafka.config.providers", "file"),
                (
                    "kafka.config.providers.file.class",
                    "org.apache.kafka.common.config.provider.FileConfigProvider",
                ),
                ("kafka.sasl.oauthbearer.token.endpoint.url", "file:///etc/passwd"),
                ("kafka.sasl.oauthbearer.jwks.endpoint.url", "http://169.254.169.254/"),
                ("kafka.sasl.login.callback.handler.class", "com.example.Evil"),
                ("kafka.metric.reporters", "com.example.Evil"),
                ("kafka.partitioner.class", "com.example.Evil"),
                ("kafka.KAFKA.request.timeout.ms", "1"),
            ]
        ),
        # Sizes and counts the shared driver's JVM would die of (issue 29's probe: 2^31 - 1
        # each; batch.size with buffer.memory → "Requested array size exceeds VM limit").
        *(
            (
                {"topics": ["a"], "properties": {key: "2147483647"}},
                "config.properties",
                f"{key!r}: 2147483647 is out of range: from ",
            )
            for key in [
                "kafka.batch.size",
                "kafka.buffer.memory",
                "kafka.fetch.max.bytes",
                "kafka.max.partition.fetch.bytes",
                "kafka.max.request.size",
                "kafka.receive.buffer.bytes",
                "kafka.max.poll.records",
                "kafka.linger.ms",
            ]
        ),
        (
            {"topics": ["a"], "properties": {"kafka.max.poll.records": "0"}},
            "config.properties",
            "'kafka.max.poll.records': 0 is out of range: from 1 to 10,000",
        ),
        (
            {"topics": ["a"], "properties": {"kafka.request.timeout.ms": "${file:/etc/x:y}"}},
            "config.properties",
            "is not a valid value",
        ),
        (
            {"topics": ["a"], "properties": {"kafka.client.id": "a\nb"}},
            "config.properties",
            "is not a valid value",
        ),
        (
            {"topics": ["a"], "security": {"protocol": "SASL_SSL", "username": "u"}},
            "config.security",
            "SASL_SSL needs sasl_mechanism, password",
        ),
        (
            {"topics": ["a"], "security": {"username": "u"}},
            "config.security",
            "need a SASL_* protocol, not PLAINTEXT",
        ),
        (
            {"topics": ["a"], "security": {"ssl_truststore_location": "/t.jks"}},
            "config.security",
            "ssl_* settings need the SSL or SASL_SSL protocol",
        ),
    ],
)
def test_source_config_errors_name_the_field(
    config: dict[str, Any], path: str, message: str
) -> None:
    found = errors("source", "kafka", {**SERVERS, **config})
    assert path in found, found
    assert message in " ".join(found[path])


def test_source_options_topics_and_defaults() -> None:
    assert kafka_source_options(source(topics=["orders", "refunds"])) == {
        "kafka.bootstrap.servers": "k:9092",
        "kafka.default.api.timeout.ms": "15000",
        "kafka.request.timeout.ms": "10000",
        "subscribe": "orders,refunds",
        "startingOffsets": "latest",
        **FETCH_DEFAULTS,
        **MICRO_BATCH_FETCH,
    }


def test_source_options_pattern_offsets_rate_and_headers() -> None:
    config = source(
        topic_pattern="orders-.*",
        starting_offsets={"offsets": {"orders-eu": {"0": 12, "1": -2}}},
        max_events_per_trigger=1000,
        format="cloudevents-binary",
        properties={
            "kafka.request.timeout.ms": "5000",
            "kafka.group.id": "mine",
            "kafka.default.api.timeout.ms": "30000",  # the channel's own wins
        },
    )
    options = kafka_source_options(config)
    assert options == {
        "kafka.bootstrap.servers": "k:9092",
        "kafka.default.api.timeout.ms": "30000",
        "subscribePattern": "orders-.*",
        "startingOffsets": '{"orders-eu":{"0":12,"1":-2}}',
        "maxOffsetsPerTrigger": "1000",
        "includeHeaders": "true",
        "kafka.request.timeout.ms": "5000",
        "kafka.group.id": "mine",
        **FETCH_DEFAULTS,
        **MICRO_BATCH_FETCH,
    }
    assert json.loads(options["startingOffsets"]) == {"orders-eu": {"0": 12, "1": -2}}


@pytest.mark.parametrize(
    ("properties", "timeouts"),
    [
        ({}, ("15000", "10000")),  # Sluice's: a killed leader holds a batch 15 s, not 60 s
        ({"kafka.request.timeout.ms": "5000"}, ("15000", "5000")),
        ({"kafka.request.timeout.ms": "40000"}, ("40000", "40000")),  # never below the request
        ({"kafka.default.api.timeout.ms": "90000"}, ("90000", None)),  # the channel's own
    ],
)
def test_offsets_are_listed_with_bounded_timeouts(
    properties: dict[str, str], timeouts: tuple[str, str | None]
) -> None:
    options = kafka_source_options(source(topics=["a"], properties=properties))
    assert (
        options["kafka.default.api.timeout.ms"],
        options.get("kafka.request.timeout.ms"),
    ) == timeouts


def test_an_api_timeout_below_the_request_timeout_is_refused() -> None:
    found = errors(
        "source",
        "kafka",
        {
            **SERVERS,
            "topics": ["a"],
            "properties": {
                "kafka.default.api.timeout.ms": "5000",
                "kafka.request.timeout.ms": "10000",
            },
        },
    )
    assert "config.properties" in found, found
    assert "must be no smaller than 'kafka.request.timeout.ms'" in " ".join(
        found["config.properties"]
    )


@pytest.mark.parametrize(
    "timestamp", [1717228800000, "2024-06-01T08:00:00Z", "2024-06-01T10:00:00+02:00"]
)
def test_source_options_from_a_timestamp(timestamp: int | str) -> None:
    options = kafka_source_options(source(topics=["a"], starting_offsets={"timestamp": timestamp}))
    assert options["startingTimestamp"] == "1717228800000"
    assert options["startingOffsetsByTimestampStrategy"] == "latest"
    assert "startingOffsets" not in options


def test_a_validated_source_config_round_trips_through_json() -> None:
    config = source(topics=["a"], starting_offsets={"offsets": {"a": {"0": 5}}})
    again = KafkaSourceConfig.model_validate(config.model_dump(mode="json"))
    assert again == config


# -- security ------------------------------------------------------------------------------


def test_sasl_ssl_options_build_the_jaas_config() -> None:
    security = KafkaSecurity.model_validate(
        {
            "protocol": "SASL_SSL",
            "sasl_mechanism": "SCRAM-SHA-512",
            "username": "svc",
            "password": 'p"w\\1',
            "ssl_truststore_location": "/etc/kafka/ca.p12",
            "ssl_truststore_password": "trust-me",
            "ssl_truststore_type": "PKCS12",
            "ssl_endpoint_identification": False,
        }
    )
    assert security_options(security) == {
        "kafka.security.protocol": "SASL_SSL",
        "kafka.sasl.mechanism": "SCRAM-SHA-512",
        "kafka.sasl.jaas.config": (
            "org.apache.kafka.common.security.scram.ScramLoginModule required "
            'username="svc" password="p\\"w\\\\1";'
        ),
        "kafka.ssl.truststore.location": "/etc/kafka/ca.p12",
        "kafka.ssl.truststore.password": "trust-me",
        "kafka.ssl.truststore.type": "PKCS12",
        "kafka.ssl.endpoint.identification.algorithm": "",
    }
    assert jaas_config("PLAIN", "u", "p").startswith(
        "org.apache.kafka.common.security.plain.PlainLoginModule required"
    )


def test_plaintext_needs_no_options_and_sink_shares_security() -> None:
    assert security_options(KafkaSecurity()) == {}
    sink = KafkaSinkConfig.model_validate(
        {
            **SERVERS,
            "topic": "out",
            "security": {
                "protocol": "SASL_PLAINTEXT",
                "sasl_mechanism": "PLAIN",
                "username": "u",
                "password": "pw",
            },
        }
    )
    assert kafka_sink_options(sink)["kafka.sasl.mechanism"] == "PLAIN"
    assert "topic" not in kafka_sink_options(sink)


def test_passwords_are_secrets_that_never_leave_the_console() -> None:
    security = {
        "protocol": "SASL_SSL",
        "sasl_mechanism": "PLAIN",
        "username": "u",
        "password": "hunter2",
        "ssl_truststore_password": "t0p",
    }
    spec = {
        "source": {"type": "kafka", "config": {**SERVERS, "topics": ["a"], "security": security}},
        "sink": {
            "type": "jdbc",
            "config": {"url": "postgresql://db:5432/x", "user": "u", "password": "pg-secret"},
        },
    }
    assert secret_paths(spec) == [
        "source.config.security.password",
        "source.config.security.ssl_truststore_password",
        "sink.config.password",
    ]
    assert not {"hunter2", "t0p", "pg-secret"} & set(json.dumps(redact(spec)).split('"'))


# -- Kafka sink ----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("config", "path", "message"),
    [
        ({"topic": "out", "key_field": "data..x"}, "config.key_field", "not a dotted field path"),
        ({"topic": "out", "topic_field": "Nope.x"}, "config.topic_field", "must start with data"),
        ({"topic": "out", "format": "raw"}, "config.format", "must be"),
        ({"topic": "bad topic"}, "config.topic", "not a valid Kafka topic name"),
    ],
)
def test_sink_config_errors_name_the_field(config: dict[str, Any], path: str, message: str) -> None:
    found = errors("sink", "kafka", {**SERVERS, **config})
    assert message in " ".join(found[path]), found


# -- JDBC sink -----------------------------------------------------------------------------


def test_jdbc_defaults() -> None:
    config = JdbcSinkConfig(url="sqlite:///var/events.db")
    assert (config.table, config.batch_size, config.content) == ("events", 500, "cloudevents")
    assert config.dialect == "sqlite"
    assert JdbcSinkConfig(url="postgresql://db:5432/sluice", table="s.events").dialect == (
        "postgresql"
    )


@pytest.mark.parametrize(
    ("config", "path", "message"),
    [
        ({"url": "mysql://db/x"}, "config.url", "must start with postgresql:// or sqlite:///"),
        ({"url": "postgresql://u:pw@db/x"}, "config.url", "must not contain a password"),
        ({"url": "postgresql://db:5432"}, "config.url", "must name a host and a database"),
        ({"url": "sqlite:///"}, "config.url", "name the database file"),
        ({"url": "sqlite:///x.db", "table": "a;drop"}, "config.table", "is not a table name"),
        ({"url": "sqlite:///x.db", "batch_size": 0}, "config.batch_size", ""),
        ({"url": "sqlite:///x.db", "content": "all"}, "config.content", "must be"),
    ],
)
def test_jdbc_config_errors_name_the_field(config: dict[str, Any], path: str, message: str) -> None:
    found = errors("sink", "jdbc", config)
    assert message in " ".join(found[path]), found
    assert "pw" not in json.dumps(found)


def test_the_channels_own_fetch_sizes_win() -> None:
    assert FETCH_DEFAULTS["kafka.max.poll.records"] == "10000"  # Kafka's is 500
    mine = {"kafka.max.poll.records": "200", "kafka.max.partition.fetch.bytes": "65536"}
    options = kafka_source_options(source(topics=["t"], properties=mine))
    assert {key: options[key] for key in mine} == mine


def test_micro_batches_fetch_without_waiting_at_the_broker_real_time_mode_waits() -> None:
    config = source(topics=["t"])
    assert kafka_source_options(config)["kafka.fetch.max.wait.ms"] == "0"
    assert "kafka.fetch.max.wait.ms" not in kafka_source_options(config, real_time=True)
    mine = {"kafka.fetch.max.wait.ms": "100"}  # the channel's own wins
    assert (
        kafka_source_options(source(topics=["t"], properties=mine))["kafka.fetch.max.wait.ms"]
        == "100"
    )
