"""Channel operations: create, update, delete, start, stop, pause, resume and restart.

Target-state transitions (the user's wish; Kafka Connect's, observed state aside):

==============  ===========================================================================
operation       allowed from target
==============  ===========================================================================
start           any: deploys the latest revision with target RUNNING (restarts a FAILED
                connector, or one whose available-now run finished)
stop            any: target STOPPED, the driver is released, the checkpoint kept
pause           RUNNING or PAUSED: target PAUSED, the driver stays warm with its query
                stopped; from STOPPED it is an :class:`InvalidTransition`
resume          PAUSED or RUNNING: target RUNNING with the revision already deployed;
                from STOPPED it is an :class:`InvalidTransition` (start it instead)
restart         RUNNING or PAUSED, once started: replaces the driver (KIP-745 parameters)
==============  ===========================================================================

Asking for the target a channel already has changes nothing and records nothing.

Each function runs in one database transaction and calls the runtime last, inside
it: when the runtime cannot be reached the function raises
:class:`RuntimeUnavailable` and the database is left as it was. Runtime calls are
idempotent, so calling any of these twice is the same as calling it once.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, cast

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
from console.crypto import decrypt_spec, encrypt_spec
from console.errors import InvalidTransition, runtime_errors
from console.models import Channel, ChannelRun, Connector, Revision, Worker
from console.runtime import get_runtime
from console.selectors.deploys import DeployPlan, deploy_plan
from console.selectors.restart_policy import RestartPolicy
from console.selectors.specs import normalize_spec
from console.services import channel_health
from console.services.deployments import channel_deployment
from console.services.discovery import discovers
from console.services.ingest import (
    HTTP_SOURCE,
    IngestUnavailable,
    drop_ingest_topic,
    ensure_ingest_topic,
)
from console.services.lifecycle import actor_for, record, record_channel
from runtime_adapter import base as runtime_base
from runtime_adapter import states as runtime_states

logger = logging.getLogger(__name__)


UNCHANGED = object()
"""``update_channel(ingest_rate_limit=UNCHANGED)``: leave the limit as it is."""


def create_channel(
    *,
    name: str,
    spec: Mapping[str, Any],
    description: str = "",
    target_state: str = TargetState.STOPPED,
    restart_policy: Mapping[str, Any] | None = None,
    ingest_rate_limit: int | None = None,
    labels: Mapping[str, str] | None = None,
    user: User | None = None,
    actor: str | None = None,
) -> Channel:
    """Create a channel whose revision 1 is ``spec`` (normalised).

    ``target_state`` STOPPED (the default) only saves it; RUNNING or PAUSED also deploys
    revision 1 as :func:`start_channel` does (PAUSED: a warm driver, its query not started).
    ``restart_policy`` holds any of the :class:`RestartPolicy` keys; the others take their
    defaults. ``ingest_rate_limit`` (events/s accepted by HTTP ingestion) ``None``: the
    site default ``SLUICE_INGEST_RATE_LIMIT``. Raises :class:`InvalidSpec` for a bad spec
    (a secret sent as the marker included: there is nothing stored to keep),
    :class:`django.core.exceptions.ValidationError` for a bad or taken name, target, policy
    or rate limit, and :class:`RuntimeUnavailable` when the
    channel is to run and the runtime cannot be reached; in each case nothing is saved.
    """
    normalized = normalize_spec(spec)
    channel = Channel(
        name=name,
        description=description,
        created_by=user,
        target_state=target_state,
        ingest_rate_limit=ingest_rate_limit,
        labels=dict(labels or {}),
    )
    RestartPolicy().updated(restart_policy or {}).apply_to(channel)
    channel.full_clean()
    actor = actor or actor_for(user)
    with transaction.atomic():
        channel.save()
        Revision.objects.create(
            channel=channel, number=1, spec=encrypt_spec(normalized), created_by=user
        )
        record_channel(
            channel,
            actor,
            from_state="",
            to_state=channel.target_state,
            reason="created with revision 1",
        )
        if channel.target_state != TargetState.STOPPED:
            _deploy(channel, TargetState(channel.target_state), actor)
            _refresh_health(channel)
    _prepare_ingest_topic(channel.name, normalized, new=True)
    return channel


def update_channel(
    channel: Channel,
    *,
    spec: Mapping[str, Any] | None = None,
    description: str | None = None,
    restart_policy: Mapping[str, Any] | None = None,
    ingest_rate_limit: int | object | None = UNCHANGED,
    labels: Mapping[str, str] | None = None,
    user: User | None = None,
    actor: str | None = None,
) -> Channel:
    """Change the description, the spec, the restart policy, the labels (replaced whole)
    and/or the ingestion rate limit;
    ``None`` leaves each as it is (``UNCHANGED`` for the rate limit, where ``None`` means
    "the site default"), and ``restart_policy`` changes only the keys it holds.

    Secrets the new spec sends as the marker or leaves out keep their values from the latest
    revision (:func:`pipelines.spec.secrets.merge_secrets`). A new revision is saved only
    when the normalised spec differs from the latest one, so saving the same spec twice (or
    the redacted one read back) creates one revision. A running connector keeps its
    deployed revision until the channel is started again (status shows the drift). Raises
    :class:`InvalidSpec` or :class:`django.core.exceptions.ValidationError` (a bad policy);
    nothing is saved.
    """
    with transaction.atomic():
        channel = Channel.objects.select_for_update().get(pk=channel.pk)
        latest = channel.latest_revision_obj()
        # Compared in plaintext: encrypting twice gives different tokens for the same secret.
        stored = decrypt_spec(latest.spec) if latest else None
        normalized = None
        if spec is not None:
            normalized = normalize_spec(spec, stored=stored)
        changed = False

        def note(reason: str) -> None:
            """One lifecycle event for one kind of change (the target state stays)."""
            nonlocal changed
            record_channel(
                channel,
                actor or actor_for(user),
                from_state=channel.target_state,
                to_state=channel.target_state,
                reason=reason,
            )
            changed = True

        if description is not None and description != channel.description:
            channel.description = description
            changed = True
        policy = RestartPolicy.of(channel)
        new_policy = policy.updated(restart_policy or {})
        if new_policy != policy:
            new_policy.apply_to(channel)
            channel.full_clean(exclude=["name"], validate_unique=False)
            note(f"restart policy changed to {new_policy.describe()}")
        if ingest_rate_limit is not UNCHANGED and ingest_rate_limit != channel.ingest_rate_limit:
            # Not UNCHANGED, so an int or None (mypy cannot narrow a bare object() sentinel).
            new_limit = cast("int | None", ingest_rate_limit)
            previous = channel.ingest_rate_limit
            channel.ingest_rate_limit = new_limit
            channel.full_clean(exclude=["name"], validate_unique=False)
            note(f"ingestion rate limit changed from {_rate(previous)} to {_rate(new_limit)}")
        if labels is not None and dict(labels) != channel.labels:
            previous_labels = channel.labels
            channel.labels = dict(labels)
            note(f"labels changed from {_labels(previous_labels)} to {_labels(channel.labels)}")
        if normalized is not None and (latest is None or stored != normalized):
            number = latest.number + 1 if latest else 1
            Revision.objects.create(
                channel=channel, number=number, spec=encrypt_spec(normalized), created_by=user
            )
            note(f"saved revision {number}")
            _prepare_ingest_topic(channel.name, normalized)
        if changed:
            channel.save(
                update_fields=[
                    "description",
                    *_POLICY_FIELDS,
                    "ingest_rate_limit",
                    "labels",
                    "updated",
                ]
            )
    return channel


def delete_channel(channel: Channel, *, user: User | None = None, actor: str | None = None) -> None:
    """Delete the channel, its revisions, connector and runs, and tell the runtime to forget
    them.

    The runtime removes the connector's checkpoint with it (where it can reach the
    checkpoint root), so a channel created later under the same name starts afresh instead
    of resuming from it; lifecycle events are kept (with ``channel`` unset).
    """
    with transaction.atomic():
        channel = Channel.objects.select_for_update().get(pk=channel.pk)
        latest = channel.latest_revision_obj()
        takes_http = latest is not None and latest.spec.get("source", {}).get("type") == HTTP_SOURCE
        connector = Connector.objects.filter(channel=channel).only("runtime_id").first()
        record_channel(
            None,
            actor or actor_for(user),
            subject_id=channel.name,
            from_state=channel.target_state,
            to_state="",
            reason="deleted",
        )
        # Its replays and redrives go with it: their connectors (and checkpoints) too.
        runs = list(
            ChannelRun.objects.filter(channel=channel)
            .exclude(runtime_id="")
            .values_list("runtime_id", flat=True)
        )
        channel.delete()
        for run_connector in runs:
            _call_runtime(get_runtime().delete, run_connector)
        if connector is not None:
            _call_runtime(get_runtime().delete, connector.runtime_id)
        else:  # offsets set for its first start wait in the runtime; best effort
            try:
                get_runtime().delete(channel.name)
            except runtime_base.RuntimeUnavailable as exc:
                logger.warning("runtime unreachable; %s may leave offsets behind: %s", channel, exc)
    if takes_http:  # its events go with it: a new channel of its name never reads them
        try:
            drop_ingest_topic(channel.name)
        except IngestUnavailable as exc:
            logger.warning(
                "channel %s deleted; %s (a new channel of this name deletes it when created)",
                channel.name,
                exc,
            )


def start_channel(
    channel: Channel, *, user: User | None = None, actor: str | None = None
) -> Connector:
    """Deploy the channel's latest revision with target RUNNING.

    Creates the connector on first start. The deployment names the connector's current
    worker when that worker is alive, else none (reconcile then places it). Starting a
    running channel whose latest revision is already deployed changes nothing. Starting a
    FAILED connector restarts it (a new generation, the restart policy's count reset); so does
    starting one whose available-now run finished (it reads on from its checkpoint).
    """
    with transaction.atomic():
        channel = Channel.objects.select_for_update().get(pk=channel.pk)
        connector = _deploy(channel, TargetState.RUNNING, actor or actor_for(user))
        _refresh_health(channel)
        return connector


def deploy_channel(
    channel: Channel, *, user: User | None = None, actor: str | None = None
) -> DeployPlan:
    """Put the channel's latest saved revision to work, from any state, as its plan says
    (:func:`console.selectors.deploys.deploy_plan`): a stopped or never-started channel
    starts with it; a paused one stays paused with it; a running bus whose rules alone
    changed takes them live; any other (a FAILED one included) restarts with it from its
    checkpoint. Returns the plan followed (``effect`` ``none``: nothing was to do)."""
    with transaction.atomic():
        channel = Channel.objects.select_for_update().get(pk=channel.pk)
        plan = deploy_plan(channel)
        if plan.effect == "none":
            return plan
        paused = channel.target_state == TargetState.PAUSED
        _deploy(
            channel, TargetState.PAUSED if paused else TargetState.RUNNING, actor or actor_for(user)
        )
        _refresh_health(channel)
        return plan


def stop_channel(
    channel: Channel, *, user: User | None = None, actor: str | None = None
) -> Channel:
    """Set the target to STOPPED: the runtime releases the driver and keeps the checkpoint."""
    with transaction.atomic():
        channel = Channel.objects.select_for_update().get(pk=channel.pk)
        _set_target(channel, TargetState.STOPPED, actor or actor_for(user), "stop requested")
        connector = Connector.objects.filter(channel=channel).only("runtime_id").first()
        if connector is not None:
            Connector.objects.filter(pk=connector.pk).update(restart_attempts=0)
            _call_runtime(
                get_runtime().set_target_state,
                connector.runtime_id,
                runtime_states.TargetState.STOPPED,
            )
        _refresh_health(channel)
    return channel


def pause_channel(
    channel: Channel, *, user: User | None = None, actor: str | None = None
) -> Channel:
    """Set the target to PAUSED: the driver stays up (JVM, SparkSession) with its query
    stopped, so a resume is quick.

    Raises :class:`InvalidTransition` when the channel is STOPPED (nothing runs to pause).
    """
    refusal = "is STOPPED: there is no driver to pause; start it first"
    actor = actor or actor_for(user)
    return _retarget_warm(channel, TargetState.PAUSED, actor, "pause requested", refusal)


def resume_channel(
    channel: Channel, *, user: User | None = None, actor: str | None = None
) -> Channel:
    """Set the target back to RUNNING: the warm driver starts its query again from the
    checkpoint, with the revision it already runs (start deploys the latest one).

    Raises :class:`InvalidTransition` when the channel is STOPPED (start it instead).
    """
    actor = actor or actor_for(user)
    return _retarget_warm(
        channel,
        TargetState.RUNNING,
        actor,
        "resume requested",
        "is STOPPED, not PAUSED: start it instead",
    )


def _retarget_warm(
    channel: Channel, target: TargetState, actor: str, reason: str, refusal: str
) -> Channel:
    """Move a deployed channel between RUNNING and PAUSED (its driver stays up).

    Raises :class:`InvalidTransition` (``channel 'x' <refusal>``) when the channel is STOPPED:
    there is no driver to keep warm.
    """
    with transaction.atomic():
        channel = Channel.objects.select_for_update().get(pk=channel.pk)
        if channel.target_state == TargetState.STOPPED:
            raise InvalidTransition(f"channel {channel.name!r} {refusal}")
        _set_target(channel, target, actor, reason)
        _send_target(channel, runtime_states.TargetState(str(target)))
        _refresh_health(channel)
    return channel


@dataclass(frozen=True)
class TaskRestart:
    id: int
    state: str
    worker_id: str | None


@dataclass(frozen=True)
class RestartPlan:
    """What a restart request does, in the shape of Kafka Connect's KIP-745 answer: the
    connector and its tasks, those that restart in state RESTARTING, the others as they are.
    """

    name: str
    restarting: bool
    connector_state: str
    worker_id: str | None
    generation: int
    tasks: list[TaskRestart]
    reason: str


def restart_channel(
    channel: Channel,
    *,
    include_tasks: bool = False,
    only_failed: bool = False,
    user: User | None = None,
    actor: str | None = None,
) -> RestartPlan:
    """Restart the channel's connector with Kafka Connect's KIP-745 parameters.

    Which instances are asked for: the connector (always, or only when FAILED with
    ``only_failed``), and with ``include_tasks`` its tasks (all, or the FAILED ones). A
    channel's connector and tasks live in one driver, so restarting any of them replaces the
    driver (a new generation) and every task restarts with it; when ``only_failed`` finds
    nothing FAILED, nothing restarts. The decision is recorded either way, as a lifecycle
    event with the reason; a restart resets the restart policy's count.

    Raises :class:`InvalidTransition` when the channel was never started or is STOPPED.
    """
    actor = actor or actor_for(user)
    with transaction.atomic():
        channel = Channel.objects.select_for_update().get(pk=channel.pk)
        connector = Connector.objects.filter(channel=channel).first()
        if connector is None:
            raise InvalidTransition(
                f"channel {channel.name!r} was never started: there is nothing to restart"
            )
        if channel.target_state == TargetState.STOPPED:
            raise InvalidTransition(
                f"channel {channel.name!r} is STOPPED: there is no driver to restart; "
                "start it instead"
            )
        tasks = list(connector.tasks.order_by("task_id"))
        asked = (
            f"include_tasks={str(include_tasks).lower()}, only_failed={str(only_failed).lower()}"
        )
        why = _restart_cause(connector, tasks, include_tasks=include_tasks, only_failed=only_failed)
        if why is None:
            reason = f"restart requested ({asked}): nothing FAILED, nothing restarted"
            _record_connector(channel, connector, actor, connector.state, reason)
            return _plan(channel, connector, tasks, restarting=False, reason=reason)
        generation = _call_runtime(get_runtime().restart, connector.runtime_id)
        reason = (
            f"restart requested ({asked}): {why}; restarting the driver and its "
            f"{len(tasks)} task(s) (generation {generation})"
        )
        _record_connector(channel, connector, actor, ConnectorState.RESTARTING, reason)
        connector.generation = generation
        connector.state = ConnectorState.RESTARTING
        connector.state_changed_at = timezone.now()
        connector.status_deadline_at = None  # the console's state, not a report: no deadline
        connector.restart_attempts = 0
        connector.save(
            update_fields=[
                "generation",
                "state",
                "state_changed_at",
                "status_deadline_at",
                "restart_attempts",
            ]
        )
        connector.tasks.update(state=ConnectorState.RESTARTING)
        _refresh_health(channel)
        return _plan(channel, connector, tasks, restarting=True, reason=reason)


def channel_preview(channel: Channel, limit: int = 50) -> list[dict[str, Any]]:
    """The newest events the channel's ``preview`` sink kept, newest first.

    Empty for a channel that was never started. Reads only; raises
    :class:`RuntimeUnavailable` when the runtime cannot be reached.
    """
    connector = Connector.objects.filter(channel=channel).only("runtime_id").first()
    if connector is None:
        return []
    return _call_runtime(get_runtime().preview, connector.runtime_id, limit)


# -- helpers -----------------------------------------------------------------------------------


def _labels(labels: Mapping[str, str]) -> str:
    return "{" + ", ".join(f"{key}={value}" for key, value in sorted(labels.items())) + "}"


def _rate(limit: int | None) -> str:
    return "the site default" if limit is None else f"{limit} events/s"


_POLICY_FIELDS = [
    "restart_policy",
    "restart_max_attempts",
    "restart_backoff_initial_seconds",
    "restart_backoff_max_seconds",
]


def _deploy(channel: Channel, target: TargetState, actor: str) -> Connector:
    """Deploy the latest revision with ``target`` (RUNNING or PAUSED); ``channel`` is locked.

    A FAILED connector is restarted: a start after a failure is the user asking for that.
    So is one whose available-now run finished: it runs again from its checkpoint, as a new
    generation, whose reports the finished run's cannot be taken for.
    """
    # Every channel is created with its revision 1 (create_channel).
    revision = cast(Revision, channel.latest_revision_obj())
    was_hosted = channel.target_state in HOSTED_TARGETS
    connector, _ = Connector.objects.select_related("revision", "worker").get_or_create(
        channel=channel,
        defaults={
            "runtime_id": channel.name,
            "revision": revision,
            "state": ConnectorState.UNASSIGNED,
            "state_changed_at": timezone.now(),
        },
    )
    previous_revision = connector.revision
    if previous_revision != revision:
        connector.revision = revision
        connector.save(update_fields=["revision"])
    if channel.target_state != target:
        verb = "start" if target == TargetState.RUNNING else "pause"
        _set_target(channel, target, actor, f"{verb} requested (revision {revision.number})")
    elif previous_revision != revision:
        was = previous_revision.number if previous_revision else "none"
        record_channel(
            channel,
            actor,
            from_state=channel.target_state,
            to_state=channel.target_state,
            reason=f"deploying revision {revision.number} (was {was})",
        )
    worker = connector.worker
    if get_runtime().places:
        pass  # the runtime's group runs it on the owner of its slot; the control loop follows
    elif (
        worker is None or worker.state != WorkerState.ALIVE or not (worker.in_service or was_hosted)
    ):
        # A channel running on a draining worker stays there: the control loop hands it over.
        worker = _place_now(channel, connector, actor)
    if revision.spec["source"]["type"] == HTTP_SOURCE:
        # Raises (nothing changes) when Kafka is down: the query would have no topic.
        ensure_ingest_topic(channel.name, decrypt_spec(revision.spec))
    deployment = channel_deployment(
        channel,
        connector,
        revision,
        target=target,
        worker_id=worker.worker_id if worker and worker.state == WorkerState.ALIVE else None,
        discovery=discovers(channel),
    )
    _call_runtime(get_runtime().deploy, deployment)
    if connector.state == ConnectorState.FAILED or connector.finished:
        # A failed driver stays down until restarted (as in Kafka Connect); a finished run
        # is not placed again by the runtime before a new generation either.
        rerun = connector.state != ConnectorState.FAILED
        connector.generation = _call_runtime(get_runtime().restart, connector.runtime_id)
        connector.restart_attempts = 0
        connector.finished = False
        connector.save(update_fields=["generation", "restart_attempts", "finished"])
        what = "the finished available-now run again" if rerun else "the failed connector"
        record_channel(
            channel,
            actor,
            from_state=channel.target_state,
            to_state=channel.target_state,
            reason=f"restarting {what} (generation {connector.generation})",
        )
    return connector


def _place_now(channel: Channel, connector: Connector, actor: str) -> Worker | None:
    """Assign an unplaced connector to the least loaded live worker as it is deployed, as the
    next reconcile pass would (sticky from then on): the start does not wait for that pass."""
    live = Worker.objects.filter(
        state=WorkerState.ALIVE, service=WorkerService.IN_SERVICE
    ).annotate(
        hosting=Count("connectors", filter=Q(connectors__channel__target_state__in=HOSTED_TARGETS))
    )
    chosen = min(live, key=lambda w: (w.hosting, w.worker_id), default=None)
    if chosen is None:
        return None  # reconcile places it when a worker is alive
    connector.worker = chosen
    connector.save(update_fields=["worker"])
    _record_connector(
        channel,
        connector,
        actor,
        ConnectorState.UNASSIGNED,
        f"assigned to worker {chosen.worker_id} (least loaded, hosting {chosen.hosting})",
    )
    return chosen


def _send_target(channel: Channel, target: runtime_states.TargetState) -> None:
    connector = Connector.objects.filter(channel=channel).only("runtime_id").first()
    if connector is not None:
        _call_runtime(get_runtime().set_target_state, connector.runtime_id, target)


def _restart_cause(
    connector: Connector, tasks: list, *, include_tasks: bool, only_failed: bool
) -> str | None:
    """Why a restart request restarts the driver, or ``None`` when it restarts nothing."""
    if not only_failed:
        return (
            "the connector and its tasks asked for" if include_tasks else "the connector asked for"
        )
    if connector.state == ConnectorState.FAILED:
        return "the connector is FAILED"
    failed = [str(task.task_id) for task in tasks if task.state == ConnectorState.FAILED]
    if include_tasks and failed:
        return f"task(s) {', '.join(failed)} FAILED"
    return None


def _plan(
    channel: Channel, connector: Connector, tasks: list, *, restarting: bool, reason: str
) -> RestartPlan:
    return RestartPlan(
        name=channel.name,
        restarting=restarting,
        connector_state=ConnectorState.RESTARTING if restarting else connector.state,
        worker_id=connector.worker_id,
        generation=connector.generation,
        tasks=[
            TaskRestart(
                id=task.task_id,
                state=ConnectorState.RESTARTING if restarting else task.state,
                worker_id=task.worker_id,
            )
            for task in tasks
        ],
        reason=reason,
    )


def _record_connector(
    channel: Channel, connector: Connector, actor: str, to_state: str, reason: str
) -> None:
    record(
        channel=channel,
        subject_type=SubjectType.CONNECTOR,
        subject_id=connector.runtime_id,
        from_state=connector.state,
        to_state=to_state,
        actor=actor,
        reason=reason,
    )


def _prepare_ingest_topic(channel_name: str, spec: Mapping[str, Any], *, new: bool = False) -> None:
    """Create an http channel's ingest topic early, so events can be posted before it starts,
    with the spec's archive as its retention (set again when a revision changes it). For a
    ``new`` channel, a topic left under its name (by a deleted channel whose topic could not
    be deleted then) is deleted first: its events are not the new channel's.

    Best effort: when Kafka is down the channel is still created; starting it (or posting
    to it) creates the topic later.
    """
    if spec["source"]["type"] != HTTP_SOURCE:
        return
    try:
        if new and drop_ingest_topic(channel_name):
            logger.warning(
                "channel %s: the ingest topic a deleted channel of this name left was deleted",
                channel_name,
            )
        ensure_ingest_topic(channel_name, spec)
    except IngestUnavailable as exc:
        logger.warning("channel %s: %s (retried on start)", channel_name, exc)


def _set_target(channel: Channel, target: TargetState, actor: str, reason: str) -> None:
    """Save a new target and record the change; the same target again is a no-op."""
    previous = channel.target_state
    if previous == target:
        return
    channel.target_state = target
    channel.save(update_fields=["target_state", "updated"])
    record_channel(channel, actor, from_state=previous, to_state=target, reason=reason)


def _refresh_health(channel: Channel) -> None:
    """The channel's stored health level after a lifecycle change (the fleet list's filter
    sees it at once, not at the control loop's next pass)."""
    channel_health.refresh([channel.pk])


def _call_runtime(method: Callable[..., Any], *args: Any) -> Any:
    with runtime_errors(method.__name__):
        return method(*args)
