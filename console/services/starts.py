"""Starting channels: each one's latest revision deployed, decided once over a list.

A start of one channel (:func:`console.services.channels.start_channel`), of a new channel
(:func:`~console.services.channels.create_channel`), a deploy
(:func:`~console.services.channels.deploy_channel`) and a bulk start all run
:func:`deploy_locked` (see :mod:`console.services.transitions` for the shape all actions share).
"""

from __future__ import annotations

from collections.abc import Container, Sequence
from dataclasses import dataclass, field

from django.db.models import Count, Q

from console.choices import HOSTED_TARGETS, ConnectorState, TargetState, WorkerService, WorkerState
from console.crypto import decrypt_spec, plain_secret_values
from console.errors import InvalidTransition, QuotaExceeded, RuntimeUnavailable
from console.models import Channel, ChannelDiscovery, Connector, Revision, Worker
from console.runtime import get_runtime
from console.services import channel_health
from console.services.bulk import update_rows
from console.services.deployments import deployment_for
from console.services.ingest import HTTP_SOURCE, ensure_ingest_topic
from console.services.quotas import Allowance
from console.services.transitions import (
    Answer,
    Batch,
    deploy_many,
    in_one_transaction,
    latest_revisions,
    restart_many,
    unavailable,
)
from runtime_adapter.base import Deployment


def start(channels: Sequence[Channel], actor: str) -> dict[str, Answer]:
    """Deploy each channel's latest revision with target RUNNING; answers its connector.

    Creates the connector on a first start. The deployment names the connector's worker when
    it may host it, else the least loaded live worker in service (none alive: the control
    loop places it later). Starting a running channel whose latest revision is deployed
    changes nothing. A FAILED connector restarts (a new generation, the restart policy's
    count reset); so does one whose available-now run finished (it reads on from its
    checkpoint)."""
    answers: dict[str, Answer] = {}
    return in_one_transaction(
        channels, lambda locked: deploy_locked(locked, TargetState.RUNNING, actor, answers), answers
    )


@dataclass
class _Deploys:
    """What deploying a list of channels reads once, then decides channel by channel."""

    batch: Batch
    target: TargetState
    latest: dict[int, Revision]
    connectors: dict[int, Connector]
    discovering: set[int]
    placer: _Placer
    allowance: Allowance
    created: list[Connector] = field(default_factory=list)
    new_revision: list[Connector] = field(default_factory=list)
    placed: list[Connector] = field(default_factory=list)
    deployments: list[Deployment] = field(default_factory=list)
    reruns: list[tuple[Channel, Connector, bool]] = field(default_factory=list)


def deploy_locked(
    locked: list[Channel], target: TargetState, actor: str, answers: dict[str, Answer]
) -> None:
    """Deploy the latest revision of each of ``locked`` (channels the caller's transaction
    holds) with ``target`` (RUNNING or PAUSED), in their order, answering each in ``answers``.

    A channel its team's quotas leave no room for (:mod:`console.services.quotas`: running
    channels, real-time cores) is answered 429 and left as it was; the channels before it in
    the list take their places first. An HTTP channel whose ingest topic cannot be ensured is
    answered 503 and left as it was.
    Raises :class:`RuntimeUnavailable` when the runtime cannot be reached (the caller's
    transaction is then to be undone)."""
    ids = [channel.pk for channel in locked]
    latest = latest_revisions(ids)
    deploys = _Deploys(
        batch=Batch(actor, secrets={pk: plain_secret_values(r.spec) for pk, r in latest.items()}),
        target=target,
        latest=latest,
        connectors={
            connector.channel_id: connector
            for connector in Connector.objects.filter(channel_id__in=ids).select_related(
                "revision", "worker"
            )
        },
        discovering=set(
            ChannelDiscovery.objects.filter(channel_id__in=ids, enabled=True).values_list(
                "channel_id", flat=True
            )
        ),
        placer=_Placer(),
        allowance=Allowance.lock(channel.team_id for channel in locked),
    )
    for channel in locked:
        _decide_deploy(deploys, channel, answers)
    _write_deploys(deploys, ids)


