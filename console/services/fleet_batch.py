"""Set-based bulk lifecycle: every action of ``POST /channels/bulk`` for many channels at once.

Each function here makes, for a list of channels, exactly the decisions the single-channel
service of :mod:`console.services.channels` makes for one (the same refusals, target
changes, placements, lifecycle events with the same reasons, connector and task writes
and runtime calls, channel after channel in the request's order), but writes them
set-based: the channels locked with one ``SELECT … FOR UPDATE``, one ``UPDATE`` per kind of
change, the lifecycle events in one insert, and one runtime call per kind of call (the
runtime's ``*_many`` methods when it has them, one call per connector otherwise). All of
it happens in one transaction with the runtime called last: when the runtime cannot be
reached nothing is saved and every channel the runtime was needed for is answered 503,
as its own endpoint would have been.

``tests/unit/console/test_bulk_equivalence.py`` runs the same requests through these
functions and through the single services one channel at a time and compares the results,
the database and the runtime.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import cast

from django.contrib.auth.models import User
from django.db import transaction
from django.db.models import Count, Q
from django.utils import timezone

from console.choices import (
    HOSTED_TARGETS,
    ConnectorState,
    SubjectType,
    TargetState,
    WorkerService,
    WorkerState,
)
from console.crypto import decrypt_spec, plain_secret_values
from console.errors import RuntimeUnavailable, runtime_errors
from console.models import (
    Channel,
    ChannelDiscovery,
    ChannelRun,
    Connector,
    LifecycleEvent,
    Revision,
    Task,
    Worker,
)
from console.runtime import get_runtime
from console.services import channel_health
from console.services.bulk import update_rows
from console.services.deployments import channel_deployment
from console.services.ingest import HTTP_SOURCE, ensure_ingest_topic
from console.services.lifecycle import actor_for, lifecycle_event
from runtime_adapter import states as runtime_states
from runtime_adapter.base import Deployment

logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class Answer:
    """One channel's outcome: the HTTP status its own endpoint would have answered."""

    status: int
    error: str = ""
    target_state: str | None = None


@dataclass
class _Batch:
    """What a bulk action decided, written at the end in a few statements."""

    actor: str
    now: datetime = field(default_factory=timezone.now)
    events: list[LifecycleEvent] = field(default_factory=list)
    secrets: dict[int, list[str]] = field(default_factory=dict)
    targets: dict[str, list[int]] = field(default_factory=dict)
    """New target → the channels that take it."""

    def retarget(self, channel: Channel, target: str, reason: str) -> bool:
        """As ``channels._set_target``: a new target and its event; the same one is a no-op."""
        previous = channel.target_state
        if previous == target:
            return False
        channel.target_state = target
        self.targets.setdefault(target, []).append(channel.pk)
        self.channel_event(channel, previous, target, reason)
        return True

    def channel_event(self, channel: Channel, from_state: str, to_state: str, reason: str) -> None:
        """As ``record_channel``: the secrets of the channel's newest revision masked."""
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
        """As ``channels._record_connector`` (which masks nothing)."""
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


# -- the actions ---------------------------------------------------------------------------------


def stop(channels: Sequence[Channel], user: User | None) -> dict[str, Answer]:
    """As :func:`~console.services.channels.stop_channel` for each of ``channels``."""
    return _retarget(
        channels,
        user,
        TargetState.STOPPED,
        "stop requested",
        refusal=None,
        reset_attempts=True,
    )


def pause(channels: Sequence[Channel], user: User | None) -> dict[str, Answer]:
    """As :func:`~console.services.channels.pause_channel` for each of ``channels``."""
    return _retarget(
        channels,
        user,
        TargetState.PAUSED,
        "pause requested",
        refusal="is STOPPED: there is no driver to pause; start it first",
    )


def resume(channels: Sequence[Channel], user: User | None) -> dict[str, Answer]:
    """As :func:`~console.services.channels.resume_channel` for each of ``channels``."""
    return _retarget(
        channels,
        user,
        TargetState.RUNNING,
        "resume requested",
        refusal="is STOPPED, not PAUSED: start it instead",
    )


