"""Single sign-on through the console's own doors against a provider played in-process: the
login page's button, the provider's callback (a real RS256-signed ID token checked against
the provider's keys), the user it creates or finds, the groups it hands to the teams' rules,
the audit trail, refusals, and the log-out that ends the provider's session.

tests/e2e/test_sign_on_console.py does the same in Chromium against a real Keycloak."""

from __future__ import annotations

import json
import time
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import parse_qs, urlsplit

import jwt
import pytest
import requests
from axes.models import AccessAttempt
from cryptography.hazmat.primitives.asymmetric import rsa
from django.contrib.auth.models import User
from django.test import Client

from console import oidc
from console.models import AuditEvent, SignOnIdentity

pytestmark = pytest.mark.django_db

ISSUER = "https://sso.example.test/realms/acme"
CLIENT_ID = "sluice-console"
SECRET = "client-secret-for-tests"


@dataclass
class FakeResponse:
    status_code: int
    body: Any
    url: str = ""
    headers: dict[str, str] = field(default_factory=lambda: {"content-type": "application/json"})

    @property
    def text(self) -> str:
        return json.dumps(self.body)

    def json(self) -> Any:
        return self.body

    def raise_for_status(self) -> None:
        if self.status_code >= 400:
            raise requests.HTTPError(f"{self.status_code} for {self.url}", response=self)  # type: ignore[arg-type]


@dataclass
class FakeProvider:
    """An OpenID Connect provider: discovery, keys, token and userinfo endpoints; what it
    says about the user is ``claims`` (and ``userinfo``), its ID tokens RS256-signed."""

    claims: dict[str, Any]
    userinfo: dict[str, Any] | None = None
    token_overrides: dict[str, Any] = field(default_factory=dict)
    reachable: bool = True
    token_status: int = 200
    calls: list[str] = field(default_factory=list)
    nonce: str = ""

    def __post_init__(self) -> None:
        self.key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
        jwk = json.loads(jwt.algorithms.RSAAlgorithm.to_jwk(self.key.public_key()))
        self.jwks = {"keys": [{**jwk, "kid": "k1", "alg": "RS256", "use": "sig"}]}

    def get(self, url: str, **kwargs: Any) -> FakeResponse:
        self.calls.append(f"GET {url}")
        if not self.reachable:
            raise requests.ConnectionError(f"cannot reach {url}")
        if url == f"{ISSUER}/.well-known/openid-configuration":
            return FakeResponse(
                200,
                {
                    "issuer": ISSUER,
                    "authorization_endpoint": f"{ISSUER}/auth",
                    "token_endpoint": f"{ISSUER}/token",
                    "jwks_uri": f"{ISSUER}/certs",
                    "userinfo_endpoint": f"{ISSUER}/userinfo",
                    "end_session_endpoint": f"{ISSUER}/logout",
                },
                url,
            )
        if url == f"{ISSUER}/certs":
            return FakeResponse(200, self.jwks, url)
        if url == f"{ISSUER}/userinfo":
            return FakeResponse(200, self.userinfo or {"sub": self.claims["sub"]}, url)
        return FakeResponse(404, {}, url)

    def post(self, url: str, data: dict[str, Any], **kwargs: Any) -> FakeResponse:
        self.calls.append(f"POST {url}")
        assert url == f"{ISSUER}/token"
        assert (data["client_id"], data["client_secret"]) == (CLIENT_ID, SECRET)
        assert data["code_verifier"]  # PKCE
        if self.token_status != 200:
            return FakeResponse(self.token_status, {"error": "invalid_client"}, url)
        now = int(time.time())
        token = {
            "iss": ISSUER,
            "aud": CLIENT_ID,
            "iat": now,
            "exp": now + 300,
            "nonce": self.nonce,
            **self.claims,
            **self.token_overrides,
        }
        signed = jwt.encode(token, self.key, algorithm="RS256", headers={"kid": "k1"})
        return FakeResponse(200, {"id_token": signed, "access_token": "at", "token_type": "Bearer"})


ALICE = {
    "sub": "0b6a5b1e-alice",
    "preferred_username": "alice",
    "email": "alice@example.com",
    "given_name": "Alice",
    "family_name": "Payments",
    "groups": ["/payments-editors", "/ops-viewers"],
}


@pytest.fixture
def sso(settings, monkeypatch):
    """Single sign-on on, against a FakeProvider (set its claims per test)."""
    settings.SLUICE_OIDC = True
    settings.SLUICE_OIDC_ISSUER = ISSUER
    settings.SLUICE_OIDC_CLIENT_ID = CLIENT_ID
    settings.SLUICE_OIDC_CLIENT_SECRET = SECRET
    settings.SLUICE_OIDC_PROVIDER_NAME = "Acme SSO"
    settings.AUTHENTICATION_BACKENDS = [
        *settings.AUTHENTICATION_BACKENDS,
        "console.oidc.SignOnBackend",
    ]
    provider = FakeProvider(claims=dict(ALICE))
    monkeypatch.setattr(requests, "get", provider.get)
    monkeypatch.setattr(requests, "post", provider.post)
    oidc.forget_provider()
    yield provider
    oidc.forget_provider()


