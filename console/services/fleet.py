"""Bulk lifecycle: one request, many channels, one result per channel.

:func:`bulk_lifecycle` applies a lifecycle action (start, stop, pause, resume, restart,
delete) to many channels with the single-channel services of :mod:`.channels`, so each
channel goes through exactly the rules, lifecycle events and runtime calls of its own
endpoint; a channel that cannot (409: a paused channel cannot be paused from STOPPED, 503:
the runtime is down) is reported with the reason and the others go on. ``stop`` of channels
already STOPPED is answered without a write. The audit trail gets one row per channel
(``channel.<action>``, ``via`` ``bulk``), written together at the end.

``stop`` (the fleet's emergency brake) runs in bulk: the same writes as
:func:`~console.services.channels.stop_channel` for every channel at once (one ``UPDATE`` of
the targets, one of the connectors' restart counts, one insert of the lifecycle events, in one
transaction), then the runtime is told per connector; when the runtime cannot be reached
nothing is saved and every channel is answered 503, as the single endpoint does.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, replace
from typing import Any

from django.contrib.auth.models import User
from django.db import transaction
from django.utils import timezone

from console.choices import SubjectType, TargetState
from console.models import AuditEvent, Channel, Connector, LifecycleEvent
from console.runtime import get_runtime
from console.services import channels as channel_services
from console.services.errors import (
    InvalidTransition,
    RuntimeUnavailable,
    ServiceError,
    runtime_errors,
)
from console.services.lifecycle import actor_for
from runtime_adapter import states as runtime_states

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
    if action == "stop":
        results = _stop_all(list(dict.fromkeys(names)), by_name, user)
        _audit(action, results, user, via, remote_addr, user_agent)
        return results
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


def _stop_all(names: list[str], by_name: dict[str, Channel], user: User | None) -> list[BulkResult]:
    """Stop every channel of ``names`` at once (see the module docstring)."""
    stopped = BulkResult("", True, 202, target_state=TargetState.STOPPED)
    missing = BulkResult("", False, 404, "No channel has this name.")
    try:
        with transaction.atomic():
            locked = list(
                Channel.objects.select_for_update()
                .filter(pk__in=[channel.pk for channel in by_name.values()])
                .exclude(target_state=TargetState.STOPPED)
                .values_list("pk", "name", "target_state")
            )
            ids = [pk for pk, _, _ in locked]
            now = timezone.now()
            Channel.objects.filter(pk__in=ids).update(target_state=TargetState.STOPPED, updated=now)
            actor = actor_for(user)
            LifecycleEvent.objects.bulk_create(
                [
                    LifecycleEvent(
                        channel_id=pk,
                        subject_type=SubjectType.CHANNEL,
                        subject_id=name,
                        from_state=previous,
                        to_state=TargetState.STOPPED,
                        actor=actor,
                        reason="stop requested",
                        created_at=now,
                    )
                    for pk, name, previous in locked
                ],
                batch_size=500,
            )
            connectors = Connector.objects.filter(channel_id__in=ids)
            runtime_ids = list(connectors.values_list("runtime_id", flat=True))
            connectors.update(restart_attempts=0)
            runtime = get_runtime()
            stopped_state = runtime_states.TargetState.STOPPED
            with runtime_errors("set_target_state"):
                many = getattr(runtime, "set_target_states", None)  # SparkRuntime: 4 round trips
                if many is not None:
                    many(runtime_ids, stopped_state)
                else:
                    for runtime_id in runtime_ids:
                        runtime.set_target_state(runtime_id, stopped_state)
    except RuntimeUnavailable as exc:
        reason = str(exc) or "The runtime is unavailable."
        return [
            BulkResult(name, False, 503, reason) if name in by_name else replace(missing, name=name)
            for name in names
        ]
    return [replace(stopped if name in by_name else missing, name=name) for name in names]


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
