"""Plain Django views outside the API: health check, Prometheus metrics, the console's page."""

from __future__ import annotations

import hmac
import html
from pathlib import Path

from csp.constants import UNSAFE_EVAL
from csp.decorators import csp_update
from django.conf import settings
from django.contrib.auth.decorators import login_required
from django.contrib.auth.views import LoginView
from django.db import DatabaseError, connection
from django.http import HttpRequest, HttpResponse, JsonResponse
from django.views.decorators.cache import never_cache
from django.views.decorators.csrf import ensure_csrf_cookie
from django.views.decorators.http import require_safe
from django.views.defaults import page_not_found
from prometheus_client.exposition import choose_encoder
from rest_framework.authentication import TokenAuthentication
from rest_framework.exceptions import AuthenticationFailed

from console import metrics, permissions
from console.services.service_accounts import TOKEN_PREFIX as SERVICE_TOKEN_PREFIX
from console.services.service_accounts import account_for_token

NOT_BUILT = """<!doctype html><html lang="en"><head><meta charset="utf-8">
<title>Sluice console not built</title></head><body style="font-family: sans-serif; margin: 3rem">
<h1>The browser console is not built</h1>
<p>Build it with <code>make run</code> (or <code>cd frontend &amp;&amp; npm ci &amp;&amp;
npm run build</code>) and restart the web server. The API (<a href="/api/docs/">/api/docs/</a>)
and the admin (<a href="/admin/">/admin/</a>) work without it.</p></body></html>"""


class LoginPageView(LoginView):
    """The login page: a local account's user name and password, and, when single sign-on is
    on (``SLUICE_OIDC_ISSUER``), a *Sign in with <provider>* button (:mod:`console.oidc`)."""

    template_name = "console/login.html"
    redirect_authenticated_user = True

    def get_context_data(self, **kwargs):
        context = super().get_context_data(**kwargs)
        context["sign_on_provider"] = (
            settings.SLUICE_OIDC_PROVIDER_NAME if settings.SLUICE_OIDC else ""
        )
        return context


def not_found(request: HttpRequest, exception: Exception) -> HttpResponse:
    """Django's 404 (``handler404``): under ``/api/`` in the API's own shape, ``{"detail": …}``
    as JSON, so a path no API route matches (a revision number that is not a number) answers
    as every other API 404 does; elsewhere Django's page."""
    if request.path.startswith("/api/"):
        return JsonResponse({"detail": "Not found."}, status=404)
    return page_not_found(request, exception)


@require_safe
def healthz(request: HttpRequest) -> JsonResponse:
    """200 ``{"status": "ok"}`` when the database answers, else 503. No authentication."""
    try:
        with connection.cursor() as cursor:
            cursor.execute("SELECT 1")
    except DatabaseError:
        return JsonResponse({"status": "unavailable", "database": "down"}, status=503)
    return JsonResponse({"status": "ok"})


FAVICON = Path(__file__).resolve().parent / "static" / "console" / "favicon.svg"


@require_safe
def favicon(request: HttpRequest) -> HttpResponse:
    """The site's icon (an SVG) at the address browsers ask for by themselves, for every page:
    the console, the login page, the admin, the API docs. No authentication."""
    response = HttpResponse(FAVICON.read_bytes(), content_type="image/svg+xml")
    response["Cache-Control"] = "public, max-age=86400"
    return response


#: The console page's one relaxation of the site's Content-Security-Policy: the builder's
#: config forms validate with Ajv (@rjsf/validator-ajv8), which compiles each plugin's JSON
#: Schema to a function with ``new Function``. Scripts still load from this origin only and
#: no inline script runs; the page builds no code from what users type.
CONSOLE_APP_CSP = {"script-src": [UNSAFE_EVAL]}