def _retarget(
    channels: Sequence[Channel],
    user: User | None,
    target: TargetState,
    reason: str,
    *,
    refusal: str | None,
    reset_attempts: bool = False,
) -> dict[str, Answer]:
    answers: dict[str, Answer] = {}

    def act(locked: list[Channel]) -> None:
        batch = _Batch(actor_for(user))
        batch.secrets = _secrets_of(channel.pk for channel in locked)
        acting = []
        for channel in locked:
            if refusal is not None and channel.target_state == TargetState.STOPPED:
                answers[channel.name] = Answer(409, f"channel {channel.name!r} {refusal}")
                continue
            batch.retarget(channel, target, reason)
            acting.append(channel)
            answers[channel.name] = Answer(202, target_state=str(target))
        batch.save()
        connectors = Connector.objects.filter(channel__in=acting)
        if reset_attempts:
            connectors.update(restart_attempts=0)
        runtime_ids = list(connectors.order_by("runtime_id").values_list("runtime_id", flat=True))
        channel_health.refresh([channel.pk for channel in acting])
        set_targets(runtime_ids, runtime_states.TargetState(str(target)))

    # A channel never deployed needs no runtime call: with the runtime down it still changes,
    # as its own endpoint would; the others are undone together.
    deployed, never = _split_deployed(channels)
    _in_one_transaction(deployed, act, answers)
    return _in_one_transaction(never, act, answers)


def start(channels: Sequence[Channel], user: User | None) -> dict[str, Answer]:
    """As :func:`~console.services.channels.start_channel` for each of ``channels``, in
    their order (each placement sees the ones before it, as one-by-one starts would)."""
    answers: dict[str, Answer] = {}

    def act(locked: list[Channel]) -> None:
        batch = _Batch(actor_for(user))
        ids = [channel.pk for channel in locked]
        latest = _latest_revisions(ids)
        batch.secrets = {pk: plain_secret_values(revision.spec) for pk, revision in latest.items()}
        discovering = set(
            ChannelDiscovery.objects.filter(channel_id__in=ids, enabled=True).values_list(
                "channel_id", flat=True
            )
        )
        connectors = {
            connector.channel_id: connector
            for connector in Connector.objects.filter(channel_id__in=ids).select_related(
                "revision", "worker"
            )
        }
        placer = _Placer()
        created: list[Connector] = []
        new_revision: list[Connector] = []
        placed: list[Connector] = []
        deployments: list[Deployment] = []
        reruns: list[tuple[Channel, Connector, bool]] = []
        for channel in locked:
            revision = latest[channel.pk]
            connector = connectors.get(channel.pk)
            if revision.spec["source"]["type"] == HTTP_SOURCE:
                # As the single start: no topic (Kafka down), no start for this channel.
                try:
                    ensure_ingest_topic(channel.name, decrypt_spec(revision.spec))
                except RuntimeUnavailable as exc:
                    answers[channel.name] = Answer(503, str(exc) or "The runtime is unavailable.")
                    continue
            was_hosted = channel.target_state in HOSTED_TARGETS
            is_new = connector is None
            if connector is None:
                connector = Connector(
                    channel=channel,
                    runtime_id=channel.name,
                    revision=revision,
                    state=ConnectorState.UNASSIGNED,
                    state_changed_at=batch.now,
                )
                created.append(connector)
            previous_revision = connector.revision
            if previous_revision != revision:
                connector.revision = revision
                new_revision.append(connector)
            if batch.retarget(
                channel, TargetState.RUNNING, f"start requested (revision {revision.number})"
            ):
                if not was_hosted:
                    placer.now_hosted(connector.worker_id)
            elif previous_revision != revision:
                was = previous_revision.number if previous_revision else "none"
                batch.channel_event(
                    channel,
                    channel.target_state,
                    channel.target_state,
                    f"deploying revision {revision.number} (was {was})",
                )
            worker = connector.worker
            if (
                worker is None
                or worker.state != WorkerState.ALIVE
                or not (worker.in_service or was_hosted)
            ):
                worker = placer.place(batch, channel, connector)
                if worker is not None and not is_new:
                    placed.append(connector)
            deployments.append(
                channel_deployment(
                    channel,
                    connector,
                    revision,
                    target=TargetState.RUNNING,
                    worker_id=(
                        worker.worker_id if worker and worker.state == WorkerState.ALIVE else None
                    ),
                    discovery=channel.pk in discovering,
                )
            )
            answers[channel.name] = Answer(202, target_state=str(TargetState.RUNNING))
            if connector.state == ConnectorState.FAILED or connector.finished:
                reruns.append((channel, connector, connector.state != ConnectorState.FAILED))
        # The runtime first here: a rerun's event names the generation it answers (the
        # single start records it after its runtime calls too); any outage undoes it all.
        deploy_all(deployments)
        generations = restart_all([connector.runtime_id for _, connector, _ in reruns])
        for channel, connector, rerun in reruns:
            connector.generation = generations[connector.runtime_id]
            connector.restart_attempts = 0
            connector.finished = False
            what = "the finished available-now run again" if rerun else "the failed connector"
            # Events are read newest first by (time, id): inserted after the channel's others.
            batch.channel_event(
                channel,
                channel.target_state,
                channel.target_state,
                f"restarting {what} (generation {connector.generation})",
            )
        Connector.objects.bulk_create(created, batch_size=500)
        update_rows(Connector, new_revision, ["revision"])
        update_rows(Connector, placed, ["worker"])
        rerun_connectors = [connector for _, connector, _ in reruns]
        update_rows(Connector, rerun_connectors, ["generation", "restart_attempts", "finished"])
        batch.save()
        channel_health.refresh(ids)

    return _in_one_transaction(channels, act, answers)


