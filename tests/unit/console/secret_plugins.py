"""Test-only plugins whose configs hold secrets (no built-in plugin has one yet).

:func:`install` adds them to the catalogue for one test (``monkeypatch``), so spec
validation, the catalogue API and :mod:`pipelines.spec.secrets` all see them.
"""

from __future__ import annotations

import importlib
from collections.abc import Mapping
from types import MappingProxyType
from typing import Annotated, Any, Literal

import pytest
from pydantic import ConfigDict, Field, field_validator

from pipelines.spec.configs.base import Secret, StageConfig
from pipelines.spec.configs.http_sink import url_origin
from pipelines.spec.plugins import Plugin


class SaslConfig(StageConfig):
    """SASL credentials (a nested model holding a secret)."""

    username: str = Field(title="Username", description="SASL user name.")
    password: Secret = Field(title="Password", description="SASL password.")


class BasicAuth(StageConfig):
    kind: Literal["basic"] = Field(title="Kind", description="HTTP basic authentication.")
    user: str = Field(title="User", description="User name.")
    password: Secret = Field(title="Password", description="Password.")


class BearerAuth(StageConfig):
    kind: Literal["bearer"] = Field(title="Kind", description="Bearer token authentication.")
    token: Secret = Field(title="Token", description="The bearer token.")


class WebhookSinkConfig(StageConfig):
    """POST each event to an HTTP endpoint."""

    model_config = ConfigDict(title="Webhook sink")

    url: str = Field(title="URL", description="Where to POST.")
    auth_header: Secret | None = Field(
        None, title="Authorization header", description="Sent as Authorization."
    )
    headers: dict[str, Secret] = Field(
        default_factory=dict, title="Headers", description="More headers, all secret."
    )
    sasl: SaslConfig | None = Field(None, title="SASL", description="Proxy credentials.")
    auth: Annotated[BasicAuth | BearerAuth, Field(discriminator="kind")] | None = Field(
        None, title="Auth", description="Basic or bearer authentication."
    )

    @classmethod
    def secret_binding(cls, config: Mapping[str, Any]) -> dict[str, Any]:
        """Its secrets go to the URL's origin (any path of it)."""
        return url_origin(config["url"])


class EnrichConfig(StageConfig):
    """Look events up in an HTTP API (a transform with a required secret; it declares no
    ``secret_binding``, so its secret is bound to all its other settings)."""

    model_config = ConfigDict(title="Enrich")

    endpoint: str = Field(title="Endpoint", description="The lookup API.")
    api_key: Secret = Field(title="API key", description="Starts with key-.")

    @field_validator("api_key")
    @classmethod
    def _check_key(cls, value: str) -> str:
        # Quotes the value on purpose: the console must scrub it from error messages.
        if not value.startswith("key-"):
            raise ValueError(f"{value!r} does not start with key-")
        return value


SECRET_PLUGINS = (
    Plugin(
        type="enrich",
        kind="transform",
        title="Enrich",
        description="Add fields looked up in an HTTP API.",
        config_model=EnrichConfig,
    ),
    Plugin(
        type="webhook",
        kind="sink",
        title="Webhook",
        description="POST events to an HTTP endpoint.",
        config_model=WebhookSinkConfig,
    ),
)


def install(monkeypatch: pytest.MonkeyPatch) -> None:
    """Add :data:`SECRET_PLUGINS` to the catalogue until the test ends."""
    # pipelines.spec re-exports the function plugins(), which hides the module's name.
    catalogue = importlib.import_module("pipelines.spec.plugins")
    extended = {**catalogue.PLUGINS, **{(p.kind, p.type): p for p in SECRET_PLUGINS}}
    monkeypatch.setattr(catalogue, "PLUGINS", MappingProxyType(extended))


def secret_spec() -> dict:
    """A valid spec with secrets in a transform and in the sink (nested, dict, union)."""
    return {
        "source": {
            "type": "kafka",
            "config": {"bootstrap_servers": "localhost:9092", "topics": ["orders"]},
        },
        "transforms": [
            {"type": "filter", "config": {"pattern": {"type": ["order.created"]}}},
            {"type": "enrich", "config": {"endpoint": "http://x", "api_key": "key-ALPHA-123"}},
        ],
        "sink": {
            "type": "webhook",
            "config": {
                "url": "http://hooks.example/in",
                "auth_header": "Bearer BRAVO-456",
                "headers": {"X-Api-Key": "CHARLIE-789"},
                "sasl": {"username": "svc", "password": "DELTA-012"},
                "auth": {"kind": "bearer", "token": "ECHO-345"},
            },
        },
    }


#: Every secret in :func:`secret_spec`.
SECRETS = ("key-ALPHA-123", "Bearer BRAVO-456", "CHARLIE-789", "DELTA-012", "ECHO-345")
