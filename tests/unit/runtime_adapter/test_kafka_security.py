from __future__ import annotations

from runtime_adapter.kafka import security_settings


def test_plaintext_and_missing_security_need_no_settings():
    assert security_settings(None) == {}
    assert security_settings({}) == {}
    assert security_settings({"protocol": "PLAINTEXT"}) == {"security.protocol": "PLAINTEXT"}


def test_sasl_plaintext_passes_the_credentials_to_librdkafka():
    settings = security_settings(
        {
            "protocol": "SASL_PLAINTEXT",
            "sasl_mechanism": "SCRAM-SHA-512",
            "username": "sluice",
            "password": "s3cret",
        }
    )
    assert settings == {
        "security.protocol": "SASL_PLAINTEXT",
        "sasl.mechanism": "SCRAM-SHA-512",
        "sasl.username": "sluice",
        "sasl.password": "s3cret",
    }


def test_tls_cannot_be_reproduced_from_java_trust_stores():
    assert security_settings({"protocol": "SSL"}) is None
    assert security_settings({"protocol": "SASL_SSL", "sasl_mechanism": "PLAIN"}) is None