@pytest.fixture
def groups_applied(monkeypatch):
    """The calls of console.services.teams.apply_sign_in_groups: (username, groups)."""
    calls: list[tuple[str, list[str]]] = []
    monkeypatch.setattr(
        "console.services.sign_on.apply_sign_in_groups",
        lambda user, groups: calls.append((user.username, groups)),
    )
    return calls


def sign_on(client: Client, provider: FakeProvider, next_url: str = "/"):
    """The browser's round trip: the button, the provider (which signs in and sends the user
    back with a code), the callback. Answers the callback's response."""
    start = client.get("/oidc/authenticate/", {"next": next_url})
    assert start.status_code == 302, start
    sent = urlsplit(start["Location"])
    assert f"{sent.scheme}://{sent.netloc}{sent.path}" == f"{ISSUER}/auth"
    query = parse_qs(sent.query)
    assert query["client_id"] == [CLIENT_ID]
    assert query["code_challenge_method"] == ["S256"]
    assert query["redirect_uri"] == ["http://testserver/oidc/callback/"]
    provider.nonce = query["nonce"][0]
    return client.get("/oidc/callback/", {"code": "the-code", "state": query["state"][0]})


def signed_in_as(client: Client) -> str | None:
    user_id = client.session.get("_auth_user_id")
    return User.objects.get(pk=user_id).username if user_id else None


def refusal(client: Client) -> str:
    """The login page the refused user lands on (with the reason, once)."""
    return client.get("/login/").content.decode()


def test_the_login_page_offers_the_provider_only_when_configured(client, sso, settings):
    page = client.get("/login/").content.decode()
    assert "Sign in with Acme SSO" in page
    assert 'href="/oidc/authenticate/?next=/"' in page.replace("%2F", "/")

    settings.SLUICE_OIDC = False
    assert "Sign in with" not in client.get("/login/").content.decode()
    assert client.get("/oidc/authenticate/").status_code == 404
    assert client.get("/oidc/callback/", {"code": "c", "state": "s"}).status_code == 404


def test_a_first_sign_on_creates_the_user_and_hands_over_the_groups(client, sso, groups_applied):
    answer = sign_on(client, sso, next_url="/channels/orders")

    assert answer.status_code == 302 and answer["Location"] == "/channels/orders"
    assert signed_in_as(client) == "alice"
    alice = User.objects.get(username="alice")
    assert (alice.email, alice.first_name, alice.last_name) == (
        "alice@example.com",
        "Alice",
        "Payments",
    )
    assert not alice.has_usable_password()
    assert not (alice.is_staff or alice.is_superuser)
    link = SignOnIdentity.objects.get(user=alice)
    assert (link.issuer, link.subject) == (ISSUER, "0b6a5b1e-alice")
    assert groups_applied == [("alice", ["/payments-editors", "/ops-viewers"])]
    row = AuditEvent.objects.get(action="auth.login")
    assert (row.actor, row.object_id, row.via) == ("alice", "alice", "web")
    assert row.changes == {
        "method": "oidc",
        "issuer": ISSUER,
        "groups": ["/payments-editors", "/ops-viewers"],
    }


def test_every_sign_on_updates_the_profile_and_applies_the_groups_again(
    client, sso, groups_applied
):
    sign_on(client, sso)
    client.post("/logout/")
    sso.claims.update(email="alice@payments.example.com", groups=["/ops-viewers"])

    sign_on(Client(), sso)

    assert User.objects.filter(sign_on_identities__subject="0b6a5b1e-alice").count() == 1
    assert User.objects.get(username="alice").email == "alice@payments.example.com"
    assert groups_applied[-1] == ("alice", ["/ops-viewers"])
    assert len(groups_applied) == 2


def test_no_groups_claim_is_no_groups(client, sso, groups_applied):
    del sso.claims["groups"]

    sign_on(client, sso)

    assert groups_applied == [("alice", [])]


def test_userinfo_completes_the_id_token_about_the_same_subject(client, sso, groups_applied):
    sso.claims = {"sub": "0b6a5b1e-alice"}
    sso.userinfo = {**ALICE, "groups": ["/from-userinfo"]}

    sign_on(client, sso)

    assert signed_in_as(client) == "alice"
    assert groups_applied == [("alice", ["/from-userinfo"])]


def test_userinfo_about_another_subject_is_refused(client, sso, groups_applied):
    sso.userinfo = {**ALICE, "sub": "someone-else"}

    answer = sign_on(client, sso)

    assert answer["Location"] == "/login/"
    assert signed_in_as(client) is None
    assert "did not check out" in refusal(client)
    assert groups_applied == []


