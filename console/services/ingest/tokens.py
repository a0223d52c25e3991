"""Per-channel ingestion tokens: what producers send to post events to an ``http`` channel.

A token is ``slk_`` + 32 random bytes (``secrets.token_urlsafe``), shown once when issued.
The channel keeps only its SHA-256 hash and its first characters (the prefix, to tell tokens
apart). Tokens are high-entropy, so a fast hash is enough (no slow KDF): nobody can guess
one from its hash, and checking one costs microseconds on every request.
"""

from __future__ import annotations

import hashlib
import hmac
import secrets
from dataclasses import dataclass

from django.db import transaction

from console.models import Channel

TOKEN_PREFIX = "slk_"
_SHOWN_CHARS = len(TOKEN_PREFIX) + 4


@dataclass(frozen=True)
class IssuedToken:
    """A token just issued: ``token`` is shown to the caller this once and never again."""

    token: str
    prefix: str
    created: bool
    """``True`` when the channel had no token; ``False`` when an older one was replaced."""


def hash_token(token: str) -> str:
    """The hex SHA-256 of ``token``: what the channel stores."""
    return hashlib.sha256(token.encode("utf-8")).hexdigest()


def issue_ingest_token(channel: Channel) -> IssuedToken:
    """Create the channel's ingestion token, or rotate it (the old one stops working at once)."""
    token = TOKEN_PREFIX + secrets.token_urlsafe(32)
    prefix = token[:_SHOWN_CHARS]
    with transaction.atomic():
        locked = (
            Channel.objects.select_for_update().only("pk", "ingest_token_hash").get(pk=channel.pk)
        )
        created = not locked.ingest_token_hash
        Channel.objects.filter(pk=channel.pk).update(
            ingest_token_hash=hash_token(token), ingest_token_prefix=prefix
        )
    channel.ingest_token_hash, channel.ingest_token_prefix = hash_token(token), prefix
    return IssuedToken(token=token, prefix=prefix, created=created)


def revoke_ingest_token(channel: Channel) -> bool:
    """Forget the channel's token; return whether it had one."""
    revoked = (
        Channel.objects.filter(pk=channel.pk)
        .exclude(ingest_token_hash="")
        .update(ingest_token_hash="", ingest_token_prefix="")
    )
    channel.ingest_token_hash = channel.ingest_token_prefix = ""
    return bool(revoked)


def token_matches(channel: Channel, presented: str) -> bool:
    """Whether ``presented`` is the channel's token (constant time; ``False`` when none)."""
    if not channel.ingest_token_hash or not presented:
        return False
    return hmac.compare_digest(hash_token(presented), channel.ingest_token_hash)
