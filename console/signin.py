"""Sign-in throttling on every door (django-axes; settings in ``console/settings.py``).

``/login/``, ``/admin/login/`` and DRF's ``/api/auth/login/`` all call Django's
``authenticate(request, …)``, whose first backend is :class:`SignInThrottle`. After
``SLUICE_LOGIN_FAILURE_LIMIT`` failures for one user name from one client address, that pair is
locked out for ``SLUICE_LOGIN_COOLOFF_SECONDS`` after its last attempt: the throttle refuses
before the password is checked, so a locked-out answer is the same whether the password was
right or not. :func:`lockout_response` is that answer (429). The audit trail records the
lockout (``auth.lockout``, :mod:`console.audit`). Operators unlock with
``manage.py axes_reset_username <user>`` (``axes_reset_ip_username <ip> <user>`` for one
address, ``axes_reset`` for everyone) or by deleting the access attempt in the admin.

API tokens (DRF ``Authorization: Token``, ingestion and metrics bearer tokens) are random
secrets, not passwords: guessing one is hopeless, and no endpoint trades a password for one.
"""

from __future__ import annotations

from axes.backends import AxesStandaloneBackend
from axes.helpers import get_cool_off
from django.http import HttpRequest, HttpResponse, JsonResponse
from django.template.loader import render_to_string

LOCKED_OUT = (
    "Too many failed sign-ins for this user from your address. Try again in {minutes}, or ask "
    "an administrator to unlock the account."
)


class SignInThrottle(AxesStandaloneBackend):
    """Refuses every attempt of a locked-out user name and address, before any password check.

    Only HTTP sign-ins are throttled: ``authenticate()`` called without a request (Django's
    test client ``login()``, a shell) has no client address to count, so this backend lets
    the next one decide instead of raising as django-axes' own does. Every sign-in door
    passes its request (Django's ``LoginView`` and the admin's do, DRF's login is a
    ``LoginView``); ``tests/unit/console/test_login_throttle.py`` proves each one is throttled.
    """

    def authenticate(self, request: HttpRequest | None, *args, **kwargs):
        if request is None:
            return None
        return super().authenticate(request, *args, **kwargs)


def lockout_response(
    request: HttpRequest, original_response: HttpResponse | None = None, credentials=None
) -> HttpResponse:
    """429 for a locked-out sign-in: a page for browsers, ``{"detail": …}`` for the API.

    ``Retry-After`` is the cool-off: the lock lasts that long after this, its last attempt.
    Nothing in it depends on the password sent.
    """
    seconds = int(get_cool_off(request).total_seconds())
    message = LOCKED_OUT.format(minutes=_duration(seconds))
    if _wants_json(request):
        response: HttpResponse = JsonResponse(
            {"detail": message, "retry_after": seconds}, status=429
        )
    else:
        page = render_to_string("console/locked_out.html", {"message": message}, request=request)
        response = HttpResponse(page, status=429)
    response["Retry-After"] = str(seconds)
    response["Cache-Control"] = "no-store"
    return response


def _wants_json(request: HttpRequest) -> bool:
    """JSON for scripts and API clients; the page for browsers (which ask for text/html)."""
    if request.headers.get("X-Requested-With") == "XMLHttpRequest":
        return True
    accept = request.headers.get("Accept", "")
    if "text/html" in accept:
        return False
    return "application/json" in accept or request.path.startswith("/api/")


def _duration(seconds: int) -> str:
    if seconds % 60:
        return f"{seconds} seconds"
    minutes = seconds // 60
    return "1 minute" if minutes == 1 else f"{minutes} minutes"
