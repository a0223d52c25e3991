from __future__ import annotations

import pytest
from rest_framework.test import APIClient

pytestmark = pytest.mark.django_db


@pytest.mark.parametrize(
    ("method", "url"),
    [
        ("get", "/api/v1/channels/"),
        ("post", "/api/v1/channels/"),
        ("get", "/api/v1/channels/orders/"),
        ("delete", "/api/v1/channels/orders/"),
        ("post", "/api/v1/channels/orders/start"),
        ("post", "/api/v1/channels/orders/stop"),
        ("get", "/api/v1/channels/orders/status"),
        ("get", "/api/v1/channels/orders/lifecycle/"),
        ("get", "/api/v1/workers/"),
        ("get", "/api/v1/plugins/"),
        ("get", "/api/v1/plugins/source/kafka/"),
        ("post", "/api/v1/plugins/source/kafka/validate"),
        ("post", "/api/v1/plugins/filter/validate"),
        ("post", "/api/v1/event-patterns/test"),
    ],
)
def test_the_api_requires_credentials(anon, method, url):
    response = getattr(anon, method)(url)

    assert response.status_code == 401
    assert response["WWW-Authenticate"] == "Token"


def test_a_bad_token_is_refused(anon):
    anon.credentials(HTTP_AUTHORIZATION="Token not-a-token")

    assert anon.get("/api/v1/channels/").status_code == 401


def test_a_token_is_accepted(api):
    assert api.get("/api/v1/channels/").status_code == 200


def test_a_session_is_accepted(user):
    client = APIClient(enforce_csrf_checks=True)
    client.login(username="alice", password="s3cret-pass")

    assert client.get("/api/v1/channels/").status_code == 200
    # Session writes need the CSRF token, as for any Django form.
    assert client.post("/api/v1/channels/", {}, format="json").status_code == 403


def test_the_schema_and_docs_are_public(anon):
    schema = anon.get("/api/schema/", {"format": "json"})
    docs = anon.get("/api/docs/")

    assert schema.status_code == 200
    assert docs.status_code == 200
    assert b"swagger-ui" in docs.content
    assert b"cdn" not in docs.content.lower()  # assets come from our own static files


def test_healthz_answers_without_credentials(anon):
    response = anon.get("/healthz")

    assert response.status_code == 200
    assert response.json() == {"status": "ok"}
