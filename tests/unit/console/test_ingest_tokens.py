"""Ingestion tokens: the service (issue, rotate, revoke, hash) and /channels/{name}/ingest-token."""

from __future__ import annotations

import hashlib

import pytest
from django.urls import reverse
from rest_framework.test import APIClient

from console import services
from console.models import Channel
from console.permissions import grant_role
from console.services.ingest.tokens import (
    hash_token,
    issue_ingest_token,
    revoke_ingest_token,
    token_matches,
)

pytestmark = pytest.mark.django_db

URL = "/api/v1/channels/web-orders/ingest-token"


def http_spec() -> dict:
    return {
        "source": {"type": "http", "config": {}},
        "transforms": [],
        "sink": {"type": "kafka", "config": {"bootstrap_servers": "k:9092", "topic": "out"}},
    }


@pytest.fixture
def channel(user) -> Channel:
    return services.create_channel(name="web-orders", spec=http_spec(), user=user)


def client_in(django_user_model, name: str, *roles: str) -> APIClient:
    person = django_user_model.objects.create_user(name, password="pw-pw-pw-pw")
    for role in roles:
        grant_role(person, role)
    client = APIClient()
    client.force_authenticate(person)
    return client


# -- the service -----------------------------------------------------------------------------


def test_a_token_is_stored_only_as_its_sha256_and_a_prefix(channel):
    issued = issue_ingest_token(channel)

    stored = Channel.objects.get(pk=channel.pk)
    assert issued.created is True
    assert issued.token.startswith("slk_") and len(issued.token) >= 40
    assert stored.ingest_token_hash == hashlib.sha256(issued.token.encode()).hexdigest()
    assert stored.ingest_token_hash == hash_token(issued.token)
    assert issued.token not in (stored.ingest_token_hash, stored.ingest_token_prefix)
    assert stored.ingest_token_prefix == issued.prefix == issued.token[:8]


def test_rotating_replaces_the_token(channel):
    first = issue_ingest_token(channel)
    second = issue_ingest_token(channel)

    stored = Channel.objects.get(pk=channel.pk)
    assert second.created is False and second.token != first.token
    assert token_matches(stored, second.token)
    assert not token_matches(stored, first.token)


def test_revoking_forgets_it(channel):
    issued = issue_ingest_token(channel)

    assert revoke_ingest_token(channel) is True
    assert revoke_ingest_token(channel) is False
    stored = Channel.objects.get(pk=channel.pk)
    assert (stored.ingest_token_hash, stored.ingest_token_prefix) == ("", "")
    assert not token_matches(stored, issued.token)


def test_nothing_matches_a_channel_without_a_token(channel):
    assert not token_matches(channel, "")
    assert not token_matches(channel, "slk_x")


def test_tokens_are_unique(channel):
    assert len({issue_ingest_token(channel).token for _ in range(20)}) == 20


# -- the route -------------------------------------------------------------------------------


def test_the_route_is_named():
    assert reverse("api:channel-ingest-token", kwargs={"name": "web-orders"}) == URL


def test_issue_show_once_rotate_and_revoke(api, channel):
    assert api.get(URL).json() == {"exists": False, "prefix": None}

    issued = api.post(URL)
    assert issued.status_code == 201
    body = issued.json()
    assert set(body) == {"token", "prefix", "created"} and body["created"] is True
    assert body["token"].startswith(body["prefix"]) and body["prefix"].startswith("slk_")

    shown = api.get(URL).json()
    assert shown == {"exists": True, "prefix": body["prefix"]}
    detail = api.get("/api/v1/channels/web-orders/").json()
    assert detail["ingest_token"] == shown
    assert body["token"] not in str(api.get("/api/v1/channels/?expand=status").content)

    rotated = api.post(URL)
    assert rotated.status_code == 200 and rotated.json()["created"] is False
    assert rotated.json()["token"] != body["token"]

    assert api.delete(URL).status_code == 204
    assert api.delete(URL).status_code == 204  # idempotent
    assert api.get(URL).json() == {"exists": False, "prefix": None}


def test_an_unknown_channel_is_a_404(api):
    assert api.post("/api/v1/channels/nope/ingest-token").status_code == 404
    assert api.get("/api/v1/channels/nope/ingest-token").status_code == 404


def test_issuing_and_revoking_need_the_editor_role(django_user_model, channel):
    viewer = client_in(django_user_model, "vic", "viewer")
    operator = client_in(django_user_model, "olga", "operator")
    editor = client_in(django_user_model, "eda", "editor")

    assert viewer.get(URL).status_code == 200
    for client in (viewer, operator):
        refused = client.post(URL)
        assert refused.status_code == 403
        assert "editor role (console.change_channel)" in refused.json()["detail"]
        assert client.delete(URL).status_code == 403
    assert Channel.objects.get(pk=channel.pk).ingest_token_hash == ""
    assert editor.post(URL).status_code == 201
    assert editor.delete(URL).status_code == 204


def test_anonymous_is_a_401_and_a_user_without_roles_a_403(anon, django_user_model, channel):
    assert anon.post(URL).status_code == 401
    assert client_in(django_user_model, "nobody").get(URL).status_code == 403


def test_an_ingestion_token_cannot_manage_tokens(channel):
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Bearer {issue_ingest_token(channel).token}")

    assert client.post(URL).status_code == 401


# -- OpenAPI ---------------------------------------------------------------------------------


def test_the_schema_describes_the_token_route_and_the_events_auth(anon):
    schema = anon.get("/api/schema/", {"format": "json"}).json()

    route = schema["paths"]["/api/v1/channels/{name}/ingest-token"]
    assert set(route) >= {"get", "post", "delete"}
    assert set(route["post"]["responses"]) >= {"200", "201", "404"}
    events = schema["paths"]["/api/v1/channels/{name}/events"]["post"]
    assert {"ingestToken": []} in events["security"]
    assert set(events["responses"]) >= {"401", "403", "413", "429"}
    assert "Authorization: Bearer" in events["description"]
    scheme = schema["components"]["securitySchemes"]["ingestToken"]
    assert (scheme["type"], scheme["scheme"]) == ("http", "bearer")
    channel = schema["components"]["schemas"]["Channel"]["properties"]["ingest_token"]
    assert set(channel["properties"]) == {"exists", "prefix"}
