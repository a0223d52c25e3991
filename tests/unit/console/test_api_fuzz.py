"""Fuzz the REST API from its own OpenAPI schema (schemathesis), in-process.

Every operation of ``/api/schema/`` gets a test: schemathesis generates requests from the
schema, sends them to the Django WSGI app as a superuser, and checks each answer: never a
5xx, a status code the schema documents, the documented content type, and a body that
conforms to the documented schema. The runtime and the ingest Kafka are the unit tests'
fakes (``conftest.py``), so start, stop, restart, preview and offsets really run; path
parameters mostly name channels, workers and plugins that exist, so the fuzzer gets past
the 404s into the views.

Left out, and why:

* ``POST /channels/{name}/events`` — HTTP ingestion writes to Kafka; its own tests
  (``test_api_events.py``) cover it against a fake producer.

Hostile bodies (issue 12): every operation that takes JSON, ingestion included (nothing is
written when the body is refused), gets JSON nested far past ``SLUICE_JSON_MAX_DEPTH`` (the
issue's ~1,000 levels gave a 500) and a body of several MB: a 400 or 413 in JSON, never a 5xx.

Bounded and deterministic: ``MAX_EXAMPLES`` per operation, a fixed seed
(``derandomize``), no deadline. ``SLUICE_FUZZ_EXAMPLES`` changes the bound (e.g. 200 for a
longer local hunt).
"""

from __future__ import annotations

import os
from collections.abc import Iterator

import pytest
import schemathesis
from django.core.signals import request_finished, request_started
from django.core.wsgi import get_wsgi_application
from django.db import close_old_connections
from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from rest_framework.authtoken.models import Token
from schemathesis.checks import not_a_server_error
from schemathesis.specs.openapi.checks import (
    content_type_conformance,
    response_schema_conformance,
    status_code_conformance,
)

from console.choices import ConnectorState
from console.models import Channel, Connector, Worker
from console.services import reconcile
from runtime_adapter.base import ConnectorOffsets, SourceOffset
from tests.unit.console.conftest import VALID_SPEC

MAX_EXAMPLES = int(os.environ.get("SLUICE_FUZZ_EXAMPLES", "15"))

CHECKS = [
    not_a_server_error,
    status_code_conformance,
    content_type_conformance,
    response_schema_conformance,
]

#: Channels the fixture creates: a stopped one with checkpoint offsets, a running one, a
#: never-started files channel (offsets not supported) and an http-source one (ingest tokens).
STOPPED, RUNNING, FILES, HTTP = "orders", "payments", "archive", "webhooks"
WORKER = "worker-1"

full_schema = schemathesis.openapi.from_wsgi("/api/schema/", get_wsgi_application())
# Ingestion needs Kafka; a redrive needs Kafka and the run executor (503 without them, as
# documented): their answers are tested in test_ingest_tokens.py and test_api_dead_letters.py.
schema = full_schema.exclude(path_regex=r"/channels/\{name\}/events$", method="POST").exclude(
    path_regex=r"/channels/\{name\}/dead-letters/redrive$", method="POST"
)


@schema.hook
def flatmap_path_parameters(context, path_parameters):
    """Mostly existing names (the views run), sometimes the generated ones (the 404s)."""
    if not path_parameters:
        return st.just(path_parameters)
    known = {
        "name": [STOPPED, RUNNING, FILES, HTTP],
        "worker_id": [WORKER],
        "kind": ["source", "transform", "sink"],
        "type": ["kafka", "files", "generator", "filter", "sql", "preview", "http"],
        "number": [1],  # every channel's first revision (its diff is against an empty spec)
        "team": ["default"],  # the team every fuzzed channel is in
    }
    choices = {
        key: st.sampled_from([*known[key], value]) if key in known else st.just(value)
        for key, value in path_parameters.items()
    }
    return st.fixed_dictionaries(choices)


