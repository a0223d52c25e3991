"""The audit trail: who changed or operated what, when, from where, and the outcome.

:func:`record_audit` is the only writer of :class:`~console.models.AuditEvent` rows; the
request middleware (:mod:`console.audit`) and the sign-in signals call it. Rows are never
updated. :func:`redact_body` turns a request body into what a row may keep: channel specs
with their secrets replaced by the marker, password and token fields replaced, and
nothing bigger than :data:`MAX_CHANGES_BYTES`.
"""

from __future__ import annotations

import json
import logging
import re
from collections.abc import Mapping
from datetime import datetime
from typing import Any

from django.contrib.auth.models import AbstractBaseUser, AnonymousUser, User
from django.db import transaction

from console.models import AuditEvent, Channel
from console.selectors.specs import redact_spec

logger = logging.getLogger(__name__)

ANONYMOUS = "anonymous"
REDACTED = "[redacted]"
MAX_CHANGES_BYTES = 16 * 1024
"""A body kept whole up to this size (as JSON); above it only its top-level keys."""

#: Fields whose values are never kept: passwords, tokens, keys, CSRF tokens.
SENSITIVE_KEY = re.compile(
    r"pass(word|wd|phrase)?\d?$|secret|token|authorization|api[_-]?key|credential|csrf",
    re.IGNORECASE,
)
_FIELD_LIMITS = {"actor": 150, "action": 64, "object_type": 32, "object_id": 255}
_USER_AGENT_LIMIT = 512


def actor_name(user: AbstractBaseUser | None) -> str:
    """The username of an authenticated user, else :data:`ANONYMOUS`."""
    if user is None or not user.is_authenticated:
        return ANONYMOUS
    return user.get_username()


def record_audit(
    *,
    action: str,
    user: User | AnonymousUser | None = None,
    actor: str | None = None,
    object_type: str = "",
    object_id: str = "",
    changes: Mapping[str, Any] | None = None,
    outcome: int | None = None,
    remote_addr: str | None = None,
    user_agent: str = "",
    via: str = "",
    at: datetime | None = None,
    team_id: int | None = None,
) -> AuditEvent | None:
    """Save one audit event and return it.

    ``user`` is kept when authenticated; ``actor`` defaults to its username (or
    ``"anonymous"``). Over-long values are cut to their columns. A failure to write is
    logged and ``None`` returned: the audit never turns a done operation into an error.
    ``team_id`` is the object's team; left out, a channel's is looked up by its name (the row
    is then shown to that team, :func:`console.selectors.audit_trail.audit_events_for`).
    """
    authenticated = user if user is not None and user.is_authenticated else None
    values = {
        "actor": actor or actor_name(authenticated),
        "action": action,
        "object_type": object_type or "",
        "object_id": object_id or "",
    }
    values = {key: _storable(str(value))[: _FIELD_LIMITS[key]] for key, value in values.items()}
    if team_id is None and object_type == "channel" and object_id:
        team_id = Channel.objects.filter(name=object_id).values_list("team_id", flat=True).first()
    event = AuditEvent(
        team_id=team_id,
        user=authenticated,
        changes=_storable(dict(changes or {})),
        outcome=outcome,
        remote_addr=remote_addr or None,
        user_agent=_storable(user_agent or "")[:_USER_AGENT_LIMIT],
        via=via,
        **values,
    )
    if at is not None:
        event.created_at = at
    try:
        # A savepoint: a refused row must not break the caller's transaction (PostgreSQL).
        with transaction.atomic():
            event.save()
    except Exception:  # an audit row must never fail the operation it records
        logger.exception("could not record audit event %s on %s", action, object_id)
        return None
    return event


def redact_body(body: Any) -> dict[str, Any]:
    """What an audit row keeps of a request body (a parsed JSON value or a form dict).

    A ``spec`` (an object, or JSON text as the admin form sends it) keeps its shape with
    its secrets as the marker; sensitive fields (:data:`SENSITIVE_KEY`) anywhere else
    become ``"[redacted]"``. A result over :data:`MAX_CHANGES_BYTES` is replaced by
    ``{"truncated": true, "bytes": n, "keys": [...]}``.
    """
    if body is None or body == {} or body == "":
        return {}
    if not isinstance(body, Mapping):
        body = {"body": body}
    redacted = _storable({str(key): _redact_field(str(key), value) for key, value in body.items()})
    size = len(json.dumps(redacted, default=str))
    if size > MAX_CHANGES_BYTES:
        return {"truncated": True, "bytes": size, "keys": sorted(redacted)}
    return redacted


def _storable(value: Any) -> Any:
    """``value`` with strings every database takes: no NUL, no unpaired surrogate (a body is
    whatever a client sent; PostgreSQL's jsonb refuses both)."""
    if isinstance(value, str):
        return value.replace("\x00", "\ufffd").encode("utf-8", "replace").decode("utf-8")
    if isinstance(value, Mapping):
        return {_storable(str(k)): _storable(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_storable(item) for item in value]
    return value


def _redact_field(key: str, value: Any) -> Any:
    if key == "spec":
        return _redact_spec_value(value)
    return _redact_value(key, value)


def _redact_spec_value(value: Any) -> Any:
    if isinstance(value, str):
        try:
            value = json.loads(value)
        except (ValueError, RecursionError):  # the form reports what is wrong with it
            return f"<not JSON, {len(value)} characters>"
    if isinstance(value, Mapping):
        return redact_spec(value)
    return _redact_value("spec", value)


def _redact_value(key: str, value: Any) -> Any:
    if SENSITIVE_KEY.search(key):
        return REDACTED
    if isinstance(value, Mapping):
        return {str(k): _redact_value(str(k), v) for k, v in value.items()}
    if isinstance(value, list):
        return [_redact_value(key, item) for item in value]
    return value
