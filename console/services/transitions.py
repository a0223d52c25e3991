"""The lifecycle actions, each decided once over a list of channels.

Start (:mod:`.starts`), restart (:mod:`.restarts`), stop, pause, resume and delete (here) are
decided for a list of channels. The single-channel services of
:mod:`console.services.channels` are the list of one and a bulk request
(:mod:`console.services.fleet`) is the list of many, so a channel ends the same whichever way
it was asked (NetBox's bulk edit: one path for one object and for many).

Each action locks its channels with one ``SELECT … FOR UPDATE``
(:func:`in_one_transaction`) and decides channel after channel in the list's order (the
refusals, target changes, placements and lifecycle events with their reasons; each placement
sees the ones before it), then writes what it decided set-based (:class:`Batch`): one
``UPDATE`` per kind of change, the lifecycle events in one insert and one runtime call per
kind of call (the runtime's ``*_many`` methods). All of it happens in one transaction with
the runtime called last: when the runtime cannot be reached nothing is saved and every
channel the runtime was needed for is answered 503 (the single services raise
:class:`RuntimeUnavailable`).

``tests/unit/console/test_bulk_equivalence.py`` runs the same requests as one bulk request
and as one single-service call per channel and compares the results, the database and the
runtime.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from django.db import transaction
from django.utils import timezone

from console.choices import SubjectType, TargetState
from console.crypto import plain_secret_values
from console.errors import (
    InvalidTransition,
    RuntimeUnavailable,
    ServiceError,
    runtime_errors,
)
from console.models import Channel, ChannelRun, Connector, LifecycleEvent, Revision
from console.runtime import get_runtime
from console.services import channel_health
from console.services.ingest import HTTP_SOURCE, IngestUnavailable, drop_ingest_topic
from console.services.lifecycle import lifecycle_event
from runtime_adapter import states as runtime_states
from runtime_adapter.base import Deployment

logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class Answer:
    """One channel's outcome: the HTTP status its own endpoint answers; for a success what
    the single service returns (``result``), for a refusal or an outage the error it raises
    (``failure``)."""

    status: int
    error: str = ""
    target_state: str | None = None
    result: Any = None
    failure: ServiceError | None = None


def refused(channel: Channel, why: str) -> Answer:
    message = f"channel {channel.name!r} {why}"
    return Answer(409, message, failure=InvalidTransition(message))


def unavailable(exc: RuntimeUnavailable) -> Answer:
    return Answer(503, str(exc) or "The runtime is unavailable.", failure=exc)


@dataclass
class Batch:
    """What an action decided, written at the end in a few statements."""

    actor: str
    now: datetime = field(default_factory=timezone.now)
    events: list[LifecycleEvent] = field(default_factory=list)
    secrets: dict[int, list[str]] = field(default_factory=dict)
    targets: dict[str, list[int]] = field(default_factory=dict)
    """New target → the channels that take it."""

    def retarget(self, channel: Channel, target: str, reason: str) -> bool:
        """A new target and its event; the same target again is a no-op (False)."""
        previous = channel.target_state
        if previous == target:
            return False
        channel.target_state = target
        self.targets.setdefault(target, []).append(channel.pk)
        self.channel_event(channel, previous, target, reason)
        return True

    def channel_event(self, channel: Channel, from_state: str, to_state: str, reason: str) -> None:
        """An event about the channel, the secrets of its newest revision masked."""
        self.events.append(
            lifecycle_event(
                channel=channel,
                subject_type=SubjectType.CHANNEL,
                subject_id=channel.name,
                from_state=from_state,
                to_state=to_state,
                reason=reason,
                actor=self.actor,
                at=self.now,
                secrets=self.secrets.get(channel.pk, ()),
            )
        )

    def connector_event(
        self, channel: Channel, connector: Connector, to_state: str, reason: str
    ) -> None:
        """An event about the channel's connector (its reasons carry no secret)."""
        self.events.append(
            lifecycle_event(
                channel=channel,
                subject_type=SubjectType.CONNECTOR,
                subject_id=connector.runtime_id,
                from_state=connector.state,
                to_state=to_state,
                reason=reason,
                actor=self.actor,
                at=self.now,
            )
        )

    def save(self) -> None:
        for target, ids in self.targets.items():
            Channel.objects.filter(pk__in=ids).update(target_state=target, updated=self.now)
        LifecycleEvent.objects.bulk_create(self.events, batch_size=500)


# -- stop, pause, resume -------------------------------------------------------------------------


