"""Single sign-on in real headless Chromium against a real Keycloak (issue 33, "Teams";
frontend/e2e/sign-on.e2e.mjs): the login page's "Sign in with Keycloak" leads to Keycloak's
own sign-in page; signing in there lands in the console as that user; the groups Keycloak's
ID token lists reach the teams' sign-in rules (the audit trail's auth.login row records
what was handed to console.services.teams.apply_sign_in_groups); logging out ends Keycloak's
session too. The site's sign-in rules turn alice's Keycloak groups into her roles in two teams at
her first login; once Keycloak takes her out of a group, her next login takes the role away, and
that team's channel is not found for her. Screenshots in test-artifacts/e2e/sign-on-*.png."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.e2e.conftest import NodeScript
from tests.support.keycloak import USERS, Keycloak
from tests.support.stack import Stack, manage

pytestmark = pytest.mark.integration

#: The site's sign-in rules of the test: a Keycloak group (full path) → a role in a team.
RULES = {"/payments-editors": ("sso-payments", "editor"), "/ops-viewers": ("sso-ops", "viewer")}
PAYMENTS_CHANNEL = "sso-pay-orders"
SPEC = {
    "source": {"type": "generator", "config": {"rate": 1}},
    "transforms": [],
    "sink": {"type": "preview", "config": {}},
}


def add_sign_in_rules(stack: Stack) -> None:
    """The rules of :data:`RULES`, as a site admin adds them in the admin (Teams → rules)."""
    code = (
        "import json, sys\n"
        "from console.models import SignInGroupRule, Team\n"
        "for group, (team, role) in json.loads(sys.argv[-1]).items():\n"
        "    SignInGroupRule.objects.get_or_create(\n"
        "        group=group, team=Team.objects.get_or_create(name=team)[0], role=role)\n"
    )
    manage(stack.env, "shell", "-c", code.replace("sys.argv[-1]", repr(json.dumps(RULES))))


@pytest.mark.timeout(420)
def test_signing_in_with_keycloak(
    stack: Stack, keycloak: Keycloak, node_script: NodeScript, artifacts_dir: Path
) -> None:
    shots = artifacts_dir / "e2e"
    shots.mkdir(parents=True, exist_ok=True)
    ready_after = keycloak.wait_ready()
    print(f"Keycloak ready {ready_after:.1f} s after it was started")
    password, groups = USERS["alice"]
    add_sign_in_rules(stack)
    http = stack.session()  # the admin, a site admin: creates in any team
    body = {"name": PAYMENTS_CHANNEL, "team": "sso-payments", "spec": SPEC}
    created = http.post(f"{stack.api}/channels/", json=body, timeout=10)
    assert created.status_code == 201, created.text
    sign_on = {
        "ISSUER": keycloak.issuer,
        "PROVIDER": "Keycloak",
        "SSO_USER": "alice",
        "SSO_PASSWORD": password,
    }

    # First login: each group's rule gives its role, in its team.
    node_script(
        "sign-on.e2e.mjs",
        shots,
        **sign_on,
        EXPECT_TEAMS=json.dumps({team: [role] for team, role in RULES.values()}),
    )

    signed_in = http.get(
        f"{stack.api}/audit/", params={"action": "auth.login", "actor": "alice"}, timeout=10
    ).json()["results"]
    assert len(signed_in) == 1, signed_in
    changes = signed_in[0]["changes"]
    assert (changes["method"], changes["issuer"]) == ("oidc", keycloak.issuer)
    assert sorted(changes["groups"]) == sorted(groups)  # Keycloak's order is its own
    logged_out = http.get(
        f"{stack.api}/audit/", params={"action": "auth.logout", "actor": "alice"}, timeout=10
    ).json()["results"]
    assert len(logged_out) == 1, logged_out

    # The identity team takes alice out of payments-editors: her next login drops the role,
    # and the payments team's channel is not found for her (the API's 404, the not-found page).
    keycloak.leave_group("alice", "/payments-editors")
    node_script(
        "sign-on.e2e.mjs",
        shots,
        **sign_on,
        ONCE="1",
        PHASE="sign-on-group-removed",
        EXPECT_TEAMS=json.dumps({"sso-ops": ["viewer"]}),
        GONE=PAYMENTS_CHANNEL,
    )
    logins = http.get(
        f"{stack.api}/audit/", params={"action": "auth.login", "actor": "alice"}, timeout=10
    ).json()["results"]
    assert len(logins) == 2, logins
    assert logins[0]["changes"]["groups"] == ["/ops-viewers"]  # newest first
