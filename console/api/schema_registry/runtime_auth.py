"""How Spark drivers read Sluice's own registry: a bearer token both sides derive from the
secrets key (:func:`pipelines.registry_client.runtime_registry_token`), accepted for reads
(GET, HEAD) only, as a reader who may see schemas and do nothing else."""

from __future__ import annotations

import hmac

from django.contrib.auth.models import AnonymousUser
from rest_framework.authentication import BaseAuthentication, get_authorization_header
from rest_framework.request import Request

from console import permissions
from pipelines.registry_client import RUNTIME_TOKEN_PREFIX, runtime_registry_token


class RuntimeReader(AnonymousUser):
    """The Spark runtime reading schemas: authenticated, may see schemas, nothing more."""

    username = "sluice-runtime"  # type: ignore[assignment]

    @property
    def is_authenticated(self) -> bool:  # type: ignore[override]
        return True

    @property
    def is_anonymous(self) -> bool:  # type: ignore[override]
        return False

    def has_perm(self, perm: str, obj: object = None) -> bool:
        return perm == permissions.SEE_SCHEMAS.permission

    def get_username(self) -> str:
        return self.username


class RuntimeTokenAuthentication(BaseAuthentication):
    """``Authorization: Bearer sluice-runtime.<hmac>`` on a read; other requests pass by."""

    def authenticate(self, request: Request) -> tuple[RuntimeReader, None] | None:
        parts = get_authorization_header(request).split()
        if len(parts) != 2 or parts[0].lower() != b"bearer":
            return None
        token = parts[1].decode("latin-1")
        if not token.startswith(RUNTIME_TOKEN_PREFIX):
            return None
        if request.method not in ("GET", "HEAD"):
            return None
        if not hmac.compare_digest(token, runtime_registry_token()):
            return None
        return RuntimeReader(), None
