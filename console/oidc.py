"""Single sign-on with the company's identity provider over OpenID Connect.

mozilla-django-oidc does the protocol: the authorization code flow with state, nonce and PKCE,
the token request with the client secret, the ID token's signature against the provider's
keys. This module fits it to Sluice:

* The provider is named by its issuer alone (``SLUICE_OIDC_*``, ``console/settings.py``); its
  endpoints come from its discovery document, read when first needed and kept for an hour
  (:func:`provider`), so the console starts, and password sign-ins work, while it is away.
* :class:`SignOnBackend` checks what the library leaves unchecked (the ID token's issuer and
  audience, the userinfo's subject against the ID token's), takes the user's claims from the
  ID token and userinfo, bounds every one (:func:`identity_from_claims`) and signs the user on
  through :func:`console.services.sign_on.sign_on`, which links them by subject and hands
  their groups to the teams' rules on every sign-in.
* A refused sign-on goes back to the login page saying why (:class:`SignOnCallbackView`);
  logging out after a single sign-on ends the provider's session too (:class:`SignOutView`,
  RP-initiated logout).

The audit trail records each sign-in (``auth.login``, with the provider and the groups it
asserted) and each refusal (``auth.login_failed``) like any other (:mod:`console.audit`); the
throttle (:mod:`console.signin`) guards the callback as it guards every door.
"""

from __future__ import annotations

import logging
import re
import threading
import time
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlencode, urlsplit

import jwt
import requests
from django.conf import settings
from django.contrib import messages
from django.contrib.auth import get_user_model
from django.contrib.auth.views import LogoutView
from django.core.exceptions import SuspiciousOperation, ValidationError
from django.core.validators import validate_email
from django.http import Http404, HttpRequest, HttpResponse, HttpResponseRedirect
from django.shortcuts import redirect
from django.urls import reverse
from django.views import View
from mozilla_django_oidc.auth import OIDCAuthenticationBackend
from mozilla_django_oidc.views import (
    OIDCAuthenticationCallbackView,
    OIDCAuthenticationRequestView,
)

from console.errors import SignOnRefused
from console.services.sign_on import ProviderIdentity, sign_on

logger = logging.getLogger(__name__)

#: How long a provider's discovery document is kept before it is read again.
DISCOVERY_TTL_SECONDS = 3600
#: Bounds on what a provider may say about a user; past them the sign-on is refused (groups,
#: subject) or the value left out (e-mail) or cut (names, user name).
MAX_GROUPS = 1000
MAX_GROUP_LENGTH = 255
MAX_SUBJECT_LENGTH = 255
MAX_NAME_LENGTH = 150
MAX_EMAIL_LENGTH = 254
#: Claims that describe a token, not its user: userinfo never overrides the ID token's.
TOKEN_CLAIMS = frozenset(
    {"iss", "sub", "aud", "exp", "iat", "nbf", "nonce", "azp", "auth_time", "at_hash", "jti"}
)
#: What a user name may hold (Django's own user names): anything else becomes "-".
_NOT_IN_USERNAME = re.compile(r"[^\w.@+-]")
#: The attribute of the request a refusal's reason travels on, from backend to view.
_REFUSAL = "sign_on_refusal"

GENERIC_FAILURE = "Signing in with {provider} did not succeed; try again."
UNREACHABLE = "The identity provider could not be reached; try again later."
PROVIDER_FAILED = (
    "The identity provider refused or failed this sign-in; try again, or ask your administrator."
)
UNTRUSTED_ANSWER = (
    "The identity provider's answer did not check out (signature, issuer, audience or nonce); "
    "try again."
)


# -- the provider --------------------------------------------------------------------------------


@dataclass(frozen=True)
class Provider:
    """A provider's endpoints, as its discovery document gives them."""

    issuer: str
    authorization_endpoint: str
    token_endpoint: str
    jwks_uri: str
    userinfo_endpoint: str = ""
    end_session_endpoint: str = ""


_discovered: dict[str, tuple[float, Provider]] = {}
_discovered_lock = threading.Lock()


def provider() -> Provider:
    """The configured provider (``SLUICE_OIDC_ISSUER``), read from its discovery document
    and kept for :data:`DISCOVERY_TTL_SECONDS`. Raises :class:`SignOnRefused` when the
    document cannot be read or describes another issuer."""
    issuer = settings.SLUICE_OIDC_ISSUER
    now = time.monotonic()
    with _discovered_lock:
        cached = _discovered.get(issuer)
    if cached is not None and now - cached[0] < DISCOVERY_TTL_SECONDS:
        return cached[1]
    found = _discover(issuer)
    with _discovered_lock:
        _discovered[issuer] = (now, found)
    return found


