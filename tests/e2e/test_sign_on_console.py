"""Single sign-on in real headless Chromium against a real Keycloak (issue 33, "Teams";
frontend/e2e/sign-on.e2e.mjs): the login page's "Sign in with Keycloak" leads to Keycloak's
own sign-in page; signing in there lands in the console as that user; the groups Keycloak's
ID token lists reach the teams' sign-in rules (the audit trail's auth.login row records
what was handed to console.services.teams.apply_sign_in_groups); logging out ends Keycloak's
session too. Screenshots in test-artifacts/e2e/sign-on-*.png."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.e2e.conftest import NodeScript
from tests.support.keycloak import USERS, Keycloak
from tests.support.stack import Stack

pytestmark = pytest.mark.integration


@pytest.mark.timeout(420)
def test_signing_in_with_keycloak(
    stack: Stack, keycloak: Keycloak, node_script: NodeScript, artifacts_dir: Path
) -> None:
    shots = artifacts_dir / "e2e"
    shots.mkdir(parents=True, exist_ok=True)
    ready_after = keycloak.wait_ready()
    print(f"Keycloak ready {ready_after:.1f} s after it was started")
    password, groups = USERS["alice"]

    node_script(
        "sign-on.e2e.mjs",
        shots,
        ISSUER=keycloak.issuer,
        PROVIDER="Keycloak",
        SSO_USER="alice",
        SSO_PASSWORD=password,
    )

    http = stack.session()
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
