"""Who may post events to a channel (``POST /api/v1/channels/{name}/events``).

* Producers send the channel's ingestion token: ``Authorization: Bearer slk_…`` (or
  ``X-Sluice-Token: slk_…``). A token request needs no session and no CSRF token.
* A console user with ``console.operate_channel`` may post too (to send a test event from the
  console): session (with CSRF, as every session request) or DRF token.

Answers: no credentials at all → 401 with ``WWW-Authenticate: Bearer``; a token that is not
this channel's (wrong, rotated, revoked, another channel's) → 403; a channel with no token
issued → 403 saying how to issue one; a console user without the permission → 403.
A token is never a console login: it authenticates no user and reaches no other endpoint.
"""

from __future__ import annotations

from dataclasses import dataclass

from django.contrib.auth.models import AnonymousUser
from django.urls import reverse
from drf_spectacular.extensions import OpenApiAuthenticationExtension
from rest_framework.authentication import (
    BaseAuthentication,
    SessionAuthentication,
    TokenAuthentication,
    get_authorization_header,
)
from rest_framework.exceptions import AuthenticationFailed, NotAuthenticated
from rest_framework.parsers import BaseParser
from rest_framework.permissions import BasePermission

from console.models import Channel
from console.permissions import OPERATE_CHANNEL, denial, may, team_name
from console.services.ingest.tokens import token_matches

TOKEN_HEADER = "X-Sluice-Token"


@dataclass(frozen=True)
class PresentedToken:
    """``request.auth`` of a request that carried an ingestion token (not yet checked)."""

    token: str

    def __repr__(self) -> str:  # never show the token (logs, debug pages)
        return "PresentedToken(…)"


class IngestTokenAuthentication(BaseAuthentication):
    """Reads ``Authorization: Bearer <token>`` or ``X-Sluice-Token``; checks nothing yet.

    Which channel the token must belong to is the URL's business: :class:`CanPostEvents`
    checks it. The request's user stays anonymous.
    """

    def authenticate(self, request):
        parts = get_authorization_header(request).split()
        if parts and parts[0].lower() == b"bearer":
            if len(parts) != 2:
                raise AuthenticationFailed(
                    "Authorization: Bearer takes exactly one token, without spaces."
                )
            token = parts[1].decode("latin-1")
        else:
            token = request.META.get("HTTP_X_SLUICE_TOKEN", "").strip()
            if not token:
                return None
        return AnonymousUser(), PresentedToken(token)

    def authenticate_header(self, request) -> str:
        return 'Bearer realm="sluice-ingest"'


#: The events endpoint's authenticators: the ingestion token first (its challenge is the 401's).
INGEST_AUTHENTICATION = [IngestTokenAuthentication, TokenAuthentication, SessionAuthentication]


class UnreadBodyParser(BaseParser):
    """Takes any media type and reads nothing: the events view reads its body raw.

    Django's CSRF check (session requests) looks at ``request.POST``, which makes DRF parse
    the body; with this parser that neither refuses CloudEvents media types (415) nor
    consumes the stream the view reads afterwards.
    """

    media_type = "*/*"

    def parse(self, stream, media_type=None, parser_context=None) -> dict:
        return {}


def token_route(name: str) -> str:
    return reverse("api:channel-ingest-token", kwargs={"name": name})


class CanPostEvents(BasePermission):
    """The channel's own ingestion token, or a console user with ``operate_channel``."""

    message = "You may not post events to this channel."

    def has_permission(self, request, view) -> bool:
        name = view.kwargs["name"]
        if isinstance(request.auth, PresentedToken):
            return self._token_matches(name, request.auth.token)
        user = request.user
        if user is None or not user.is_authenticated:
            raise NotAuthenticated(
                f"Send the channel's ingestion token: 'Authorization: Bearer <token>' (or "
                f"{TOKEN_HEADER}). Issue one with POST {token_route(name)}."
            )
        if user.has_perm(OPERATE_CHANNEL):
            return True
        self.message = (
            denial(OPERATE_CHANNEL, "post events from the console")
            + " Producers send the channel's ingestion token instead."
        )
        return False

    def has_object_permission(self, request, view, obj) -> bool:
        """A console user's ``operate_channel`` must hold in the channel's team."""
        if isinstance(request.auth, PresentedToken):
            return True  # the channel's own token (has_permission checked it)
        if may(request.user, OPERATE_CHANNEL, obj):
            return True
        self.message = denial(OPERATE_CHANNEL, "post events from the console", team_name(obj))
        return False

    def _token_matches(self, name: str, token: str) -> bool:
        channel = Channel.objects.filter(name=name).only("pk", "name", "ingest_token_hash").first()
        if channel is not None and not channel.ingest_token_hash:
            self.message = (
                f"Channel {name!r} has no ingestion token: issue one with POST {token_route(name)}."
            )
            return False
        if channel is not None and token_matches(channel, token):
            return True
        # An unknown channel answers like a wrong token: a token does not reveal channel names.
        self.message = (
            f"This is not the ingestion token of channel {name!r} (wrong, rotated or revoked)."
        )
        return False


class IngestTokenScheme(OpenApiAuthenticationExtension):
    """The ingestion token in the OpenAPI schema (a bearer scheme of its own)."""

    target_class = IngestTokenAuthentication
    name = "ingestToken"

    def get_security_definition(self, auto_schema):
        return {
            "type": "http",
            "scheme": "bearer",
            "description": (
                "The channel's ingestion token (POST /api/v1/channels/{name}/ingest-token), "
                f"as 'Authorization: Bearer <token>' or in the {TOKEN_HEADER} header."
            ),
        }