@pytest.fixture
def fuzz_world(
    db, django_user_model, runtime, tmp_path, history_store, settings
) -> Iterator[dict[str, str]]:
    """Channels in several states, a worker, and a superuser's token; the history API reads
    a real (empty) time-series store."""
    from django.test import Client

    settings.SLUICE_HISTORY_URL = history_store

    admin = django_user_model.objects.create_superuser("fuzz-admin", password="fuzz-pass-123")
    client = Client()
    client.force_login(admin)

    def post(path: str, body: dict | None = None) -> None:
        response = client.post(path, body or {}, content_type="application/json")
        assert response.status_code < 300, response.content

    post("/api/v1/channels/", {"name": STOPPED, "spec": VALID_SPEC})
    post(f"/api/v1/channels/{STOPPED}/start")
    post(f"/api/v1/channels/{STOPPED}/stop")
    Connector.objects.filter(runtime_id=STOPPED).update(state=ConnectorState.STOPPED)
    runtime.checkpoints[STOPPED] = ConnectorOffsets([SourceOffset("orders", 0, 42)], batch_id=3)

    post("/api/v1/channels/", {"name": RUNNING, "spec": VALID_SPEC})
    post(f"/api/v1/channels/{RUNNING}/start")
    runtime.heartbeat(WORKER)
    reconcile(runtime=runtime)  # the worker row, and the running channel placed on it

    files = {
        "source": {"type": "files", "config": {"path": str(tmp_path), "format": "jsonl"}},
        "transforms": [],
        "sink": {"type": "preview", "config": {}},
    }
    post("/api/v1/channels/", {"name": FILES, "spec": files})

    webhooks = {
        "source": {"type": "http", "config": {}},
        "transforms": [],
        "sink": {"type": "preview", "config": {}},
    }
    post("/api/v1/channels/", {"name": HTTP, "spec": webhooks})
    assert Channel.objects.count() == 4
    assert Worker.objects.filter(worker_id=WORKER, connectors__runtime_id=RUNNING).exists()

    token = Token.objects.create(user=admin)
    # Schemathesis calls the WSGI app directly, so request_started/request_finished would run
    # close_old_connections and close a PostgreSQL connection that sits in the test's
    # transaction. Django's test client avoids it the same way (and reconnects the handlers
    # after each of its requests, hence only now).
    request_started.disconnect(close_old_connections)
    request_finished.disconnect(close_old_connections)
    yield {"Authorization": f"Token {token.key}"}
    request_started.connect(close_old_connections)
    request_finished.connect(close_old_connections)


@schema.parametrize()
@settings(
    max_examples=MAX_EXAMPLES,
    derandomize=True,
    deadline=None,
    database=None,
    suppress_health_check=list(HealthCheck),
)
def test_api_answers_every_generated_request_as_documented(case, fuzz_world):
    case.call_and_validate(headers=fuzz_world, checks=CHECKS)


# -- deep and large bodies ---------------------------------------------------------------------

#: Bodies every JSON operation must refuse cleanly, and the status each gets.
HOSTILE_BODIES = {
    "arrays-1000-deep": (b"[" * 1000 + b"]" * 1000, 400),
    "objects-1000-deep": (b'{"a":' * 1000 + b"1" + b"}" * 1000, 400),
    "arrays-100000-deep": (b"[" * 100_000 + b"]" * 100_000, 400),
    "strings-3-MB": (b'{"name": "' + b"x" * 3_000_000 + b'"}', 413),
}
#: Path parameters that reach each view's body parsing (an existing stopped channel, the
#: http-source one for ingestion, an unambiguous plugin type, the channels' team).
HOSTILE_PATH_PARAMETERS = {"name": STOPPED, "kind": "source", "type": "filter", "team": "default"}


def json_operations() -> list:
    """``(operation, its JSON media type)`` for every operation whose body may be JSON."""
    found = []
    for result in full_schema.get_all_operations():
        operation = result.ok()
        media_types = [body.media_type for body in operation.body if "json" in body.media_type]
        if media_types:
            found.append(pytest.param(operation, media_types[0], id=operation.label))
    return found


@pytest.mark.parametrize(("operation", "media_type"), json_operations())
@pytest.mark.parametrize("body", list(HOSTILE_BODIES))
def test_deep_and_large_json_bodies_are_refused_never_a_server_error(
    operation, media_type, body, fuzz_world
):
    raw, expected = HOSTILE_BODIES[body]
    parameters = {
        name: HTTP if name == "name" and operation.path.endswith("/events") else value
        for name, value in HOSTILE_PATH_PARAMETERS.items()
        if name in operation.path
    }
    if operation.path.startswith("/api/v1/plugins/{kind}"):
        parameters["type"] = "kafka"
    case = operation.Case(path_parameters=parameters, body=raw, media_type=media_type)

    response = case.call(headers=fuzz_world)

    case.validate_response(response, checks=[not_a_server_error])
    assert response.status_code == expected, response.text[:300]
    assert response.headers["content-type"][0].startswith("application/json")
    assert len(response.content) < 4096  # the answer names the problem, not the body