def _decide_deploy(deploys: _Deploys, channel: Channel, answers: dict[str, Answer]) -> None:
    """One channel's deploy: its connector, target, placement and deployment decided."""
    revision = deploys.latest[channel.pk]
    was_hosted = channel.target_state in HOSTED_TARGETS
    current = deploys.connectors.get(channel.pk)
    try:
        deploys.allowance.admit(
            channel,
            revision,
            was_hosted=was_hosted,
            new_revision=current is None or current.revision_id != revision.pk,
        )
    except QuotaExceeded as exc:
        answers[channel.name] = Answer(429, str(exc), failure=exc)
        return
    except InvalidTransition as exc:  # real-time cores that cannot be counted
        answers[channel.name] = Answer(409, str(exc), failure=exc)
        return
    except RuntimeUnavailable as exc:  # Kafka asked for real-time cores and did not answer
        answers[channel.name] = unavailable(exc)
        return
    if revision.spec["source"]["type"] == HTTP_SOURCE:
        try:  # no topic (Kafka down), no deploy: the query would have nothing to read
            ensure_ingest_topic(channel.name, decrypt_spec(revision.spec))
        except RuntimeUnavailable as exc:
            answers[channel.name] = unavailable(exc)
            return
    connector, previous, is_new = _connector_running(deploys, channel, revision)
    verb = "start" if deploys.target == TargetState.RUNNING else "pause"
    if deploys.batch.retarget(
        channel, deploys.target, f"{verb} requested (revision {revision.number})"
    ):
        if not was_hosted:
            deploys.placer.now_hosted(connector.worker_id)
    elif previous != revision:
        was = previous.number if previous else "none"
        deploys.batch.channel_event(
            channel,
            channel.target_state,
            channel.target_state,
            f"deploying revision {revision.number} (was {was})",
        )
    live = _place(deploys, channel, connector, was_hosted=was_hosted, is_new=is_new)
    deploys.deployments.append(
        deployment_for(
            channel,
            connector,
            revision,
            target=deploys.target,
            discovery=channel.pk in deploys.discovering,
            live=live,
        )
    )
    answers[channel.name] = Answer(202, target_state=str(deploys.target), result=connector)
    if connector.state == ConnectorState.FAILED or connector.finished:
        deploys.reruns.append((channel, connector, connector.state != ConnectorState.FAILED))


def _connector_running(
    deploys: _Deploys, channel: Channel, revision: Revision
) -> tuple[Connector, Revision | None, bool]:
    """The channel's connector set to run ``revision`` (created on a first start), the
    revision it ran before and whether it is new."""
    connector = deploys.connectors.get(channel.pk)
    is_new = connector is None
    if connector is None:
        connector = Connector(
            channel=channel,
            runtime_id=channel.name,
            revision=revision,
            state=ConnectorState.UNASSIGNED,
            state_changed_at=deploys.batch.now,
        )
        deploys.created.append(connector)
    previous = connector.revision
    if previous != revision:
        connector.revision = revision
        deploys.new_revision.append(connector)
    return connector, previous, is_new


def _place(
    deploys: _Deploys, channel: Channel, connector: Connector, *, was_hosted: bool, is_new: bool
) -> Container[str] | None:
    """Place the connector when its worker cannot host it (dead, or draining and not already
    hosting it: a channel running on a draining worker stays, the control loop hands it
    over). Returns what :func:`deployment_for` is to take as live: ``()`` when the connector
    needed a worker and got none (the deployment then names none), else ``None``."""
    worker = connector.worker
    if (
        worker is not None
        and worker.state == WorkerState.ALIVE
        and (worker.in_service or was_hosted)
    ):
        return None
    chosen = deploys.placer.place(deploys.batch, channel, connector)
    if chosen is None:
        return ()
    if not is_new:
        deploys.placed.append(connector)
    return None


def _write_deploys(deploys: _Deploys, ids: list[int]) -> None:
    """The runtime first (a rerun's event names the generation it answers; an outage undoes
    it all), then the connectors, targets and events, set-based."""
    deploy_many(deploys.deployments)
    generations = restart_many([connector.runtime_id for _, connector, _ in deploys.reruns])
    for channel, connector, rerun in deploys.reruns:
        connector.generation = generations[connector.runtime_id]
        connector.restart_attempts = 0
        connector.finished = False
        what = "the finished available-now run again" if rerun else "the failed connector"
        deploys.batch.channel_event(
            channel,
            channel.target_state,
            channel.target_state,
            f"restarting {what} (generation {connector.generation})",
        )
    Connector.objects.bulk_create(deploys.created, batch_size=500)
    deploys.allowance.save()
    update_rows(Connector, deploys.new_revision, ["revision"])
    update_rows(Connector, deploys.placed, ["worker"])
    reruns = [connector for _, connector, _ in deploys.reruns]
    update_rows(Connector, reruns, ["generation", "restart_attempts", "finished"])
    deploys.batch.save()
    channel_health.refresh(ids)


class _Placer:
    """The least loaded live worker in service for each connector placed, its load counted
    once and then kept up to date as each start changes it (as one start after another
    would count it)."""

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

    def place(self, batch: Batch, channel: Channel, connector: Connector) -> Worker | None:
        if not self.workers or get_runtime().places:
            # No worker alive: the control loop places it when one is. The runtime places:
            # its group runs it on the owner of its slot, and the control loop follows.
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