def restart(channels: Sequence[Channel], user: User | None) -> dict[str, Answer]:
    """As :func:`~console.services.channels.restart_channel` (no KIP-745 parameters: the
    connector restarts, its tasks with it) for each of ``channels``."""
    answers: dict[str, Answer] = {}
    asked = "include_tasks=false, only_failed=false"

    def act(locked: list[Channel]) -> None:
        batch = _Batch(actor_for(user))
        batch.secrets = _secrets_of(channel.pk for channel in locked)
        counted = list(
            Connector.objects.filter(channel__in=locked).annotate(task_count=Count("tasks"))
        )
        connectors: dict[int, Connector] = {found.channel_id: found for found in counted}
        task_counts: dict[int, int] = {found.pk: found.task_count for found in counted}
        acting: list[tuple[Channel, Connector]] = []
        for channel in locked:
            connector = connectors.get(channel.pk)
            if connector is None:
                refusal = "was never started: there is nothing to restart"
            elif channel.target_state == TargetState.STOPPED:
                refusal = "is STOPPED: there is no driver to restart; start it instead"
            else:
                acting.append((channel, connector))
                answers[channel.name] = Answer(202)
                continue
            answers[channel.name] = Answer(409, f"channel {channel.name!r} {refusal}")
        generations = restart_all([connector.runtime_id for _, connector in acting])
        for channel, connector in acting:
            generation = generations[connector.runtime_id]
            reason = (
                f"restart requested ({asked}): the connector asked for; restarting the driver "
                f"and its {task_counts[connector.pk]} task(s) (generation {generation})"
            )
            batch.connector_event(channel, connector, ConnectorState.RESTARTING, reason)
            connector.generation = generation
            connector.state = ConnectorState.RESTARTING
            connector.state_changed_at = batch.now
            connector.status_deadline_at = None  # the console's state, not a report
            connector.restart_attempts = 0
        batch.save()
        restarted = [connector for _, connector in acting]
        update_rows(
            Connector,
            restarted,
            ["generation", "state", "state_changed_at", "status_deadline_at", "restart_attempts"],
        )
        Task.objects.filter(connector__in=restarted).update(state=ConnectorState.RESTARTING)
        channel_health.refresh([channel.pk for channel, _ in acting])

    return _in_one_transaction(channels, act, answers)


def delete(channels: Sequence[Channel], user: User | None) -> dict[str, Answer]:
    """As :func:`~console.services.channels.delete_channel` for each of ``channels``.

    A channel with a connector (or runs) needs the runtime: with the runtime down it stays
    (503). One never deployed is deleted all the same, its runtime leftovers (offsets set
    for a first start) forgotten on a best-effort basis, as the single delete does.
    """
    answers: dict[str, Answer] = {}

    def act(locked: list[Channel], *, best_effort: bool) -> None:
        batch = _Batch(actor_for(user))
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
        pks = [channel.pk for channel in locked]
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
            delete_all([*runs, *(connectors[pk] for pk in pks if pk in connectors)])
            return
        names = [channel.name for channel in locked]
        try:  # offsets set for their first start wait in the runtime
            delete_all(names)
        except RuntimeUnavailable as exc:
            logger.warning(
                "runtime unreachable; %d deleted channels may leave offsets: %s", len(names), exc
            )

    needing, never = _split_deployed(channels, runs=True)
    _in_one_transaction(needing, lambda locked: act(locked, best_effort=False), answers)
    return _in_one_transaction(never, lambda locked: act(locked, best_effort=True), answers)


