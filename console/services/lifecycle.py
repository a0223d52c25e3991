"""Who did what: actors and lifecycle events."""

from __future__ import annotations

from collections.abc import Iterable
from datetime import datetime

from django.contrib.auth.models import AbstractBaseUser

from console.choices import SubjectType
from console.models import Channel, LifecycleEvent
from console.selectors.specs import mask_known_secrets, plain_secret_values

RECONCILE_ACTOR = "system:reconcile"


def actor_for(user: AbstractBaseUser | None) -> str:
    """``"user:<username>"`` for a user, ``"system"`` for none."""
    if user is None or not user.is_authenticated:
        return "system"
    return f"user:{user.get_username()}"


def lifecycle_event(
    *,
    subject_type: SubjectType,
    subject_id: str,
    actor: str,
    channel: Channel | None = None,
    from_state: str = "",
    to_state: str = "",
    reason: str = "",
    at: datetime | None = None,
    secrets: Iterable[str] = (),
) -> LifecycleEvent:
    """An unsaved event (for ``bulk_create``); ``at`` defaults to now.

    ``secrets`` (plaintext values) are masked as ``***`` in ``reason``.
    """
    reason = mask_known_secrets(reason, secrets)
    event = LifecycleEvent(
        channel=channel,
        subject_type=subject_type,
        subject_id=subject_id,
        from_state=from_state or "",
        to_state=to_state or "",
        actor=actor,
        reason=reason,
    )
    if at is not None:
        event.created_at = at
    return event


def record(**kwargs) -> LifecycleEvent:
    """Save and return one event (same arguments as :func:`lifecycle_event`)."""
    event = lifecycle_event(**kwargs)
    event.save()
    return event


def record_channel(
    channel: Channel | None,
    actor: str,
    *,
    from_state: str,
    to_state: str,
    reason: str,
    subject_id: str | None = None,
) -> LifecycleEvent:
    """Save an event about a channel (``subject_id`` names it once it is deleted).

    The secrets of the channel's latest revision are masked in ``reason``.
    """
    return record(
        secrets=_channel_secrets(channel, reason),
        channel=channel,
        subject_type=SubjectType.CHANNEL,
        # A deleted channel (None) comes with its subject_id.
        subject_id=subject_id or channel.name,  # type: ignore[union-attr]
        from_state=from_state,
        to_state=to_state,
        actor=actor,
        reason=reason,
    )


def _channel_secrets(channel: Channel | None, reason: str) -> list[str]:
    # pk is None on an unsaved channel, though django-stubs type it int.
    if channel is None or channel.pk is None or not reason:  # type: ignore[redundant-expr]
        return []
    revision = channel.latest_revision_obj()
    return plain_secret_values(revision.spec) if revision is not None else []
