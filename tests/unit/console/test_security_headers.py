"""Security headers (issue 12, finding 8): a Content-Security-Policy on the console, the admin
and the API docs, with the pages still working under it; no framing, no sniffing, no
cross-origin referrer; and no ``Server: gunicorn`` banner."""

from __future__ import annotations

import base64
import hashlib
import os
import re
import subprocess
import urllib.request
from html.parser import HTMLParser
from pathlib import Path

import pytest
from django.test import Client

from console import services
from tests.support.processes import free_port, wait_until
from tests.support.stack import web_command

pytestmark = pytest.mark.django_db

REPO = Path(__file__).resolve().parents[3]
#: What Vite's build writes: module scripts and stylesheets by URL, nothing inline.
INDEX = (
    '<!doctype html><html lang="en"><head><meta charset="UTF-8" />'
    '<script type="module" crossorigin src="/static/ui/assets/index-abc.js"></script>'
    '<link rel="stylesheet" crossorigin href="/static/ui/assets/index-abc.css">'
    '</head><body><div id="root"></div></body></html>'
)


def policy(response) -> dict[str, list[str]]:
    """The Content-Security-Policy header as {directive: [sources]}."""
    header = response["Content-Security-Policy"]
    directives = (part.split() for part in header.split(";") if part.strip())
    return {name: sources for name, *sources in directives}


class InlineCode(HTMLParser):
    """Inline <script> and <style> elements of a page, with their nonce (if any)."""

    def __init__(self) -> None:
        super().__init__()
        self.found: list[tuple[str, str | None]] = []

    def handle_starttag(self, tag, attrs):
        attributes = dict(attrs)
        data_script = attributes.get("type") in {"application/json", "application/ld+json"}
        if (tag == "script" and "src" not in attributes and not data_script) or tag == "style":
            self.found.append((tag, attributes.get("nonce")))


def inline_code(response) -> list[tuple[str, str | None]]:
    parser = InlineCode()
    parser.feed(response.content.decode())
    return parser.found


def nonce(response) -> str | None:
    sources = policy(response).get("script-src", [])
    return next((s[len("'nonce-") : -1] for s in sources if s.startswith("'nonce-")), None)


def assert_strict_scripts(response) -> None:
    """No inline script runs unless it carries this response's nonce."""
    csp = policy(response)
    assert "'unsafe-inline'" not in csp["script-src"]
    for tag, tag_nonce in inline_code(response):
        if tag == "script":
            assert tag_nonce is not None and tag_nonce == nonce(response), tag_nonce


def assert_common_headers(response) -> None:
    csp = policy(response)
    assert csp["default-src"] == ["'self'"]
    assert csp["frame-ancestors"] == ["'none'"]
    assert csp["object-src"] == ["'none'"]
    assert csp["base-uri"] == ["'none'"]
    assert response["X-Frame-Options"] == "DENY"
    assert response["X-Content-Type-Options"] == "nosniff"
    assert response["Referrer-Policy"] == "same-origin"


@pytest.fixture
def root(django_user_model) -> Client:
    client = Client()
    client.force_login(django_user_model.objects.create_superuser("root", password="root-pass-1"))
    return client


@pytest.fixture
def dist(settings, tmp_path):
    (tmp_path / "index.html").write_text(INDEX, encoding="utf-8")
    settings.FRONTEND_DIST = tmp_path
    return tmp_path


def test_the_console_page_has_a_policy_relaxed_only_for_ajv(root, dist):
    response = root.get("/")

    assert response.status_code == 200
    assert_common_headers(response)
    assert_strict_scripts(response)
    csp = policy(response)
    assert set(csp["script-src"]) == {"'self'", "'unsafe-eval'"}  # Ajv compiles schemas
    assert csp["connect-src"] == ["'self'"]
    assert inline_code(response) == []


def test_the_console_page_not_built_has_the_policy_too(root, settings, tmp_path):
    settings.FRONTEND_DIST = tmp_path / "missing"

    response = root.get("/")

    assert response.status_code == 503
    assert_common_headers(response)


