"""Single sign-on's settings (SLUICE_OIDC_*): off unless the issuer, client id and secret
come together; the issuer https but on loopback; on, the backend and the provider's origin in
the Content-Security-Policy's form-action (the log-out form goes on to the provider)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from console.config import ConsoleSettings
from runtime_adapter.config import SettingsError
from tests.support.settings_env import settings_env

REPO = Path(__file__).resolve().parents[3]

PROBE = """
import json
from console import settings as s
print(json.dumps({
    "on": s.SLUICE_OIDC,
    "backends": s.AUTHENTICATION_BACKENDS,
    "form_action": s.CONTENT_SECURITY_POLICY["DIRECTIVES"]["form-action"],
}))
"""

ON = {
    "SLUICE_OIDC_ISSUER": "https://sso.example.com/realms/acme/",
    "SLUICE_OIDC_CLIENT_ID": "sluice-console",
    "SLUICE_OIDC_CLIENT_SECRET": "s3cret",
}


@pytest.fixture
def env(monkeypatch: pytest.MonkeyPatch):
    return settings_env(monkeypatch, ConsoleSettings)


def test_off_by_default(env):
    settings = ConsoleSettings.load()

    assert not settings.oidc_enabled
    assert settings.oidc_scopes == "openid email profile"
    assert (settings.oidc_groups_claim, settings.oidc_sign_algorithm) == ("groups", "RS256")


def test_on_with_issuer_client_and_secret(env):
    env(**ON)
    settings = ConsoleSettings.load()

    assert settings.oidc_enabled
    assert settings.oidc_issuer == "https://sso.example.com/realms/acme"
    assert settings.oidc_client_secret is not None
    assert "s3cret" not in repr(settings)


@pytest.mark.parametrize("left_out", sorted(ON))
def test_one_of_the_three_alone_is_refused(env, left_out):
    env(**{name: value for name, value in ON.items() if name != left_out})

    with pytest.raises(SettingsError) as refused:
        ConsoleSettings.load()

    assert "SLUICE_OIDC_ISSUER" in str(refused.value)
    assert "s3cret" not in str(refused.value)


@pytest.mark.parametrize(
    ("issuer", "accepted"),
    [
        ("http://127.0.0.1:8180/realms/sluice", True),
        ("http://localhost:8180/realms/sluice", True),
        ("http://sso.example.com/realms/acme", False),
        ("ftp://sso.example.com/realms/acme", False),
        ("https://user:pw@sso.example.com/realms/acme", False),
        ("https://sso.example.com/realms/acme?x=1", False),
    ],
)
def test_the_issuer_is_https_but_on_loopback(env, issuer, accepted):
    env(**{**ON, "SLUICE_OIDC_ISSUER": issuer})

    if accepted:
        assert ConsoleSettings.load().oidc_issuer == issuer
    else:
        with pytest.raises(SettingsError, match="SLUICE_OIDC_ISSUER"):
            ConsoleSettings.load()


@pytest.mark.parametrize(
    ("name", "value"),
    [("SLUICE_OIDC_SCOPES", "email profile"), ("SLUICE_OIDC_SIGN_ALGORITHM", "HS256")],
)
def test_scopes_need_openid_and_tokens_a_public_key_algorithm(env, name, value):
    env(**{**ON, name: value})

    with pytest.raises(SettingsError, match=name):
        ConsoleSettings.load()


def load_settings(tmp_path: Path, **env: str) -> dict:
    keep = {k: v for k, v in os.environ.items() if not k.startswith(("SLUICE_", "DATABASE_"))}
    result = subprocess.run(
        [sys.executable, "-c", PROBE],
        env={**keep, "SLUICE_VAR_DIR": str(tmp_path), **env},
        cwd=REPO,
        capture_output=True,
        text=True,
        check=True,
    )
    return json.loads(result.stdout)


def test_the_backend_and_the_providers_origin_only_when_on(tmp_path):
    off = load_settings(tmp_path)
    on = load_settings(tmp_path, **ON)

    assert off["on"] is False and "console.oidc.SignOnBackend" not in off["backends"]
    assert off["form_action"] == ["'self'"]
    assert on["on"] is True
    assert on["backends"][-1] == "console.oidc.SignOnBackend"
    assert on["form_action"] == ["'self'", "https://sso.example.com"]