@csp_update(CONSOLE_APP_CSP)
@require_safe
@login_required
@ensure_csrf_cookie
def console_app(request: HttpRequest) -> HttpResponse:
    """The single-page console (``frontend/dist/index.html``) for a logged-in user.

    Anonymous visitors are sent to the login page. The CSRF cookie is always set, so the
    app can send ``X-CSRFToken`` with the session cookie on every API write. 503 with
    instructions when the frontend has not been built. The page is served with the site's
    Content-Security-Policy plus :data:`CONSOLE_APP_CSP` (Vite's build has no inline script).
    """
    index = settings.FRONTEND_DIST / "index.html"
    try:
        page = index.read_text(encoding="utf-8")
    except FileNotFoundError:
        return HttpResponse(NOT_BUILT, status=503)
    user = html.escape(request.user.get_username(), quote=True)
    page = page.replace("<body>", f'<body data-user="{user}">', 1)
    response = HttpResponse(page)
    response["Cache-Control"] = "no-cache"
    return response


#: The permission a logged-in user needs to read /metrics (what the viewer role grants).
METRICS_PERMISSION = "console.view_channel"


def _metrics_access(request: HttpRequest) -> tuple[JsonResponse | None, set[int] | None]:
    """The 401 / 403 to answer, or ``None`` and the teams whose channels the request may read
    the series of (``None``: the whole site)."""
    header = request.headers.get("Authorization", "")
    scheme, _, credentials = header.partition(" ")
    user = request.user
    if scheme.lower() == "bearer" and credentials.strip().startswith(SERVICE_TOKEN_PREFIX):
        account = account_for_token(credentials.strip())
        if account is None:
            return _unauthorized("This service account token is unknown, revoked or expired."), None
        user = account.user
    elif scheme.lower() == "bearer":
        refusal = _site_token_refusal(credentials)
        return refusal, None
    if scheme.lower() == "token":  # a user's API token, as for /api/v1/
        try:
            # Reads only the Authorization header (request.META), which an HttpRequest has.
            user, _token = TokenAuthentication().authenticate(request) or (user, None)  # type: ignore[arg-type]
        except AuthenticationFailed as exc:
            return _unauthorized(str(exc.detail)), None
    if not user.is_authenticated:
        return (
            _unauthorized(
                "Authentication credentials were not provided: send "
                "'Authorization: Bearer <SLUICE_METRICS_TOKEN>' or log in."
            ),
            None,
        )
    if not user.has_perm(METRICS_PERMISSION):
        return (
            JsonResponse(
                {"detail": f"Reading metrics needs the {METRICS_PERMISSION} permission."},
                status=403,
            ),
            None,
        )
    return None, permissions.visible_team_ids(user)


def _site_token_refusal(credentials: str) -> JsonResponse | None:
    """``None`` when ``credentials`` is the site's metrics token, else the 401."""
    expected = settings.SLUICE_METRICS_TOKEN
    if not expected:
        return _unauthorized("Bearer tokens are disabled: SLUICE_METRICS_TOKEN is not set.")
    if not hmac.compare_digest(credentials.strip().encode(), expected.encode()):
        return _unauthorized("Invalid bearer token.")
    return None


def _unauthorized(detail: str) -> JsonResponse:
    response = JsonResponse({"detail": detail}, status=401)
    response["WWW-Authenticate"] = 'Bearer realm="sluice-metrics"'
    return response


@require_safe
@never_cache
def metrics_view(request: HttpRequest) -> HttpResponse:
    """Prometheus metrics (see :mod:`console.metrics`) for a scraper or a logged-in viewer.

    Accepts ``Authorization: Bearer <SLUICE_METRICS_TOKEN>`` (compared in constant time): the
    whole site's; or, with only their teams' channels and none of the site's own series, a
    team's service account (``Bearer sls_…``) or a user with ``console.view_channel`` logged in
    (session) or sending their API token (``Authorization: Token …``); a site admin sees all.
    Otherwise 401 (403 for a user without the permission). Speaks OpenMetrics when the
    scraper asks for it.
    """
    refusal, teams = _metrics_access(request)
    if refusal is not None:
        return refusal
    encoder, content_type = choose_encoder(request.headers.get("Accept", ""))
    return HttpResponse(encoder(metrics.registry(teams)), content_type=content_type)