def test_the_login_page_styles_itself_with_the_nonce():
    response = Client().get("/login/")

    assert_common_headers(response)
    assert_strict_scripts(response)
    csp = policy(response)
    assert f"'nonce-{nonce(response)}'" in csp["style-src"]
    assert "'unsafe-inline'" not in csp["style-src"]
    assert inline_code(response) == [("style", nonce(response))]


@pytest.mark.parametrize(
    "path",
    [
        "/admin/",
        "/admin/console/channel/",
        "/admin/console/channel/add/",
        "/admin/console/channel/{pk}/change/",
        "/admin/auth/user/",
        "/admin/axes/accessattempt/",
    ],
)
def test_admin_pages_run_no_inline_script(root, user, spec, path):
    channel = services.create_channel(name="orders", spec=spec, user=user)

    response = root.get(path.format(pk=channel.pk))

    assert response.status_code == 200
    assert_common_headers(response)
    assert_strict_scripts(response)
    assert inline_code(response) == []


def test_the_admin_login_page_has_the_policy():
    response = Client().get("/admin/login/")

    assert response.status_code == 200
    assert_common_headers(response)
    assert_strict_scripts(response)


def test_the_api_docs_load_their_script_by_url_and_may_only_inline_styles():
    page = Client().get("/api/docs/")

    assert page.status_code == 200
    assert_common_headers(page)
    assert_strict_scripts(page)
    assert [tag for tag, _ in inline_code(page)] == ["style"]
    assert set(policy(page)["style-src"]) == {"'self'", "'unsafe-inline'"}
    body = page.content.decode()
    assert "/api/docs/?script=" in body
    # The way back to the console (issue 30: the API docs had none).
    assert '<a class="brand" href="/" data-testid="back-to-console">' in body
    script = Client().get("/api/docs/?script=")
    assert script.status_code == 200
    assert b"SwaggerUIBundle" in script.content


def test_the_api_answers_carry_the_policy(api):
    response = api.get("/api/v1/channels/")

    assert response.status_code == 200
    assert_common_headers(response)


def test_the_browsable_apis_only_inline_handler_is_allowed_by_its_hash(root):
    """DRF's "Log out" link is an onclick attribute: allowed by hash, nothing else inline."""
    response = root.get("/api/v1/channels/", HTTP_ACCEPT="text/html")

    assert response.status_code == 200
    assert_strict_scripts(response)
    handlers = re.findall(
        r"\son[a-z]+='([^']*)'|\son[a-z]+=\"([^\"]*)\"", response.content.decode()
    )
    allowed = policy(response)["script-src-attr"]
    assert [a or b for a, b in handlers] == ['document.getElementById("logoutForm").submit()']
    for source in (a or b for a, b in handlers):
        digest = base64.b64encode(hashlib.sha256(source.encode()).digest()).decode()
        assert f"'sha256-{digest}'" in allowed
    assert "'unsafe-inline'" not in allowed


def test_the_drf_login_page_runs_no_inline_script():
    response = Client().get("/api/auth/login/")

    assert response.status_code == 200
    assert_common_headers(response)
    assert_strict_scripts(response)


# -- the server banner -----------------------------------------------------------------------


def test_gunicorn_with_the_console_config_sends_no_server_banner(tmp_path):
    """The Procfile's and the image's gunicorn command, answering /healthz."""
    port = free_port()
    env = {k: v for k, v in os.environ.items() if not k.startswith(("SLUICE_", "DATABASE_"))}
    env["SLUICE_VAR_DIR"] = str(tmp_path)
    server = subprocess.Popen(
        web_command(port, workers=1, threads=2),
        cwd=REPO,
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    try:

        def healthz():
            assert server.poll() is None, server.stderr.read().decode()
            return urllib.request.urlopen(f"http://127.0.0.1:{port}/healthz", timeout=2)

        answer = wait_until(healthz, 30, interval=0.2, what="gunicorn to answer /healthz")
        assert answer.status == 200
        assert "Server" not in answer.headers
        assert "gunicorn" not in str(answer.headers).lower()
    finally:
        server.terminate()
        server.wait(timeout=15)


def test_every_gunicorn_command_uses_the_console_config():
    assert "--config console/gunicorn.conf.py" in (REPO / "Procfile").read_text()
    entrypoint = (REPO / "docker" / "entrypoint.sh").read_text()
    assert "--config /app/console/gunicorn.conf.py" in entrypoint