def forget_provider() -> None:
    """Drop the kept discovery documents (the next sign-on reads them again)."""
    with _discovered_lock:
        _discovered.clear()


def _discover(issuer: str) -> Provider:
    url = f"{issuer}/.well-known/openid-configuration"
    try:
        response = requests.get(url, timeout=settings.SLUICE_OIDC_TIMEOUT)
        response.raise_for_status()
        document = response.json()
    except (requests.RequestException, ValueError) as exc:
        logger.warning("single sign-on: could not read %s: %s", url, exc)
        raise SignOnRefused(UNREACHABLE) from exc
    if not isinstance(document, dict) or not isinstance(document.get("issuer"), str):
        logger.warning("single sign-on: %s is no discovery document", url)
        raise SignOnRefused(UNREACHABLE)
    if document["issuer"].rstrip("/") != issuer:
        logger.warning("single sign-on: %s names issuer %r", url, document["issuer"])
        raise SignOnRefused("The identity provider describes another issuer than configured.")
    endpoints: dict[str, str] = {}
    for name in ("authorization_endpoint", "token_endpoint", "jwks_uri"):
        endpoints[name] = _endpoint(document, name, issuer, required=True)
    for name in ("userinfo_endpoint", "end_session_endpoint"):
        endpoints[name] = _endpoint(document, name, issuer, required=False)
    return Provider(issuer=document["issuer"], **endpoints)


def _endpoint(document: dict[str, Any], name: str, issuer: str, *, required: bool) -> str:
    """An endpoint of the discovery document: an http(s) URL, https when the issuer is."""
    value = document.get(name)
    if value is None and not required:
        return ""
    if not isinstance(value, str):
        logger.warning("single sign-on: the provider's %s is %r", name, value)
        raise SignOnRefused(f"The identity provider's {name} is missing or not usable.")
    parts = urlsplit(value)
    if (
        parts.scheme not in ("http", "https")
        or not parts.hostname
        or (urlsplit(issuer).scheme == "https" and parts.scheme != "https")
    ):
        logger.warning("single sign-on: the provider's %s is %r", name, value)
        raise SignOnRefused(f"The identity provider's {name} is missing or not usable.")
    return value


def library_setting(name: str, *default: Any) -> Any:
    """mozilla-django-oidc's settings, from Sluice's own (``SLUICE_OIDC_*``); the library's
    names stay in this module."""
    values: dict[str, Any] = {
        "OIDC_RP_CLIENT_ID": settings.SLUICE_OIDC_CLIENT_ID,
        "OIDC_RP_CLIENT_SECRET": settings.SLUICE_OIDC_CLIENT_SECRET,
        "OIDC_RP_SCOPES": settings.SLUICE_OIDC_SCOPES,
        "OIDC_RP_SIGN_ALGO": settings.SLUICE_OIDC_SIGN_ALGORITHM,
        "OIDC_TIMEOUT": settings.SLUICE_OIDC_TIMEOUT,
        "OIDC_VERIFY_SSL": True,
        "OIDC_USE_NONCE": True,
        "OIDC_USE_PKCE": True,
        # The ID token is the id_token_hint of the provider's logout (SignOutView).
        "OIDC_STORE_ID_TOKEN": True,
        "OIDC_STORE_ACCESS_TOKEN": False,
        "OIDC_AUTHENTICATION_CALLBACK_URL": "oidc_authentication_callback",
        "LOGIN_REDIRECT_URL": settings.LOGIN_REDIRECT_URL,
    }
    if name in values:
        return values[name]
    return default[0] if default else getattr(settings, name)


# -- claims --------------------------------------------------------------------------------------


def identity_from_claims(
    claims: dict[str, Any], *, issuer: str, groups_claim: str
) -> ProviderIdentity:
    """Who ``claims`` (the ID token's and the userinfo's) say signed in, every value bounded.

    Raises :class:`SignOnRefused` without a usable subject or when the groups claim is not a
    list of group names (:func:`sign_in_groups`). A user name, e-mail or name that is missing
    or not usable is left empty (the user name then comes from the subject)."""
    subject = claims.get("sub")
    if not isinstance(subject, str) or not subject or len(subject) > MAX_SUBJECT_LENGTH:
        raise SignOnRefused("The identity provider sent no usable subject (sub) for you.")
    return ProviderIdentity(
        issuer=issuer,
        subject=subject,
        username=_username(claims.get("preferred_username")),
        email=_email(claims.get("email")),
        first_name=_text(claims.get("given_name")),
        last_name=_text(claims.get("family_name")),
        groups=sign_in_groups(claims, groups_claim),
    )


