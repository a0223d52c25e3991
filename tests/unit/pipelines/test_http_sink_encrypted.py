"""The runtime decrypts stored secrets just before it builds: an encrypted bearer token, as the
console stores and deploys it, reaches the HTTP server in plaintext and nowhere else."""

from __future__ import annotations

import json

import pytest
from cryptography.fernet import Fernet
from pyspark.sql import SparkSession

from pipelines.sinks.http import deliver_http
from pipelines.spec import validate_spec
from pipelines.spec.channel import StageSpec
from pipelines.spec.secrets import SecretBox, encrypt_secrets
from pipelines.spec.validation import parse_stage_config
from runtime_adapter.host.failures import decrypted_spec
from tests.support.http_server import RecordingServer
from tests.unit.pipelines.test_http_sink import event_row, events


@pytest.mark.spark
def test_a_bearer_token_stored_encrypted_reaches_the_http_server(
    spark: SparkSession, monkeypatch: pytest.MonkeyPatch
) -> None:
    key = Fernet.generate_key().decode()
    monkeypatch.setenv("SLUICE_SECRETS_KEY", key)  # the driver's environment
    monkeypatch.setenv("SLUICE_HTTP_SINK_ALLOW", "127.0.0.1")
    with RecordingServer() as server:
        stored = validate_spec(
            {
                "source": {"type": "generator", "config": {}},
                "sink": {
                    "type": "http",
                    "config": {"url": server.url, "auth": {"type": "bearer", "token": "tok-123"}},
                },
            }
        ).model_dump(mode="json")
        deployed = encrypt_secrets(stored, SecretBox.from_config(key, "unused").encrypt)
        assert "tok-123" not in json.dumps(deployed)

        plain, secrets = decrypted_spec(deployed)
        config = parse_stage_config("sink", StageSpec.model_validate(plain["sink"]))
        assert deliver_http(events(spark, event_row(0)), config).count() == 0

    [request] = server.requests
    assert request.header("Authorization") == "Bearer tok-123"
    assert secrets == ["tok-123"]
