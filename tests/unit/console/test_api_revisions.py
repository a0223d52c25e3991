"""``GET /channels/{name}/revisions/``: who saved which spec when, secrets redacted."""

from __future__ import annotations

import copy

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from rest_framework.authtoken.models import Token
from rest_framework.test import APIClient

from console import services
from console.models import Revision
from console.permissions import grant_role
from pipelines.spec.secrets import SECRET_MARKER
from tests.unit.console import secret_plugins
from tests.unit.console.secret_plugins import SECRETS, secret_spec

pytestmark = pytest.mark.django_db

CHANNELS = "/api/v1/channels/"


def create(api, spec, name="orders"):
    response = api.post(CHANNELS, {"name": name, "description": "", "spec": spec}, format="json")
    assert response.status_code == 201, response.json()
    return response


def save(api, spec, name="orders"):
    response = api.patch(f"{CHANNELS}{name}/", {"spec": spec}, format="json")
    assert response.status_code == 200, response.json()
    return response


def with_threshold(spec: dict, amount: int) -> dict:
    changed = copy.deepcopy(spec)
    changed["transforms"][0]["config"]["pattern"] = {
        "data": {"amount": [{"numeric": [">", amount]}]}
    }
    return changed


def client_for(django_user_model, username: str, *roles: str) -> APIClient:
    user = django_user_model.objects.create_user(username, password="s3cret-pass")
    for role in roles:
        grant_role(user, role)
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Token {Token.objects.create(user=user).key}")
    return client


@pytest.fixture
def bob_api(django_user_model) -> APIClient:
    return client_for(django_user_model, "bob", "editor")


def test_revisions_are_listed_newest_first_with_who_and_when(api, bob_api, spec):
    create(api, spec)
    save(bob_api, with_threshold(spec, 200))
    save(api, with_threshold(spec, 300))

    response = api.get(f"{CHANNELS}orders/revisions/")

    assert response.status_code == 200
    body = response.json()
    assert body["count"] == 3
    assert [(r["number"], r["created_by"]) for r in body["results"]] == [
        (3, "alice"),
        (2, "bob"),
        (1, "alice"),
    ]
    assert {"number", "created_at", "created_by", "spec"} == body["results"][0].keys()
    thresholds = [r["spec"]["transforms"][0]["config"]["pattern"] for r in body["results"]]
    assert [t["data"]["amount"][0]["numeric"][1] for t in thresholds] == [300, 200, 100]


def test_one_revision_by_number(api, spec):
    create(api, spec)
    save(api, with_threshold(spec, 200))

    response = api.get(f"{CHANNELS}orders/revisions/1/")

    assert response.status_code == 200
    body = response.json()
    assert body["number"] == 1
    assert body["created_by"] == "alice"
    assert body["spec"]["transforms"][0]["config"]["pattern"]["data"]["amount"] == [
        {"numeric": [">", 100]}
    ]


def test_a_revision_spec_matches_the_channel_detail_for_the_latest(api, spec):
    create(api, spec)

    detail = api.get(f"{CHANNELS}orders/").json()
    latest = api.get(f"{CHANNELS}orders/revisions/").json()["results"][0]

    assert latest["number"] == detail["revision"]
    assert latest["spec"] == detail["spec"]


def test_unknown_channel_or_revision_is_404(api, spec):
    create(api, spec)
    create(api, spec, name="other")

    assert api.get(f"{CHANNELS}missing/revisions/").status_code == 404
    assert api.get(f"{CHANNELS}missing/revisions/1/").status_code == 404
    assert api.get(f"{CHANNELS}orders/revisions/2/").status_code == 404
    # Revision 1 of another channel is not this channel's revision 2.
    save(api, with_threshold(spec, 200), name="other")
    assert api.get(f"{CHANNELS}orders/revisions/2/").status_code == 404


