"""Drivers read Sluice's own registry with the runtime token (pipelines/registry_client.py):
the console accepts it for reads only, and it is the token a driver derives from the
environment its runtime worker gives it."""

from __future__ import annotations

import json

import pytest

from pipelines.registry_client import RegistryClient, runtime_registry_token
from pipelines.spec.configs.schema_registry import SchemaRegistryConfig
from runtime_adapter.host.privileges import driver_environment

pytestmark = pytest.mark.django_db(transaction=True)

ORDER = {"type": "record", "name": "O", "fields": [{"name": "id", "type": "string"}]}
MEDIA = "application/vnd.schemaregistry.v1+json"


@pytest.mark.parametrize(
    "env",
    [{}, {"SLUICE_SECRET_KEY": "k" * 50}, {"SLUICE_SECRETS_KEY": "x" * 44}],
    ids=["development", "secret key", "secrets key"],
)
def test_a_driver_derives_the_consoles_token(env: dict[str, str]) -> None:
    assert runtime_registry_token(driver_environment(env)) == runtime_registry_token(env)


def test_the_runtime_token_reads_and_nothing_else(admin_client, client, live_server, monkeypatch):
    body = json.dumps({"schema": json.dumps(ORDER)})
    registered = admin_client.post(
        "/schema-registry/subjects/orders-value/versions", body, content_type=MEDIA
    )
    assert registered.status_code == 200, registered.content
    bearer = {"HTTP_AUTHORIZATION": f"Bearer {runtime_registry_token()}"}

    read = client.get("/schema-registry/subjects/orders-value/versions/1", **bearer)
    assert read.status_code == 200 and read.json()["id"] == registered.json()["id"]
    refused = client.post(
        "/schema-registry/subjects/orders-value/versions", body, content_type=MEDIA, **bearer
    )
    assert refused.status_code in (401, 403)
    forged = client.get(
        "/schema-registry/subjects", HTTP_AUTHORIZATION="Bearer sluice-runtime.0123abcd"
    )
    assert forged.status_code in (401, 403)

    # What a driver does when it builds a query: every version of the subject, over HTTP.
    monkeypatch.setenv("SLUICE_SCHEMA_REGISTRY_URL", f"{live_server.url}/schema-registry")
    found = RegistryClient(SchemaRegistryConfig()).subject("orders-value")
    assert [(v.version, v.id) for v in found.versions] == [(1, registered.json()["id"])]
    assert json.loads(found.latest.schema) == ORDER