def stop(channels: Sequence[Channel], actor: str) -> dict[str, Answer]:
    """Target STOPPED: the runtime releases the driver and keeps the checkpoint; the restart
    policy's count starts again. Answers the locked channel."""
    return _retarget(
        channels, actor, TargetState.STOPPED, "stop requested", refusal=None, reset_attempts=True
    )


def pause(channels: Sequence[Channel], actor: str) -> dict[str, Answer]:
    """Target PAUSED: the driver stays up (JVM, SparkSession) with its query stopped, so a
    resume is quick. A STOPPED channel is refused (409): there is no driver to keep warm."""
    refusal = "is STOPPED: there is no driver to pause; start it first"
    return _retarget(channels, actor, TargetState.PAUSED, "pause requested", refusal=refusal)


def resume(channels: Sequence[Channel], actor: str) -> dict[str, Answer]:
    """Target back to RUNNING with the revision already deployed (a start deploys the latest
    one). A STOPPED channel is refused (409): start it instead."""
    refusal = "is STOPPED, not PAUSED: start it instead"
    return _retarget(channels, actor, TargetState.RUNNING, "resume requested", refusal=refusal)


def _retarget(
    channels: Sequence[Channel],
    actor: str,
    target: TargetState,
    reason: str,
    *,
    refusal: str | None,
    reset_attempts: bool = False,
) -> dict[str, Answer]:
    answers: dict[str, Answer] = {}

    def act(locked: list[Channel]) -> None:
        batch = Batch(actor, secrets=secrets_of(channel.pk for channel in locked))
        acting = []
        for channel in locked:
            if refusal is not None and channel.target_state == TargetState.STOPPED:
                answers[channel.name] = refused(channel, refusal)
                continue
            batch.retarget(channel, target, reason)
            acting.append(channel)
            answers[channel.name] = Answer(202, target_state=str(target), result=channel)
        batch.save()
        connectors = Connector.objects.filter(channel__in=acting)
        if reset_attempts:
            connectors.update(restart_attempts=0)
        runtime_ids = list(connectors.order_by("runtime_id").values_list("runtime_id", flat=True))
        channel_health.refresh([channel.pk for channel in acting])
        set_target_states(runtime_ids, runtime_states.TargetState(str(target)))

    # A channel never deployed needs no runtime call: with the runtime down it still changes,
    # the others are undone together.
    deployed, never = split_deployed(channels)
    in_one_transaction(deployed, act, answers)
    return in_one_transaction(never, act, answers)


# -- delete --------------------------------------------------------------------------------------


def delete(channels: Sequence[Channel], actor: str) -> dict[str, Answer]:
    """Delete each channel, its revisions, connector and runs, and tell the runtime to forget
    them (it removes their checkpoints where it can reach them, so a channel created later
    under the same name starts afresh); lifecycle events are kept (``channel`` unset).

    A channel with a connector (or runs) needs the runtime: with the runtime down it stays
    (503). One never deployed is deleted all the same, its runtime leftovers (offsets set
    for a first start) forgotten on a best-effort basis. An HTTP channel's ingest topic goes
    with it (best effort: a new channel of its name deletes it when created)."""
    answers: dict[str, Answer] = {}
    http: list[str] = []
    needing, never = split_deployed(channels, runs=True)
    in_one_transaction(
        needing, lambda locked: _delete_locked(locked, actor, answers, http, False), answers
    )
    in_one_transaction(
        never, lambda locked: _delete_locked(locked, actor, answers, http, True), answers
    )
    for name in http:
        if answers[name].status < 300:
            _drop_ingest_topic(name)
    return answers


def _delete_locked(
    locked: list[Channel],
    actor: str,
    answers: dict[str, Answer],
    http: list[str],
    best_effort: bool,
) -> None:
    """Delete ``locked`` with their connectors and runs, the runtime told to forget them
    (``best_effort``: channels never deployed, whose runtime leftovers may stay)."""
    batch = Batch(actor)
    pks = [channel.pk for channel in locked]
    _note_deleted(batch, locked, answers, http)
    connectors = dict(
        Connector.objects.filter(channel_id__in=pks).values_list("channel_id", "runtime_id")
    )
    runs = list(
        ChannelRun.objects.filter(channel_id__in=pks)
        .exclude(runtime_id="")
        .order_by("channel_id", "runtime_id")
        .values_list("runtime_id", flat=True)
    )
    batch.save()
    Channel.objects.filter(pk__in=pks).delete()
    if not best_effort:
        delete_many([*runs, *(connectors[pk] for pk in pks if pk in connectors)])
        return
    try:  # offsets set for their first start wait in the runtime
        delete_many([channel.name for channel in locked])
    except RuntimeUnavailable as exc:
        logger.warning(
            "runtime unreachable; %d deleted channels may leave offsets: %s", len(pks), exc
        )


