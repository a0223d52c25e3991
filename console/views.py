"""Plain Django views outside the API: health check, and the browser console's page."""

from __future__ import annotations

import html

from django.conf import settings
from django.contrib.auth.decorators import login_required
from django.db import DatabaseError, connection
from django.http import HttpRequest, HttpResponse, JsonResponse
from django.views.decorators.csrf import ensure_csrf_cookie
from django.views.decorators.http import require_safe

NOT_BUILT = """<!doctype html><html lang="en"><head><meta charset="utf-8">
<title>Sluice console not built</title></head><body style="font-family: sans-serif; margin: 3rem">
<h1>The browser console is not built</h1>
<p>Build it with <code>make run</code> (or <code>cd frontend &amp;&amp; npm ci &amp;&amp;
npm run build</code>) and restart the web server. The API (<a href="/api/docs/">/api/docs/</a>)
and the admin (<a href="/admin/">/admin/</a>) work without it.</p></body></html>"""


@require_safe
def healthz(request: HttpRequest) -> JsonResponse:
    """200 ``{"status": "ok"}`` when the database answers, else 503. No authentication."""
    try:
        with connection.cursor() as cursor:
            cursor.execute("SELECT 1")
    except DatabaseError:
        return JsonResponse({"status": "unavailable", "database": "down"}, status=503)
    return JsonResponse({"status": "ok"})


@require_safe
@login_required
@ensure_csrf_cookie
def console_app(request: HttpRequest) -> HttpResponse:
    """The single-page console (``frontend/dist/index.html``) for a logged-in user.

    Anonymous visitors are sent to the login page. The CSRF cookie is always set, so the
    app can send ``X-CSRFToken`` with the session cookie on every API write. 503 with
    instructions when the frontend has not been built.
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
