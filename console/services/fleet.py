"""Bulk lifecycle: one request, many channels, one result per channel.

:func:`bulk_lifecycle` applies a lifecycle action (start, stop, pause, resume, restart,
delete) to many channels with the single-channel services of :mod:`.channels`, so each
channel goes through exactly the rules, lifecycle events and runtime calls of its own
endpoint; a channel that cannot (409: a paused channel cannot be paused from STOPPED, 503:
the runtime is down) is reported with the reason and the others go on. ``stop`` of channels
already STOPPED is answered without a write. The audit trail gets one row per channel
(``channel.<action>``, ``via`` ``bulk``), written together at the end.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from django.contrib.auth.models import User
from django.db import transaction

from console.choices import TargetState
from console.models import AuditEvent, Channel
from console.services import channels as channel_services
from console.services.errors import InvalidTransition, RuntimeUnavailable, ServiceError

ACTIONS = ("start", "stop", "pause", "resume", "restart", "delete")
#: The most channels one bulk request acts on.
MAX_BULK = 5000

_SERVICES: dict[str, Callable[..., Any]] = {
    "start": channel_services.start_channel,
    "stop": channel_services.stop_channel,
    "pause": channel_services.pause_channel,
    "resume": channel_services.resume_channel,
    "restart": channel_services.restart_channel,
    "delete": channel_services.delete_channel,
}


@dataclass(frozen=True)
class BulkResult:
    name: str
    ok: bool
    status: int
    """The HTTP status the channel's own endpoint would have answered (202, 204, 404, 409, 503)."""
    error: str = ""
    target_state: str | None = None


def bulk_lifecycle(
    action: str,
    names: Sequence[str],
    *,
    user: User | None = None,
    via: str = "bulk",
    remote_addr: str | None = None,
    user_agent: str = "",
) -> list[BulkResult]:
    """Apply ``action`` to each channel of ``names`` (in that order, each once); one
    :class:`BulkResult` per name, a missing channel included (404)."""
    if action not in _SERVICES:
        raise ValueError(f"unknown action {action!r}")
    service = _SERVICES[action]
    by_name = {
        channel.name: channel
        for channel in Channel.objects.filter(name__in=list(names)).only(
            "id", "name", "target_state"
        )
    }
    results: list[BulkResult] = []
    for name in dict.fromkeys(names):
        channel = by_name.get(name)
        if channel is None:
            results.append(BulkResult(name, False, 404, "No channel has this name."))
            continue
        if action == "stop" and channel.target_state == TargetState.STOPPED:
            # Already stopped: the single endpoint changes nothing either (no event, no write).
            results.append(BulkResult(name, True, 202, target_state=TargetState.STOPPED))
            continue
        results.append(_one(service, action, channel, user))
    _audit(action, results, user, via, remote_addr, user_agent)
    return results


def _one(
    service: Callable[..., Any], action: str, channel: Channel, user: User | None
) -> BulkResult:
    try:
        with transaction.atomic():
            service(channel, user=user)
    except InvalidTransition as exc:
        return BulkResult(channel.name, False, 409, str(exc))
    except RuntimeUnavailable as exc:
        return BulkResult(channel.name, False, 503, str(exc) or "The runtime is unavailable.")
    except Channel.DoesNotExist:  # deleted meanwhile
        return BulkResult(channel.name, False, 404, "No channel has this name.")
    except ServiceError as exc:
        return BulkResult(channel.name, False, 409, str(exc))
    if action == "delete":
        return BulkResult(channel.name, True, 204)
    target = {"start": "RUNNING", "stop": "STOPPED", "pause": "PAUSED", "resume": "RUNNING"}
    return BulkResult(channel.name, True, 202, target_state=target.get(action))


def _audit(
    action: str,
    results: Iterable[BulkResult],
    user: User | None,
    via: str,
    remote_addr: str | None,
    user_agent: str,
) -> None:
    actor = user.get_username() if user is not None and user.is_authenticated else "anonymous"
    rows = [
        AuditEvent(
            user=user if user is not None and user.is_authenticated else None,
            actor=actor[:150],
            action=f"channel.{action}",
            object_type="channel",
            object_id=result.name[:255],
            changes={"bulk": True, **({"error": result.error} if result.error else {})},
            outcome=result.status,
            remote_addr=remote_addr or None,
            user_agent=user_agent[:512],
            via=via,
        )
        for result in results
    ]
    AuditEvent.objects.bulk_create(rows, batch_size=500)