def sign_in_groups(claims: dict[str, Any], claim: str) -> list[str]:
    """The groups ``claims[claim]`` lists, in order, each once; ``[]`` when the claim is
    missing. Raises :class:`SignOnRefused` unless it is a list of at most
    :data:`MAX_GROUPS` texts of 1 to :data:`MAX_GROUP_LENGTH` printable characters: a
    malformed claim never signs anyone in with fewer (or other) teams than it meant."""
    value = claims.get(claim)
    if value is None:
        return []
    if not isinstance(value, list):
        raise SignOnRefused(
            f"The identity provider's {claim!r} claim is not a list of group names, so your "
            "teams cannot be worked out; ask your administrator to check its group mapper."
        )
    if len(value) > MAX_GROUPS:
        raise SignOnRefused(
            f"The identity provider's {claim!r} claim lists more than {MAX_GROUPS} groups."
        )
    for item in value:
        if (
            not isinstance(item, str)
            or not item.strip()
            or len(item) > MAX_GROUP_LENGTH
            or not item.isprintable()
        ):
            raise SignOnRefused(
                f"The identity provider's {claim!r} claim holds something that is not a group "
                f"name (a text of 1 to {MAX_GROUP_LENGTH} printable characters)."
            )
    return list(dict.fromkeys(value))


def _username(value: object) -> str:
    if not isinstance(value, str):
        return ""
    return _NOT_IN_USERNAME.sub("-", value.strip())[:MAX_NAME_LENGTH].strip("-")


def _email(value: object) -> str:
    if not isinstance(value, str) or len(value.strip()) > MAX_EMAIL_LENGTH:
        return ""
    try:
        validate_email(value.strip())
    except ValidationError:
        return ""
    return value.strip()


def _text(value: object) -> str:
    if not isinstance(value, str):
        return ""
    return "".join(ch for ch in value if ch.isprintable()).strip()[:MAX_NAME_LENGTH]


# -- the backend ---------------------------------------------------------------------------------


class SignOnBackend(OIDCAuthenticationBackend):
    """Signs in the user the provider's callback vouches for; answers nothing else.

    Django makes every backend for every sign-in, password ones too: nothing is read from the
    provider until a callback arrives, so a password sign-in never waits for (or fails with)
    it. A refusal is logged, its reason shown on the login page, and Django records the
    failed sign-in (``auth.login_failed``).
    """

    get_settings = staticmethod(library_setting)

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        self.UserModel = get_user_model()

    def authenticate(self, request: HttpRequest | None, **kwargs: Any):
        # Only the callback passes a nonce (mozilla_django_oidc.views): anything else, a
        # password sign-in among them, is another backend's.
        if request is None or "nonce" not in kwargs or not settings.SLUICE_OIDC:
            return None
        try:
            self.provider = provider()
            self.OIDC_OP_TOKEN_ENDPOINT = self.provider.token_endpoint
            self.OIDC_OP_USER_ENDPOINT = self.provider.userinfo_endpoint
            self.OIDC_OP_JWKS_ENDPOINT = self.provider.jwks_uri
            self.OIDC_RP_CLIENT_ID = settings.SLUICE_OIDC_CLIENT_ID
            self.OIDC_RP_CLIENT_SECRET = settings.SLUICE_OIDC_CLIENT_SECRET
            self.OIDC_RP_SIGN_ALGO = settings.SLUICE_OIDC_SIGN_ALGORITHM
            self.OIDC_RP_IDP_SIGN_KEY = None
            return super().authenticate(request, **kwargs)
        except SignOnRefused as exc:
            logger.warning("single sign-on refused: %s", exc)
            _refuse(request, str(exc))
        except (SuspiciousOperation, jwt.InvalidTokenError) as exc:
            # (an expired or not yet valid token is PyJWT's own error, not the library's)
            logger.warning("single sign-on refused: %s", exc)
            _refuse(request, UNTRUSTED_ANSWER)
        except requests.RequestException as exc:
            # (the token or userinfo endpoint down, or refusing: a wrong client secret is a 401)
            logger.warning("single sign-on: the provider failed: %s", exc)
            _refuse(request, PROVIDER_FAILED)
        return None

    def verify_token(self, token: str, **kwargs: Any) -> dict[str, Any]:
        """The token's claims once its signature, nonce, expiry (the library), issuer and
        audience (here) check out; :class:`SuspiciousOperation` otherwise."""
        payload = super().verify_token(token, **kwargs)
        if payload.get("iss") != self.provider.issuer:
            raise SuspiciousOperation("the ID token's issuer is not the provider's")
        audience = payload.get("aud")
        audiences = [audience] if isinstance(audience, str) else audience
        client_id = settings.SLUICE_OIDC_CLIENT_ID
        if not isinstance(audiences, list) or client_id not in audiences:
            raise SuspiciousOperation("the ID token is not meant for this client")
        if len(audiences) > 1 and payload.get("azp") != client_id:
            raise SuspiciousOperation("the ID token was issued to another party")
        return payload

    def get_userinfo(
        self, access_token: str, id_token: str, payload: dict[str, Any]
    ) -> dict[str, Any]:
        """The ID token's claims, completed by the userinfo endpoint's (when the provider has
        one) about the same subject; the token's own claims are never overridden."""
        claims = dict(payload)
        if self.OIDC_OP_USER_ENDPOINT:
            userinfo = super().get_userinfo(access_token, id_token, payload)
            if not isinstance(userinfo, dict) or userinfo.get("sub") != payload.get("sub"):
                raise SuspiciousOperation("the userinfo is about another subject")
            claims.update({k: v for k, v in userinfo.items() if k not in TOKEN_CLAIMS})
        return claims

    def get_or_create_user(self, access_token: str, id_token: str, payload: dict[str, Any]):
        try:
            claims = self.get_userinfo(access_token, id_token, payload)
        except (SuspiciousOperation, jwt.InvalidTokenError) as exc:
            # (the library would swallow these here, and the user learn nothing)
            logger.warning("single sign-on refused: %s", exc)
            raise SignOnRefused(UNTRUSTED_ANSWER) from exc
        identity = identity_from_claims(
            claims, issuer=self.provider.issuer, groups_claim=settings.SLUICE_OIDC_GROUPS_CLAIM
        )
        user = sign_on(identity)
        # What the audit trail's auth.login row says about this sign-in (console.audit).
        user.sign_in_details = {  # type: ignore[attr-defined]
            "method": "oidc",
            "issuer": identity.issuer,
            "groups": identity.groups,
        }
        return user