def _note_deleted(
    batch: Batch, locked: list[Channel], answers: dict[str, Answer], http: list[str]
) -> None:
    """A ``deleted`` event and a 204 for each of ``locked``; the HTTP ones noted in ``http``
    (their ingest topics go once the deletion is saved)."""
    latest = latest_revisions(channel.pk for channel in locked)
    for channel in locked:
        batch.events.append(
            lifecycle_event(
                channel=None,
                subject_type=SubjectType.CHANNEL,
                subject_id=channel.name,
                actor=batch.actor,
                from_state=channel.target_state,
                to_state="",
                reason="deleted",
                at=batch.now,
            )
        )
        answers[channel.name] = Answer(204)
        revision = latest.get(channel.pk)
        if revision is not None and revision.spec.get("source", {}).get("type") == HTTP_SOURCE:
            http.append(channel.name)


def _drop_ingest_topic(name: str) -> None:
    """A deleted HTTP channel's events go with it: a new channel of its name never reads them."""
    try:
        drop_ingest_topic(name)
    except IngestUnavailable as exc:
        logger.warning(
            "channel %s deleted; %s (a new channel of this name deletes it when created)",
            name,
            exc,
        )


# -- shared steps --------------------------------------------------------------------------------


def in_one_transaction(
    channels: Sequence[Channel],
    act: Callable[[list[Channel]], None],
    answers: dict[str, Answer],
) -> dict[str, Answer]:
    """Lock ``channels`` (in their order; one deleted meanwhile is a 404) and ``act`` on them
    in one transaction. When the runtime cannot be reached the transaction is undone: every
    channel ``act`` had answered with a success becomes a 503 (its refusals stand)."""
    if not channels:
        return answers
    order = {channel.pk: index for index, channel in enumerate(channels)}
    try:
        with transaction.atomic():
            locked = sorted(
                Channel.objects.select_for_update()
                .filter(pk__in=list(order))
                .only("id", "name", "target_state", "checkpoint_key", "team_id", "realtime_cores"),
                key=lambda channel: order[channel.pk],
            )
            act(locked)
    except RuntimeUnavailable as exc:
        for name, answer in list(answers.items()):
            if answer.status < 300:
                answers[name] = unavailable(exc)
    for channel in channels:
        answers.setdefault(channel.name, Answer(404, "No channel has this name."))
    return answers


def split_deployed(
    channels: Sequence[Channel], *, runs: bool = False
) -> tuple[list[Channel], list[Channel]]:
    """``channels`` with a connector (or, with ``runs``, a run's connector), and the others."""
    ids = [channel.pk for channel in channels]
    deployed = set(
        Connector.objects.filter(channel_id__in=ids).values_list("channel_id", flat=True)
    )
    if runs:
        deployed |= set(
            ChannelRun.objects.filter(channel_id__in=ids)
            .exclude(runtime_id="")
            .values_list("channel_id", flat=True)
        )
    return (
        [channel for channel in channels if channel.pk in deployed],
        [channel for channel in channels if channel.pk not in deployed],
    )


def latest_revisions(channel_ids: Iterable[int]) -> dict[int, Revision]:
    """Each channel's newest revision (every channel has revision 1), in one query."""
    latest: dict[int, Revision] = {}
    for revision in Revision.objects.filter(channel_id__in=list(channel_ids)).order_by(
        "channel_id", "number"
    ):
        latest[revision.channel_id] = revision
    return latest


def secrets_of(channel_ids: Iterable[int]) -> dict[int, list[str]]:
    """The plaintext secrets of each channel's newest revision (masked in event reasons)."""
    return {
        pk: plain_secret_values(revision.spec)
        for pk, revision in latest_revisions(channel_ids).items()
    }


# -- runtime calls: one per kind of call, none for an empty list ------------------------------


def set_target_states(runtime_ids: list[str], target: runtime_states.TargetState) -> None:
    if runtime_ids:
        with runtime_errors("set_target_state"):
            get_runtime().set_target_states(runtime_ids, target)


def deploy_many(deployments: list[Deployment]) -> None:
    if deployments:
        with runtime_errors("deploy"):
            get_runtime().deploy_many(deployments)


def restart_many(runtime_ids: list[str]) -> dict[str, int]:
    if not runtime_ids:
        return {}
    with runtime_errors("restart"):
        return get_runtime().restart_many(runtime_ids)


def delete_many(runtime_ids: list[str]) -> None:
    if runtime_ids:
        with runtime_errors("delete"):
            get_runtime().delete_many(runtime_ids)
