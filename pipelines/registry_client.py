"""A small client of Confluent Schema Registry's REST API, for the driver of a channel whose
Kafka stages use a wire format (:mod:`pipelines.wire`).

At query build time the driver asks the registry for every version of the stage's subject
(``GET /subjects/{subject}/versions`` then ``…/versions/{n}``): the schema ids a source can
read (each record names its writer schema by id) and the subject's latest version (a
source's reader schema, a sink's writer schema).

Sluice's own registry (the default) is the console's ``/schema-registry/`` at
``SLUICE_SCHEMA_REGISTRY_URL`` (default ``http://127.0.0.1:$SLUICE_PORT/schema-registry``),
the channel's team's registry under it (``…/teams/<team>``: subjects are a team's; the runtime
puts the deployment's team in the stage's config, :func:`bind_registry_team`), read with a
runtime token (:func:`runtime_registry_token`) derived from the secrets key the
console and the runtime share, which the console accepts for reads only. An external
registry is called through the address guard of ``SLUICE_SCHEMA_REGISTRY_ALLOW`` with the
stage's credentials.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import os
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any
from urllib.parse import quote

import urllib3

from pipelines.http_client import auth_headers
from pipelines.net import SCHEMA_REGISTRY, GuardedPoolManager, allow_list
from pipelines.spec.configs.schema_registry import SchemaRegistryConfig

REGISTRY_URL_ENV = "SLUICE_SCHEMA_REGISTRY_URL"
RUNTIME_TOKEN_PREFIX = "sluice-runtime."
MEDIA_TYPE = "application/vnd.schemaregistry.v1+json"
TIMEOUT = urllib3.Timeout(connect=5.0, read=15.0)


class RegistryUnavailable(RuntimeError):
    """The registry could not be read, or has no such subject (the query cannot be built)."""


@dataclass(frozen=True)
class SchemaReference:
    """A schema another one imports: its name there (a Protobuf file name) and its version."""

    name: str
    subject: str
    version: int


@dataclass(frozen=True)
class RegisteredSchema:
    """One version of a subject: its global id, version, type, text and references."""

    id: int
    version: int
    schema_type: str
    schema: str
    references: tuple[SchemaReference, ...] = ()


@dataclass(frozen=True)
class SubjectSchemas:
    """Every version of a subject, oldest first; ``latest`` is the last."""

    subject: str
    versions: tuple[RegisteredSchema, ...]

    @property
    def latest(self) -> RegisteredSchema:
        return self.versions[-1]

    @property
    def by_id(self) -> dict[int, RegisteredSchema]:
        return {schema.id: schema for schema in self.versions}


def _secrets_key_material(environ: Mapping[str, str]) -> bytes:
    from pipelines.spec.secrets import DEVELOPMENT_SECRET_KEY, SECRETS_KEY_ENV, derive_key

    # As runtime_adapter.host.privileges hands it to drivers: the key, else the one derived
    # from SLUICE_SECRET_KEY (or the development key), never that secret key itself.
    key = environ.get(SECRETS_KEY_ENV, "").strip()
    if key:
        return key.encode()
    return derive_key(environ.get("SLUICE_SECRET_KEY") or DEVELOPMENT_SECRET_KEY)


def runtime_registry_token(environ: Mapping[str, str] | None = None) -> str:
    """The bearer token with which drivers read Sluice's own registry: an HMAC of a fixed
    label under the secrets key (``SLUICE_SECRETS_KEY``, else the key derived from
    ``SLUICE_SECRET_KEY`` or the development key, as drivers are given it), so the console and
    the runtime derive the same one and nobody else can."""
    env = os.environ if environ is None else environ
    digest = hmac.new(
        _secrets_key_material(env), b"sluice runtime schema registry reader", hashlib.sha256
    ).hexdigest()
    return RUNTIME_TOKEN_PREFIX + digest


def own_registry_url(environ: Mapping[str, str] | None = None, *, team: str | None = None) -> str:
    """Sluice's own registry: ``team``'s (``…/teams/<team>``), else the legacy root (the
    ``default`` team's for the runtime)."""
    env = os.environ if environ is None else environ
    url = env.get(REGISTRY_URL_ENV)
    if url:
        base = url.rstrip("/")
    else:
        base = f"http://127.0.0.1:{env.get('SLUICE_PORT', '8000')}/schema-registry"
    return f"{base}/teams/{quote(team, safe='')}" if team else base


def bind_registry_team(spec: Any, team: str) -> Any:
    """``spec`` (a channel spec as JSON, changed in place and returned) with ``team`` as the
    team of every stage's own-registry config (``schema_registry`` without ``url``), so its
    subjects are read in the channel's team's registry; a ``team`` there from anywhere else is
    replaced (or dropped: an external registry's, or ``team`` empty)."""
    if isinstance(spec, dict):
        for key, value in spec.items():
            if key == "schema_registry" and isinstance(value, dict):
                value.pop("team", None)
                if team and value.get("url") is None:
                    value["team"] = team
            else:
                bind_registry_team(value, team)
    elif isinstance(spec, list):
        for item in spec:
            bind_registry_team(item, team)
    return spec


class RegistryClient:
    """Reads subjects from one registry (see the module docstring)."""

    def __init__(self, config: SchemaRegistryConfig) -> None:
        headers = {"Accept": MEDIA_TYPE}
        if config.url is None:
            self.base = own_registry_url(team=config.team)
            headers["Authorization"] = f"Bearer {runtime_registry_token()}"
            self.http: urllib3.PoolManager = urllib3.PoolManager(timeout=TIMEOUT, retries=2)
            self.name = "Sluice's schema registry"
        else:
            self.base = config.url.rstrip("/")
            headers.update(auth_headers(config.auth))
            self.http = GuardedPoolManager(allow_list(SCHEMA_REGISTRY), timeout=TIMEOUT, retries=2)
            self.name = f"the schema registry at {self.base}"
        self.headers = headers

    def _get(self, path: str) -> Any:
        try:
            response = self.http.request("GET", self.base + path, headers=self.headers)
        except Exception as error:
            raise RegistryUnavailable(f"{self.name} cannot be reached: {error}") from None
        if response.status != 200:
            try:
                message = json.loads(response.data).get("message", "")
            except (ValueError, AttributeError):
                message = response.data[:200].decode("utf-8", "replace")
            raise RegistryUnavailable(
                f"{self.name} answered {response.status} to GET {path}: {message}"
            )
        return json.loads(response.data)

    def subject(self, subject: str) -> SubjectSchemas:
        """Every version of ``subject`` (:class:`RegistryUnavailable` if it has none)."""
        quoted = quote(subject, safe="")
        versions = self._get(f"/subjects/{quoted}/versions")
        found = [self.version(subject, int(v)) for v in sorted(int(v) for v in versions)]
        if not found:
            raise RegistryUnavailable(f"{self.name} has no version of subject {subject!r}")
        return SubjectSchemas(subject, tuple(found))

    def version(self, subject: str, version: int) -> RegisteredSchema:
        """One version of ``subject``, with its references."""
        body = self._get(f"/subjects/{quote(subject, safe='')}/versions/{version}")
        references = tuple(
            SchemaReference(str(ref["name"]), str(ref["subject"]), int(ref["version"]))
            for ref in body.get("references") or ()
        )
        return RegisteredSchema(
            id=int(body["id"]),
            version=int(body["version"]),
            schema_type=str(body.get("schemaType", "AVRO")),
            schema=str(body["schema"]),
            references=references,
        )

    def referenced(self, schema: RegisteredSchema, limit: int = 100) -> dict[str, str]:
        """The schemas ``schema`` imports, directly or not: their texts by reference name
        (at most ``limit`` of them, against a reference cycle)."""
        found: dict[str, str] = {}
        pending = list(schema.references)
        while pending:
            ref = pending.pop()
            if ref.name in found:
                continue
            if len(found) >= limit:
                raise RegistryUnavailable(f"{self.name}: more than {limit} schema references")
            target = self.version(ref.subject, ref.version)
            found[ref.name] = target.schema
            pending.extend(target.references)
        return found


def fetch_subject(config: SchemaRegistryConfig, subject: str) -> SubjectSchemas:
    """Every version of ``subject`` in the registry ``config`` names."""
    return RegistryClient(config).subject(subject)


def fetch_references(config: SchemaRegistryConfig, schema: RegisteredSchema) -> dict[str, str]:
    """The texts of the schemas ``schema`` imports, directly or not, by reference name."""
    if not schema.references:
        return {}
    return RegistryClient(config).referenced(schema)
