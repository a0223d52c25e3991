"""``manage.py check --deploy`` is clean with a production environment, and only with it."""

from __future__ import annotations

import base64
import json
import os
import secrets
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[3]


def production_env(tmp_path: Path) -> dict[str, str]:
    """What an operator sets for a console served over https (docs/cluster.md, "Production
    settings")."""
    return {
        "SLUICE_SECRET_KEY": secrets.token_urlsafe(50),
        # Fernet key for secrets in stage configs (console.W003 without it).
        "SLUICE_SECRETS_KEY": base64.urlsafe_b64encode(secrets.token_bytes(32)).decode(),
        "SLUICE_DEBUG": "false",
        "SLUICE_HTTPS": "true",
        "SLUICE_ALLOWED_HOSTS": "sluice.example.com",
        "SLUICE_CSRF_TRUSTED_ORIGINS": "https://sluice.example.com",
        # Never connected to: the checks only read the settings.
        "DATABASE_URL": "postgres://sluice:secret@db.example.com:5432/sluice",
        "SLUICE_VAR_DIR": str(tmp_path),
    }


def check_deploy(env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    """``manage.py check --deploy --fail-level WARNING`` in a fresh interpreter with ``env``."""
    keep = {k: v for k, v in os.environ.items() if not k.startswith(("SLUICE_", "DATABASE_"))}
    keep = {k: v for k, v in keep.items() if k not in {"REDIS_URL", "CELERY_BROKER_URL"}}
    return subprocess.run(
        [sys.executable, "manage.py", "check", "--deploy", "--fail-level", "WARNING", *args],
        env={**keep, **env},
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=120,
    )


def test_production_env_passes_check_deploy(tmp_path):
    result = check_deploy(production_env(tmp_path))

    assert result.returncode == 0, result.stdout + result.stderr
    assert "System check identified no issues" in result.stdout


def test_production_env_behind_a_tls_proxy_passes_check_deploy(tmp_path):
    env = {**production_env(tmp_path), "SLUICE_PROXY_SSL_HEADER": "X-Forwarded-Proto"}

    result = check_deploy(env)

    assert result.returncode == 0, result.stdout + result.stderr


def test_without_https_check_deploy_warns_about_cookies_redirect_and_hsts(tmp_path):
    env = production_env(tmp_path)
    del env["SLUICE_HTTPS"]

    result = check_deploy(env)

    assert result.returncode != 0
    for check_id in ("security.W004", "security.W008", "security.W012", "security.W016"):
        assert check_id in result.stderr, result.stderr


def test_development_secret_key_fails_check_deploy(tmp_path):
    env = production_env(tmp_path)
    del env["SLUICE_SECRET_KEY"]

    result = check_deploy(env)

    assert result.returncode != 0
    assert "console.W001" in result.stderr


def test_https_origin_over_plain_http_is_reported(tmp_path):
    env = {**production_env(tmp_path), "SLUICE_CSRF_TRUSTED_ORIGINS": "http://sluice.example.com"}

    result = check_deploy(env)

    assert result.returncode != 0
    assert "console.W002" in result.stderr


@pytest.mark.parametrize("header", ["X-Forwarded-Proto: https", "X_Forwarded;Proto"])
def test_malformed_proxy_header_is_refused(tmp_path, header):
    env = {**production_env(tmp_path), "SLUICE_PROXY_SSL_HEADER": header}

    result = check_deploy(env)

    assert result.returncode != 0
    assert "SLUICE_PROXY_SSL_HEADER must be a header name" in result.stderr


REDIRECT_PROBE = """
import json, django
django.setup()
from django.test import Client
client = Client()
plain = {path: client.get(path, HTTP_HOST="sluice.example.com") for path in ("/healthz", "/login/")}
proxied = client.get("/login/", HTTP_HOST="sluice.example.com", HTTP_X_FORWARDED_PROTO="https")
print(json.dumps({
    "healthz": plain["/healthz"].status_code,
    "login": [plain["/login/"].status_code, plain["/login/"].get("Location")],
    "proxied": proxied.status_code,
    "hsts": proxied.get("Strict-Transport-Security"),
    "frame": proxied.get("X-Frame-Options"),
    "cookie_secure": bool(proxied.cookies["csrftoken"]["secure"]),
}))
"""


def test_https_redirects_everything_but_healthz_and_trusts_the_proxy_header(tmp_path):
    env = {
        **production_env(tmp_path),
        "DATABASE_URL": f"sqlite:///{tmp_path / 'db.sqlite3'}",
        "SLUICE_PROXY_SSL_HEADER": "X-Forwarded-Proto",
        "DJANGO_SETTINGS_MODULE": "console.settings",
    }
    keep = {k: v for k, v in os.environ.items() if not k.startswith(("SLUICE_", "DATABASE_"))}
    result = subprocess.run(
        [sys.executable, "-c", REDIRECT_PROBE],
        env={**keep, **env},
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 0, result.stderr
    answer = json.loads(result.stdout.strip().splitlines()[-1])

    assert answer["healthz"] == 200
    assert answer["login"] == [301, "https://sluice.example.com/login/"]
    assert answer["proxied"] == 200
    assert answer["hsts"] == "max-age=31536000; includeSubDomains; preload"
    assert answer["frame"] == "DENY"
    assert answer["cookie_secure"] is True
