"""Kafka client options shared by the Kafka source and sink (security and passthrough).

Spark hands every ``kafka.``-prefixed option to the Kafka client. The SASL password goes into
``kafka.sasl.jaas.config``; the Kafka client logs that setting as ``[hidden]`` (a PASSWORD
config) and Spark redacts option values that mention a password, so it never reaches a log.
"""

from __future__ import annotations

from pipelines.spec.configs.kafka import KafkaSecurity, KafkaSinkConfig

_LOGIN_MODULES = {
    "PLAIN": "org.apache.kafka.common.security.plain.PlainLoginModule",
    "SCRAM-SHA-256": "org.apache.kafka.common.security.scram.ScramLoginModule",
    "SCRAM-SHA-512": "org.apache.kafka.common.security.scram.ScramLoginModule",
}


def jaas_config(mechanism: str, username: str, password: str) -> str:
    """The ``sasl.jaas.config`` value logging in ``username`` with ``password``."""
    return (
        f"{_LOGIN_MODULES[mechanism]} required "
        f'username="{_jaas_quote(username)}" password="{_jaas_quote(password)}";'
    )


def security_options(security: KafkaSecurity) -> dict[str, str]:
    """Spark Kafka options (``kafka.*``) for the security settings; empty for PLAINTEXT."""
    options: dict[str, str] = {}
    if security.protocol != "PLAINTEXT":
        options["kafka.security.protocol"] = security.protocol
    if security.sasl_mechanism and security.username and security.password:
        options["kafka.sasl.mechanism"] = security.sasl_mechanism
        options["kafka.sasl.jaas.config"] = jaas_config(
            security.sasl_mechanism, security.username, security.password
        )
    ssl_settings = {
        "kafka.ssl.truststore.location": security.ssl_truststore_location,
        "kafka.ssl.truststore.password": security.ssl_truststore_password,
        "kafka.ssl.truststore.type": security.ssl_truststore_type,
        "kafka.ssl.keystore.location": security.ssl_keystore_location,
        "kafka.ssl.keystore.password": security.ssl_keystore_password,
        "kafka.ssl.key.password": security.ssl_key_password,
        "kafka.ssl.keystore.type": security.ssl_keystore_type,
    }
    options.update({key: value for key, value in ssl_settings.items() if value is not None})
    if security.protocol.endswith("SSL") and not security.ssl_endpoint_identification:
        options["kafka.ssl.endpoint.identification.algorithm"] = ""
    return options


def _jaas_quote(text: str) -> str:
    return text.replace("\\", "\\\\").replace('"', '\\"')


PRODUCER_DEFAULTS = {"kafka.linger.ms": "5", "kafka.batch.size": "262144"}


def kafka_sink_options(config: KafkaSinkConfig) -> dict[str, str]:
    """The options given to Spark's Kafka sink (``format("kafka")``).

    No ``topic`` option: it would override the per-record ``topic`` column.
    """
    return {
        "kafka.bootstrap.servers": config.bootstrap_servers,
        **PRODUCER_DEFAULTS,
        **security_options(config.security),
        **config.properties,
    }