def _refuse(request: HttpRequest, reason: str) -> None:
    setattr(request, _REFUSAL, reason)


# -- the views -----------------------------------------------------------------------------------


class SignOnStartView(OIDCAuthenticationRequestView):
    """``GET /oidc/authenticate/?next=…``: off to the provider's sign-in page."""

    get_settings = staticmethod(library_setting)

    def __init__(self, **kwargs: Any) -> None:
        # View's own: the library's would read the endpoint from the settings, here discovered.
        View.__init__(self, **kwargs)

    def get(self, request: HttpRequest) -> HttpResponse:
        if not settings.SLUICE_OIDC:
            raise Http404("single sign-on is off")
        try:
            self.OIDC_OP_AUTH_ENDPOINT = provider().authorization_endpoint
        except SignOnRefused as exc:
            messages.error(request, str(exc))
            return redirect("login")
        self.OIDC_RP_CLIENT_ID = settings.SLUICE_OIDC_CLIENT_ID
        return super().get(request)


class SignOnCallbackView(OIDCAuthenticationCallbackView):
    """``GET /oidc/callback/?code=…&state=…``: the provider sends the user back here."""

    get_settings = staticmethod(library_setting)

    def get(self, request: HttpRequest) -> HttpResponse:
        if not settings.SLUICE_OIDC:
            raise Http404("single sign-on is off")
        return super().get(request)

    def login_failure(self) -> HttpResponse:
        reason = getattr(self.request, _REFUSAL, None)
        if reason is None:
            reason = GENERIC_FAILURE.format(provider=settings.SLUICE_OIDC_PROVIDER_NAME)
        messages.error(self.request, reason)
        return redirect("login")


class SignOutView(LogoutView):
    """Django's log-out (``POST /logout/``); after a single sign-on it also ends the
    provider's session when the provider offers that (RP-initiated logout: its
    ``end_session_endpoint``), which then sends the browser back to the login page."""

    def post(self, request: HttpRequest, *args: Any, **kwargs: Any) -> HttpResponse:
        provider_logout = provider_logout_url(request)  # before the session is gone
        response = super().post(request, *args, **kwargs)
        return HttpResponseRedirect(provider_logout) if provider_logout else response


def provider_logout_url(request: HttpRequest) -> str:
    """Where to end the provider's session of this signed-on request; ``""`` when it was no
    single sign-on or the provider has no such endpoint (or is away: the console's own
    session ends all the same)."""
    id_token = request.session.get("oidc_id_token")
    if not settings.SLUICE_OIDC or not id_token or not request.user.is_authenticated:
        return ""
    try:
        endpoint = provider().end_session_endpoint
    except SignOnRefused:
        return ""
    if not endpoint:
        return ""
    query = urlencode(
        {
            "id_token_hint": id_token,
            "post_logout_redirect_uri": request.build_absolute_uri(reverse("login")),
            "client_id": settings.SLUICE_OIDC_CLIENT_ID,
        }
    )
    return f"{endpoint}{'&' if urlsplit(endpoint).query else '?'}{query}"