ACTIONS: dict[str, Callable[[Sequence[Channel], User | None], dict[str, Answer]]] = {
    "start": start,
    "stop": stop,
    "pause": pause,
    "resume": resume,
    "restart": restart,
    "delete": delete,
}


# -- shared steps --------------------------------------------------------------------------------


def _in_one_transaction(
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
                .only("id", "name", "target_state", "checkpoint_key"),
                key=lambda channel: order[channel.pk],
            )
            act(locked)
    except RuntimeUnavailable as exc:
        reason = str(exc) or "The runtime is unavailable."
        for name, answer in list(answers.items()):
            if answer.status < 300:
                answers[name] = Answer(503, reason)
    for channel in channels:
        answers.setdefault(channel.name, Answer(404, "No channel has this name."))
    return answers


def _split_deployed(
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


class _Placer:
    """``channels._place_now`` for a sequence of starts: the least loaded live worker in
    service, its load counted once and then kept up to date as each start changes it."""

    def __init__(self) -> None:
        live = Worker.objects.filter(
            state=WorkerState.ALIVE, service=WorkerService.IN_SERVICE
        ).annotate(
            hosting=Count(
                "connectors", filter=Q(connectors__channel__target_state__in=HOSTED_TARGETS)
            )
        )
        self.workers = {worker.worker_id: worker for worker in live}
        self.load: dict[str, int] = {
            worker.worker_id: worker.hosting for worker in self.workers.values()
        }

    def now_hosted(self, worker_id: str | None) -> None:
        """A channel on ``worker_id`` just became hosted (RUNNING or PAUSED)."""
        if worker_id in self.load:
            self.load[worker_id] += 1

    def place(self, batch: _Batch, channel: Channel, connector: Connector) -> Worker | None:
        if not self.workers or get_runtime().places:
            # No worker alive: reconcile places it when one is. The runtime places: its
            # group runs it on the owner of its slot, and reconcile follows.
            return None
        chosen = min(self.workers.values(), key=lambda w: (self.load[w.worker_id], w.worker_id))
        hosting = self.load[chosen.worker_id]
        connector.worker = chosen
        self.load[chosen.worker_id] += 1
        batch.connector_event(
            channel,
            connector,
            ConnectorState.UNASSIGNED,
            f"assigned to worker {chosen.worker_id} (least loaded, hosting {hosting})",
        )
        return chosen


def _latest_revisions(channel_ids: Iterable[int]) -> dict[int, Revision]:
    """Each channel's newest revision (every channel has revision 1), in one query."""
    latest: dict[int, Revision] = {}
    for revision in Revision.objects.filter(channel_id__in=list(channel_ids)).order_by(
        "channel_id", "number"
    ):
        latest[revision.channel_id] = revision
    return latest


def _secrets_of(channel_ids: Iterable[int]) -> dict[int, list[str]]:
    """The plaintext secrets of each channel's newest revision (masked in event reasons, as
    ``record_channel`` masks them)."""
    return {
        pk: plain_secret_values(revision.spec)
        for pk, revision in _latest_revisions(channel_ids).items()
    }


# -- runtime calls: the runtime's batch methods when it has them -------------------------------


def set_targets(runtime_ids: list[str], target: runtime_states.TargetState) -> None:
    runtime = get_runtime()
    with runtime_errors("set_target_state"):
        many = getattr(runtime, "set_target_states", None)
        if many is not None:
            many(runtime_ids, target)
        else:
            for runtime_id in runtime_ids:
                runtime.set_target_state(runtime_id, target)


def deploy_all(deployments: list[Deployment]) -> None:
    runtime = get_runtime()
    with runtime_errors("deploy"):
        many = getattr(runtime, "deploy_many", None)
        if many is not None:
            many(deployments)
        else:
            for deployment in deployments:
                runtime.deploy(deployment)


def restart_all(runtime_ids: list[str]) -> Mapping[str, int]:
    runtime = get_runtime()
    with runtime_errors("restart"):
        many = getattr(runtime, "restart_many", None)
        if many is not None:
            return cast(Mapping[str, int], many(runtime_ids))
        return {runtime_id: runtime.restart(runtime_id) for runtime_id in runtime_ids}


def delete_all(runtime_ids: list[str]) -> None:
    runtime = get_runtime()
    with runtime_errors("delete"):
        many = getattr(runtime, "delete_many", None)
        if many is not None:
            many(runtime_ids)
        else:
            for runtime_id in runtime_ids:
                runtime.delete(runtime_id)
