"""Bulk lifecycle: one request, many channels, one result per channel.

:func:`bulk_lifecycle` applies a lifecycle action (start, stop, pause, resume, restart,
delete) to many channels. Each action runs set-based (:mod:`console.services.fleet_batch`):
the same decisions as the single-channel services of :mod:`.channels` make one channel at a
time (the same rules and refusals, lifecycle events, connector writes and runtime calls), in
one transaction with a few statements and one runtime call per kind of call, whatever the
number of channels. A channel that cannot (409: a channel cannot be paused from STOPPED,
404: no such channel) is reported with the reason and the others go on; when the runtime
cannot be reached nothing is saved and the channels that needed it are answered 503, as
their own endpoints would have been. The audit trail gets one row per channel
(``channel.<action>``, ``via`` ``bulk``), written together at the end.

``batched=False`` runs the single services one channel after the other instead (the
reference the set-based path is tested against).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, replace
from typing import Any

from django.contrib.auth.models import User
from django.db import transaction
from django.db.models import Max

from console.choices import ConnectorState
from console.errors import (
    InvalidTransition,
    RuntimeUnavailable,
    ServiceError,
)
from console.models import AuditEvent, Channel, Connector, Revision
from console.services import channels as channel_services
from console.services import fleet_batch

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


_MISSING = fleet_batch.Answer(404, "No channel has this name.")


@dataclass(frozen=True)
class BulkResult:
    name: str
    ok: bool
    status: int
    """The HTTP status the channel's own endpoint would have answered (202, 204, 404, 409, 503)."""
    error: str = ""
    target_state: str | None = None
    changed: bool = True
    """Whether the action changed the channel: False when it failed, or when the channel
    already was where the action takes it (a start of a running channel whose latest revision
    runs, a stop of a stopped one)."""


def bulk_lifecycle(
    action: str,
    names: Sequence[str],
    *,
    user: User | None = None,
    via: str = "bulk",
    remote_addr: str | None = None,
    user_agent: str = "",
    batched: bool = True,
) -> list[BulkResult]:
    """Apply ``action`` to each channel of ``names`` (in that order, each once); one
    :class:`BulkResult` per name, a missing channel included (404). ``batched=False``: one
    single-channel service call per channel (see the module docstring)."""
    if action not in _SERVICES:
        raise ValueError(f"unknown action {action!r}")
    service = _SERVICES[action]
    by_name = {
        channel.name: channel
        for channel in Channel.objects.filter(name__in=list(names)).only(
            "id", "name", "target_state"
        )
    }
    ordered = list(dict.fromkeys(names))
    already = _already_there(action, list(by_name.values()))
    results: list[BulkResult] = []
    if batched:
        found = [by_name[name] for name in ordered if name in by_name]
        answers = fleet_batch.ACTIONS[action](found, user)
        for name in ordered:
            answer = answers.get(name, _MISSING)
            results.append(
                BulkResult(
                    name,
                    answer.status < 300,
                    answer.status,
                    answer.error,
                    answer.target_state,
                )
            )
    else:
        for name in ordered:
            channel = by_name.get(name)
            if channel is None:
                results.append(BulkResult(name, False, 404, _MISSING.error))
                continue
            results.append(_one(service, action, channel, user))
    results = [replace(r, changed=r.ok and r.name not in already) for r in results]
    _audit(action, results, user, via, remote_addr, user_agent)
    return results


_TARGET_OF = {"start": "RUNNING", "stop": "STOPPED", "pause": "PAUSED", "resume": "RUNNING"}


def _already_there(action: str, channels: list[Channel]) -> set[str]:
    """The channels ``action`` leaves as they are: already at its target state, and for a
    start with their latest revision deployed and nothing FAILED to start again."""
    target = _TARGET_OF.get(action)
    if target is None:  # restart and delete always act
        return set()
    at_target = [c for c in channels if c.target_state == target]
    if action != "start" or not at_target:
        return {c.name for c in at_target}
    latest = dict(
        Revision.objects.filter(channel__in=at_target)
        .values("channel_id")
        .annotate(number=Max("number"))
        .values_list("channel_id", "number")
    )
    settled = set()
    for connector in Connector.objects.filter(channel__in=at_target).select_related(
        "revision", "channel"
    ):
        deployed = connector.revision.number if connector.revision is not None else None
        failed = connector.state == ConnectorState.FAILED
        if deployed == latest.get(connector.channel_id) and not failed and not connector.finished:
            settled.add(connector.channel.name)
    return settled


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