def test_a_user_deleted_since_reads_as_null(api, bob_api, spec, django_user_model):
    create(api, spec)
    save(bob_api, with_threshold(spec, 200))
    django_user_model.objects.filter(username="bob").delete()

    results = api.get(f"{CHANNELS}orders/revisions/").json()["results"]

    assert [r["created_by"] for r in results] == [None, "alice"]


def test_revisions_are_paginated(api, spec):
    create(api, spec)
    for amount in range(101, 106):
        save(api, with_threshold(spec, amount))

    first = api.get(f"{CHANNELS}orders/revisions/?limit=2").json()
    second = api.get(f"{CHANNELS}orders/revisions/?limit=2&offset=2").json()

    assert first["count"] == 6
    assert [r["number"] for r in first["results"]] == [6, 5]
    assert [r["number"] for r in second["results"]] == [4, 3]
    assert first["next"] and first["previous"] is None


def queries_to_list(api, name: str) -> int:
    with CaptureQueriesContext(connection) as captured:
        response = api.get(f"{CHANNELS}{name}/revisions/")
    assert response.status_code == 200
    return len(captured)


def test_listing_costs_the_same_queries_for_any_number_of_revisions(api, bob_api, spec):
    create(api, spec, name="small")
    create(api, spec, name="big")
    for amount in range(101, 121):
        save(api if amount % 2 else bob_api, with_threshold(spec, amount), name="big")
    assert Revision.objects.filter(channel__name="big").count() == 21
    queries_to_list(api, "small")  # warm up: the token, the user's permissions

    assert queries_to_list(api, "big") == queries_to_list(api, "small")
    assert queries_to_list(api, "big") <= 6  # token, user permissions (2), channel, count, page


def test_an_anonymous_request_is_refused(anon, api, spec):
    create(api, spec)

    assert anon.get(f"{CHANNELS}orders/revisions/").status_code == 401
    assert anon.get(f"{CHANNELS}orders/revisions/1/").status_code == 401


def test_a_viewer_may_read_revisions_and_a_user_without_a_role_may_not(
    api, spec, django_user_model
):
    create(api, spec)
    viewer = client_for(django_user_model, "vera", "viewer")
    nobody = client_for(django_user_model, "nora")

    assert viewer.get(f"{CHANNELS}orders/revisions/").status_code == 200
    assert viewer.get(f"{CHANNELS}orders/revisions/1/").status_code == 200
    refused = nobody.get(f"{CHANNELS}orders/revisions/")
    assert refused.status_code == 403
    assert "viewer" in refused.json()["detail"]


def test_secrets_in_every_revision_read_as_the_marker(api, monkeypatch):
    secret_plugins.install(monkeypatch)
    channel = services.create_channel(name="orders", spec=secret_spec())
    services.update_channel(channel, spec={**secret_spec(), "transforms": []})

    listing = api.get(f"{CHANNELS}orders/revisions/")
    detail = api.get(f"{CHANNELS}orders/revisions/1/")

    for response in (listing, detail):
        assert response.status_code == 200
        text = response.content.decode()
        assert [secret for secret in SECRETS if secret in text] == []
    sink = detail.json()["spec"]["sink"]["config"]
    assert sink["auth_header"] == SECRET_MARKER
    assert sink["sasl"] == {"username": "svc", "password": SECRET_MARKER}
    # Still stored (encrypted at rest or not), only hidden in the answer.
    assert Revision.objects.get(number=1).spec["sink"]["config"]["auth_header"] != SECRET_MARKER


def test_the_schema_documents_both_endpoints(api):
    schema = api.get("/api/schema/?format=json").json()

    listing = schema["paths"]["/api/v1/channels/{name}/revisions/"]["get"]
    detail = schema["paths"]["/api/v1/channels/{name}/revisions/{number}/"]["get"]
    assert listing["summary"] == "List a channel's revisions"
    assert {"200", "404"} <= listing["responses"].keys()
    assert {"200", "404"} <= detail["responses"].keys()
