"""Bulk lifecycle: one request, many channels, one result per channel.

:func:`bulk_lifecycle` applies a lifecycle action (start, stop, pause, resume, restart,
delete) to many channels through the one lifecycle path (:mod:`console.services.transitions`),
whose single-channel services are the list of one: the same rules and refusals, lifecycle
events, connector writes and runtime calls, in one transaction with a few statements and
one runtime call per kind of call, whatever the number of channels. A channel that cannot
(409: a channel cannot be paused from STOPPED, 404: no such channel) is reported with the
reason and the others go on; when the runtime cannot be reached nothing is saved and the
channels that needed it are answered 503, as their own endpoints would have been. The audit
trail gets one row per channel (``channel.<action>``, ``via`` ``bulk``), written together at
the end.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Iterable, Sequence
from dataclasses import dataclass

from django.contrib.auth.models import User
from django.db.models import Max

from console.choices import ConnectorState
from console.models import AuditEvent, Channel, Connector, Revision
from console.services import restarts, starts, transitions
from console.services.lifecycle import actor_for
from console.services.transitions import Answer

_ACTIONS: dict[str, Callable[[Sequence[Channel], str], dict[str, Answer]]] = {
    "start": starts.start,
    "stop": transitions.stop,
    "pause": transitions.pause,
    "resume": transitions.resume,
    "restart": restarts.restart,
    "delete": transitions.delete,
}
ACTIONS = tuple(_ACTIONS)
#: The most channels one bulk request acts on.
MAX_BULK = 5000

_MISSING = Answer(404, "No channel has this name.")


@dataclass(frozen=True)
class BulkResult:
    name: str
    ok: bool
    status: int
    """The HTTP status the channel's own endpoint would have answered (202, 204, 404, 409,
    429 past a team quota, 503)."""
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
    teams: Collection[int] | None = None,
    refused: Callable[[Channel], str | None] | None = None,
    user: User | None = None,
    via: str = "bulk",
    remote_addr: str | None = None,
    user_agent: str = "",
) -> list[BulkResult]:
    """Apply ``action`` to each channel of ``names`` (in that order, each once); one
    :class:`BulkResult` per name, a missing channel included (404).

    Only channels of ``teams`` (ids; ``None``: every team) are found: another team's channel is
    missing (404) like one that does not exist. ``refused(channel)`` says why the caller may
    not act on a found channel (403 with that reason), or ``None``."""
    if action not in _ACTIONS:
        raise ValueError(f"unknown action {action!r}")
    candidates = Channel.objects.filter(name__in=list(names))
    if teams is not None:
        candidates = candidates.filter(team_id__in=list(teams))
    by_name = {
        channel.name: channel for channel in candidates.only("id", "name", "target_state", "team")
    }
    denied = {}
    if refused is not None:
        for name, channel in list(by_name.items()):
            reason = refused(channel)
            if reason is not None:
                denied[name] = Answer(403, reason)
                del by_name[name]
    ordered = list(dict.fromkeys(names))
    already = _already_there(action, list(by_name.values()))
    found = [by_name[name] for name in ordered if name in by_name]
    answers = {**_ACTIONS[action](found, actor_for(user)), **denied}
    results = []
    for name in ordered:
        answer = answers.get(name, _MISSING)
        ok = answer.status < 300
        results.append(
            BulkResult(
                name,
                ok,
                answer.status,
                answer.error,
                answer.target_state,
                changed=ok and name not in already,
            )
        )
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
