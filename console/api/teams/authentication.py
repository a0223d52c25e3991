"""Service accounts' tokens on the API: ``Authorization: Bearer sls_…``
(:mod:`console.services.service_accounts`). The request's user is the account's own user,
with its one role in its team; an unknown, revoked or expired token is a 401."""

from __future__ import annotations

from drf_spectacular.extensions import OpenApiAuthenticationExtension
from rest_framework.authentication import (
    BaseAuthentication,
    BasicAuthentication,
    get_authorization_header,
)
from rest_framework.exceptions import AuthenticationFailed

from console.services.service_accounts import TOKEN_PREFIX, account_for_token


class ServiceAccountAuthentication(BaseAuthentication):
    """A service account's bearer token; any other ``Authorization`` is left to the next
    authenticator (DRF's ``Token``, a session)."""

    def authenticate(self, request):
        parts = get_authorization_header(request).split()
        if len(parts) != 2 or parts[0].lower() != b"bearer":
            return None
        token = parts[1].decode("latin-1")
        if not token.startswith(TOKEN_PREFIX):
            return None  # another bearer token (an ingestion token): not ours
        account = account_for_token(token)
        if account is None:
            raise AuthenticationFailed("This service account token is unknown, revoked or expired.")
        return account.user, account

    def authenticate_header(self, request) -> str:
        return 'Bearer realm="sluice"'


class ServiceAccountScheme(OpenApiAuthenticationExtension):
    """The service account token in the OpenAPI schema."""

    target_class = ServiceAccountAuthentication
    name = "serviceAccountToken"

    def get_security_definition(self, auto_schema):
        return {
            "type": "http",
            "scheme": "bearer",
            "description": "A team's service account token (sls_…), issued by a team admin.",
        }


class ServiceAccountBasicAuthentication(BasicAuthentication):
    """HTTP basic auth as Confluent's clients send it (``basic.auth.user.info``), where the
    password may be a service account's token (``svc.<team>.<name>:sls_…``): the account's
    user, as with ``Bearer sls_…``. A user name of the ``svc.`` form must be the token's
    account's; another (``token``, empty) is not checked. Any other password is a console
    user's, checked by Django's backends (:class:`BasicAuthentication`)."""

    def authenticate_credentials(self, userid, password, request=None):
        if not password.startswith(TOKEN_PREFIX):
            return super().authenticate_credentials(userid, password, request)
        account = account_for_token(password)
        if account is None:
            raise AuthenticationFailed("This service account token is unknown, revoked or expired.")
        if userid.startswith("svc.") and userid != account.user.get_username():
            raise AuthenticationFailed("This token is not this service account's.")
        return account.user, account