def test_a_provider_user_never_takes_over_a_local_account(client, sso, groups_applied):
    admin = User.objects.create_superuser("admin", "admin@example.com", "local-password")
    sso.claims.update(sub="provider-admin", preferred_username="admin", email="admin@example.com")

    sign_on(client, sso)

    name = signed_in_as(client)
    assert name is not None and name != "admin" and name.startswith("admin-")
    assert not User.objects.get(username=name).is_superuser
    assert not SignOnIdentity.objects.filter(user=admin).exists()
    # the same person gets the same name every time
    client.post("/logout/")
    sign_on(Client(), sso)
    assert User.objects.filter(username__startswith="admin-").count() == 1


def test_without_a_usable_user_name_the_name_comes_from_the_subject(client, sso, groups_applied):
    sso.claims.update(preferred_username="!!!")

    sign_on(client, sso)

    name = signed_in_as(client)
    assert name is not None and name.startswith("sso-") and len(name) == len("sso-") + 12


def test_groups_not_a_list_refuse_the_sign_on_with_the_reason(client, sso, groups_applied):
    sso.claims["groups"] = "/payments-editors"

    answer = sign_on(client, sso)

    assert answer.status_code == 302 and answer["Location"] == "/login/"
    assert signed_in_as(client) is None
    assert not User.objects.filter(username="alice").exists()
    assert "claim is not a list of group names" in refusal(client)
    assert groups_applied == []
    failed = AuditEvent.objects.get(action="auth.login_failed")
    assert (failed.outcome, failed.via) == (401, "web")
    assert not AuditEvent.objects.filter(action="auth.login").exists()
    # the throttle counts it, without keeping the provider's one-time code
    attempt = AccessAttempt.objects.get()
    assert "the-code" not in attempt.get_data and "code=" in attempt.get_data


@pytest.mark.parametrize(
    "override",
    [
        {"aud": "another-client"},
        {"aud": [CLIENT_ID, "another-client"]},  # no azp naming us
        {"iss": "https://evil.example.test/realms/acme"},
        {"exp": int(time.time()) - 60},
    ],
)
def test_an_id_token_not_for_this_console_is_refused(client, sso, groups_applied, override):
    sso.token_overrides = override

    answer = sign_on(client, sso)

    assert answer["Location"] == "/login/"
    assert signed_in_as(client) is None
    assert groups_applied == []


def test_a_token_signed_by_another_key_is_refused(client, sso, groups_applied):
    sso.key = rsa.generate_private_key(public_exponent=65537, key_size=2048)  # keys unchanged

    sign_on(client, sso)

    assert signed_in_as(client) is None
    assert "did not check out" in refusal(client)


def test_a_disabled_account_is_refused(client, sso, groups_applied):
    sign_on(client, sso)
    client.post("/logout/")
    User.objects.filter(username="alice").update(is_active=False)

    second = Client()
    sign_on(second, sso)

    assert signed_in_as(second) is None
    assert "disabled" in refusal(second)


def test_passwords_never_wait_for_the_provider(client, sso):
    User.objects.create_user("carol", password="carol-password")
    sso.reachable = False

    answer = client.post("/login/", {"username": "carol", "password": "carol-password"})

    assert answer.status_code == 302
    assert signed_in_as(client) == "carol"
    assert sso.calls == []


def test_an_unreachable_provider_is_said_on_the_login_page(client, sso):
    sso.reachable = False

    answer = client.get("/oidc/authenticate/")

    assert answer["Location"] == "/login/"
    assert "could not be reached" in refusal(client)


def test_a_provider_refusing_the_code_is_said_on_the_login_page(client, sso, groups_applied):
    sso.token_status = 401  # e.g. a wrong client secret

    answer = sign_on(client, sso)

    assert answer["Location"] == "/login/"
    assert signed_in_as(client) is None
    assert "refused or failed this sign-in" in refusal(client)


def test_logging_out_ends_the_providers_session_too(client, sso, groups_applied):
    sign_on(client, sso)
    id_token = client.session["oidc_id_token"]

    answer = client.post("/logout/")

    assert signed_in_as(client) is None
    sent = urlsplit(answer["Location"])
    assert f"{sent.scheme}://{sent.netloc}{sent.path}" == f"{ISSUER}/logout"
    assert parse_qs(sent.query) == {
        "id_token_hint": [id_token],
        "post_logout_redirect_uri": ["http://testserver/login/"],
        "client_id": [CLIENT_ID],
    }
    assert AuditEvent.objects.filter(action="auth.logout", actor="alice").exists()


def test_a_local_account_logs_out_locally(client, sso):
    User.objects.create_user("carol", password="carol-password")
    client.post("/login/", {"username": "carol", "password": "carol-password"})

    answer = client.post("/logout/")

    assert answer["Location"] == "/login/"
    assert sso.calls == []
