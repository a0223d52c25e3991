"""Service accounts: a team admin issues a token with one role in the team and an expiry; the
token acts as a member with that role (scoping, checks and the audit trail included), is shown
once, and stops working when revoked or expired."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.utils import timezone
from rest_framework.test import APIClient

from console import services
from console.models import AuditEvent, ServiceAccount, Team
from console.permissions import ADMIN, EDITOR, OPERATOR, VIEWER
from tests.unit.console.members import member

pytestmark = pytest.mark.django_db

ACCOUNTS = "/api/v1/teams/{team}/service-accounts/"


@pytest.fixture
def teams(spec, runtime) -> dict[str, Team]:
    a = Team.objects.create(name="a")
    b = Team.objects.create(name="b")
    services.create_channel(name="mine", spec=spec, team=a)
    services.create_channel(name="theirs", spec=spec, team=b)
    return {"a": a, "b": b}


def bearer(token: str) -> APIClient:
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Bearer {token}")
    return client


def issue(admin: APIClient, team: str = "a", **body) -> dict:
    response = admin.post(
        ACCOUNTS.format(team=team), {"name": "ci", "role": OPERATOR, **body}, format="json"
    )
    assert response.status_code == 201, response.content
    return response.json()


def test_a_team_admin_issues_a_token_shown_once_that_acts_with_its_role(teams, django_user_model):
    admin = member(django_user_model, "alice", {"a": (ADMIN,)})

    issued = issue(admin, expires_in_days=30)

    token = issued["token"]
    assert token.startswith("sls_") and issued["token_prefix"] == token[:8]
    assert (issued["name"], issued["team"], issued["role"]) == ("ci", "a", OPERATOR)
    assert issued["username"] == "svc.a.ci" and issued["created_by"] == "alice"
    listed = admin.get(ACCOUNTS.format(team="a")).json()["results"]
    assert [row["name"] for row in listed] == ["ci"] and "token" not in listed[0]
    assert token not in str(AuditEvent.objects.values_list("changes", flat=True))

    ci = bearer(token)
    assert [c["name"] for c in ci.get("/api/v1/channels/").json()["results"]] == ["mine"]
    assert ci.get("/api/v1/channels/theirs/").status_code == 404
    assert ci.post("/api/v1/channels/mine/start").status_code == 202  # operator
    refused = ci.patch("/api/v1/channels/mine/", {"description": "x"}, format="json")
    assert refused.status_code == 403  # not an editor
    started = AuditEvent.objects.get(action="channel.start")
    assert started.actor == "svc.a.ci" and started.team == teams["a"]
    assert ServiceAccount.objects.get().last_used_at is not None


def test_a_revoked_or_expired_or_unknown_token_is_a_401(teams, django_user_model):
    admin = member(django_user_model, "alice", {"a": (ADMIN,)})
    revoked = issue(admin, name="old")["token"]
    expired = issue(admin, name="stale")["token"]
    ServiceAccount.objects.filter(name="stale").update(
        expires_at=timezone.now() - timedelta(seconds=1)
    )

    assert admin.delete(ACCOUNTS.format(team="a") + "old/").status_code == 204

    for token in (revoked, expired, "sls_" + "x" * 43):
        response = bearer(token).get("/api/v1/channels/")
        assert response.status_code == 401, token
        assert response.json() == {
            "detail": "This service account token is unknown, revoked or expired."
        }
    assert AuditEvent.objects.filter(action="team.service_account.revoke").get().object_id == (
        "svc.a.old"
    )
    assert not django_user_model.objects.filter(username="svc.a.old").exists()


def test_only_a_team_s_admins_manage_its_accounts_and_another_team_is_a_404(
    teams, django_user_model
):
    editor = member(django_user_model, "ed", {"a": (EDITOR, OPERATOR, VIEWER)})
    other_admin = member(django_user_model, "bo", {"b": (ADMIN,)})

    refused = editor.get(ACCOUNTS.format(team="a"))
    assert refused.status_code == 403
    assert "admin role (console.manage_team)" in refused.json()["detail"]
    assert editor.post(ACCOUNTS.format(team="a"), {"name": "x", "role": VIEWER}).status_code == (
        403
    )
    assert other_admin.get(ACCOUNTS.format(team="a")).status_code == 404
    assert (
        other_admin.post(
            ACCOUNTS.format(team="a"), {"name": "x", "role": ADMIN}, format="json"
        ).status_code
        == 404
    )
    assert not ServiceAccount.objects.exists()


@pytest.mark.parametrize(
    ("body", "errors"),
    [
        ({"name": "Bad Name", "role": VIEWER}, {"name"}),
        ({"name": "ci", "role": "owner"}, {"role"}),
        ({"name": "ci", "role": VIEWER, "expires_in_days": 0}, {"expires_in_days"}),
        ({"name": "ci", "role": VIEWER, "expires_in_days": 367}, {"expires_in_days"}),
    ],
)
def test_a_bad_request_names_its_fields_and_issues_nothing(teams, django_user_model, body, errors):
    admin = member(django_user_model, "alice", {"a": (ADMIN,)})

    response = admin.post(ACCOUNTS.format(team="a"), body, format="json")

    assert response.status_code == 400
    assert set(response.json()) == errors
    assert not ServiceAccount.objects.exists()


def test_a_name_is_taken_once_per_team(teams, django_user_model):
    admin = member(django_user_model, "alice", {"a": (ADMIN,), "b": (ADMIN,)})
    issue(admin)

    again = admin.post(ACCOUNTS.format(team="a"), {"name": "ci", "role": VIEWER}, format="json")

    assert again.status_code == 400
    assert again.json() == {"name": ["Team a has a service account 'ci'."]}
    assert issue(admin, team="b")["username"] == "svc.b.ci"


def test_the_teams_list_shows_the_caller_s_teams_and_roles(teams, django_user_model):
    client = member(django_user_model, "alice", {"a": (VIEWER, OPERATOR)})

    body = client.get("/api/v1/teams/").json()

    assert body["count"] == 1
    (row,) = body["results"]
    assert {key: row[key] for key in ("name", "description", "roles")} == {
        "name": "a",
        "description": "",
        "roles": [VIEWER, OPERATOR],
    }  # and its quotas (test_quotas)
    assert row["reach"] == {}


def test_metrics_hold_only_the_caller_s_teams_channels(teams, client, django_user_model, settings):
    settings.SLUICE_METRICS_TOKEN = "site-scraper-token"
    admin = member(django_user_model, "alice", {"a": (ADMIN,)})
    token = issue(admin, role=VIEWER)["token"]
    client.force_login(django_user_model.objects.get(username="alice"))  # a session

    as_member = client.get("/metrics").content.decode()
    as_account = bearer(token).get("/metrics").content.decode()
    as_site = bearer("site-scraper-token").get("/metrics").content.decode()

    for scrape in (as_member, as_account):
        assert 'sluice_channel_state{channel="mine"' in scrape
        assert "theirs" not in scrape
        assert "sluice_workers" not in scrape  # the site's own series: the site token's
    assert 'channel="theirs"' in as_site and 'channel="mine"' in as_site
    assert bearer("sls_" + "y" * 43).get("/metrics").status_code == 401
