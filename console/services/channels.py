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

The lifecycle actions (start, deploy, stop, pause, resume, restart, delete) are decided in
:mod:`console.services.transitions`, over a list of channels: each function here is that
list's path for a list of one, so a bulk request and one request per channel end the same.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping
from typing import Any, cast

from django.contrib.auth.models import User
from django.db import transaction

from console.choices import TargetState
from console.crypto import decrypt_spec, encrypt_spec
from console.errors import runtime_errors
from console.models import Channel, Connector, Revision, Team, default_team_id
from console.selectors.deploys import DeployPlan, deploy_plan
from console.selectors.restart_policy import RestartPolicy
from console.selectors.specs import normalize_spec
from console.services import quotas, restarts, starts, transitions
from console.services.ingest import (
    HTTP_SOURCE,
    IngestUnavailable,
    drop_ingest_topic,
    ensure_ingest_topic,
)
from console.services.lifecycle import actor_for, record_channel
from console.services.restarts import RestartPlan
from console.services.transitions import Answer

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
    team: Team | None = None,
    user: User | None = None,
    actor: str | None = None,
) -> Channel:
    """Create a channel whose revision 1 is ``spec`` (normalised), in ``team`` (default: the
    ``default`` team; the caller checked the user may create channels there).

    ``target_state`` STOPPED (the default) only saves it; RUNNING or PAUSED also deploys
    revision 1 as :func:`start_channel` does (PAUSED: a warm driver, its query not started).
    ``restart_policy`` holds any of the :class:`RestartPolicy` keys; the others take their
    defaults. ``ingest_rate_limit`` (events/s accepted by HTTP ingestion) ``None``: the
    site default ``SLUICE_INGEST_RATE_LIMIT``. Raises :class:`InvalidSpec` for a bad spec
    (a secret sent as the marker included: there is nothing stored to keep),
    :class:`django.core.exceptions.ValidationError` for a bad or taken name, target, policy
    or rate limit, :class:`QuotaExceeded` when the team holds ``max_channels`` already (or,
    to run, its running-channel or real-time-core quota is reached: the team's row is locked
    meanwhile, so two creates at once never both take the last place), and
    :class:`RuntimeUnavailable` when the channel is to run and the runtime cannot be reached;
    in each case nothing is saved.
    """
    if team is None:
        team = Team.objects.get(pk=default_team_id())
    normalized = normalize_spec(spec, team=team)  # within the team's reach
    channel = Channel(
        name=name,
        description=description,
        team_id=team.pk,
        created_by=user,
        target_state=target_state,
        ingest_rate_limit=ingest_rate_limit,
        labels=dict(labels or {}),
    )
    RestartPolicy().updated(restart_policy or {}).apply_to(channel)
    channel.full_clean()
    actor = actor or actor_for(user)
    with transaction.atomic():
        quotas.admit_new_channel(
            channel.team_id, hosted=channel.target_state != TargetState.STOPPED
        )
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
        channel = Channel.objects.select_for_update().select_related("team").get(pk=channel.pk)
        latest = channel.latest_revision_obj()
        # Compared in plaintext: encrypting twice gives different tokens for the same secret.
        stored = decrypt_spec(latest.spec) if latest else None
        normalized = None
        if spec is not None:
            normalized = normalize_spec(spec, stored=stored, team=channel.team)
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
    them (:func:`console.services.transitions.delete` for this one channel).

    The runtime removes the connector's checkpoint with it (where it can reach the
    checkpoint root), so a channel created later under the same name starts afresh instead
    of resuming from it; lifecycle events are kept (with ``channel`` unset).
    """
    _only(transitions.delete, channel, actor or actor_for(user))


def start_channel(
    channel: Channel, *, user: User | None = None, actor: str | None = None
) -> Connector:
    """Deploy the channel's latest revision with target RUNNING
    (:func:`console.services.starts.start` for this one channel).

    Creates the connector on first start. The deployment names the connector's current
    worker when that worker is alive, else none (reconcile then places it). Starting a
    running channel whose latest revision is already deployed changes nothing. Starting a
    FAILED connector restarts it (a new generation, the restart policy's count reset); so does
    starting one whose available-now run finished (it reads on from its checkpoint).
    """
    return cast(Connector, _only(starts.start, channel, actor or actor_for(user)))


def deploy_channel(
    channel: Channel, *, user: User | None = None, actor: str | None = None
) -> DeployPlan:
    """Put the channel's latest saved revision to work, from any state, as its plan says
    (:func:`console.selectors.deploys.deploy_plan`): a stopped or never-started channel
    starts with it; a paused one stays paused with it; a running bus whose rules alone
    changed takes them live; any other (a FAILED one included) restarts with it from its
    checkpoint. Returns the plan followed (``effect`` ``none``: nothing was to do)."""
    with transaction.atomic():
        channel = Channel.objects.select_for_update().select_related("team").get(pk=channel.pk)
        plan = deploy_plan(channel)
        if plan.effect == "none":
            return plan
        paused = channel.target_state == TargetState.PAUSED
        _deploy(
            channel, TargetState.PAUSED if paused else TargetState.RUNNING, actor or actor_for(user)
        )
        return plan


def stop_channel(
    channel: Channel, *, user: User | None = None, actor: str | None = None
) -> Channel:
    """Set the target to STOPPED: the runtime releases the driver and keeps the checkpoint
    (:func:`console.services.transitions.stop` for this one channel)."""
    return cast(Channel, _only(transitions.stop, channel, actor or actor_for(user)))


def pause_channel(
    channel: Channel, *, user: User | None = None, actor: str | None = None
) -> Channel:
    """Set the target to PAUSED: the driver stays up (JVM, SparkSession) with its query
    stopped, so a resume is quick (:func:`console.services.transitions.pause`).

    Raises :class:`InvalidTransition` when the channel is STOPPED (nothing runs to pause).
    """
    return cast(Channel, _only(transitions.pause, channel, actor or actor_for(user)))


def resume_channel(
    channel: Channel, *, user: User | None = None, actor: str | None = None
) -> Channel:
    """Set the target back to RUNNING: the warm driver starts its query again from the
    checkpoint, with the revision it already runs (start deploys the latest one;
    :func:`console.services.transitions.resume`).

    Raises :class:`InvalidTransition` when the channel is STOPPED (start it instead).
    """
    return cast(Channel, _only(transitions.resume, channel, actor or actor_for(user)))


def restart_channel(
    channel: Channel,
    *,
    include_tasks: bool = False,
    only_failed: bool = False,
    user: User | None = None,
    actor: str | None = None,
) -> RestartPlan:
    """Restart the channel's connector with Kafka Connect's KIP-745 parameters
    (:func:`console.services.restarts.restart` for this one channel, which says which
    instances restart).

    Raises :class:`InvalidTransition` when the channel was never started or is STOPPED.
    """
    plan = _only(
        restarts.restart,
        channel,
        actor or actor_for(user),
        include_tasks=include_tasks,
        only_failed=only_failed,
    )
    return cast(RestartPlan, plan)


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


def _only(
    action: Callable[..., dict[str, Answer]], channel: Channel, actor: str, **options: Any
) -> Any:
    """``action`` for the list of one: what it answers for ``channel``, or the error it
    answers raised (``Channel.DoesNotExist`` for a channel deleted meanwhile)."""
    return _outcome(action([channel], actor, **options), channel)


def _outcome(answers: Mapping[str, Answer], channel: Channel) -> Any:
    answer = answers[channel.name]
    if answer.failure is not None:
        raise answer.failure
    if answer.status == 404:
        raise Channel.DoesNotExist(answer.error)
    return answer.result


def _deploy(channel: Channel, target: TargetState, actor: str) -> Connector:
    """Deploy the latest revision with ``target`` (RUNNING or PAUSED) inside the caller's
    transaction, which holds ``channel`` (:func:`console.services.starts.deploy_locked`
    for this one channel)."""
    answers: dict[str, Answer] = {}
    starts.deploy_locked([channel], target, actor, answers)
    return cast(Connector, _outcome(answers, channel))


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


def _call_runtime(method: Callable[..., Any], *args: Any) -> Any:
    with runtime_errors(method.__name__):
        return method(*args)
