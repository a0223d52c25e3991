"""Channel operations: create, update, delete, start and stop.

Each function runs in one database transaction and calls the runtime last, inside
it: when the runtime cannot be reached the function raises
:class:`RuntimeUnavailable` and the database is left as it was. Runtime calls are
idempotent, so calling any of these twice is the same as calling it once.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping
from typing import Any

from django.contrib.auth.models import AbstractBaseUser
from django.db import transaction
from django.utils import timezone

from console.choices import ConnectorState, SubjectType, TargetState, WorkerState
from console.models import Channel, Connector, Revision
from console.runtime import RUNTIME_UNAVAILABLE_ERRORS, get_runtime
from console.services.errors import RuntimeUnavailable
from console.services.ingest import (
    HTTP_SOURCE,
    IngestUnavailable,
    ensure_ingest_topic,
    with_ingest_fields,
)
from console.services.lifecycle import actor_for, record
from console.services.specs import normalize_spec
from runtime_adapter import states as runtime_states
from runtime_adapter.base import Deployment

logger = logging.getLogger(__name__)


def create_channel(
    *,
    name: str,
    spec: Mapping[str, Any],
    description: str = "",
    user: AbstractBaseUser | None = None,
    actor: str | None = None,
) -> Channel:
    """Create a STOPPED channel whose revision 1 is ``spec`` (normalised).

    Raises :class:`InvalidSpec` for a bad spec (a secret sent as the marker included: there
    is nothing stored to keep) and :class:`django.core.exceptions.ValidationError` for a bad
    or taken name; in both cases nothing is saved.
    """
    normalized = normalize_spec(spec)
    channel = Channel(name=name, description=description, created_by=user)
    channel.full_clean()
    with transaction.atomic():
        channel.save()
        Revision.objects.create(channel=channel, number=1, spec=normalized, created_by=user)
        _record_channel(
            channel,
            actor or actor_for(user),
            from_state="",
            to_state=channel.target_state,
            reason="created with revision 1",
        )
    _prepare_ingest_topic(channel.name, normalized)
    return channel


def update_channel(
    channel: Channel,
    *,
    spec: Mapping[str, Any] | None = None,
    description: str | None = None,
    user: AbstractBaseUser | None = None,
    actor: str | None = None,
) -> Channel:
    """Change the description and/or the spec; ``None`` leaves a field as it is.

    Secrets the new spec sends as the marker or leaves out keep their values from the latest
    revision (:func:`pipelines.spec.secrets.merge_secrets`). A new revision is saved only
    when the normalised spec differs from the latest one, so saving the same spec twice (or
    the redacted one read back) creates one revision. A running connector keeps its
    deployed revision until the channel is started again. Raises :class:`InvalidSpec`
    (nothing saved).
    """
    with transaction.atomic():
        channel = Channel.objects.select_for_update().get(pk=channel.pk)
        latest = channel.latest_revision_obj()
        normalized = None
        if spec is not None:
            normalized = normalize_spec(spec, stored=latest.spec if latest else None)
        changed = False
        if description is not None and description != channel.description:
            channel.description = description
            changed = True
        if normalized is not None and (latest is None or latest.spec != normalized):
            number = latest.number + 1 if latest else 1
            Revision.objects.create(
                channel=channel, number=number, spec=normalized, created_by=user
            )
            _record_channel(
                channel,
                actor or actor_for(user),
                from_state=channel.target_state,
                to_state=channel.target_state,
                reason=f"saved revision {number}",
            )
            changed = True
        if changed:
            channel.save(update_fields=["description", "updated"])
    return channel


def delete_channel(
    channel: Channel, *, user: AbstractBaseUser | None = None, actor: str | None = None
) -> None:
    """Delete the channel, its revisions and connector, and tell the runtime to forget it.

    The connector's checkpoint stays on the runtime's disk; lifecycle events are kept
    (with ``channel`` unset).
    """
    with transaction.atomic():
        channel = Channel.objects.select_for_update().get(pk=channel.pk)
        connector = Connector.objects.filter(channel=channel).only("runtime_id").first()
        _record_channel(
            None,
            actor or actor_for(user),
            subject_id=channel.name,
            from_state=channel.target_state,
            to_state="",
            reason="deleted",
        )
        channel.delete()
        if connector is not None:
            _call_runtime(get_runtime().delete, connector.runtime_id)


def start_channel(
    channel: Channel, *, user: AbstractBaseUser | None = None, actor: str | None = None
) -> Connector:
    """Deploy the channel's latest revision with target RUNNING.

    Creates the connector on first start. The deployment names the connector's current
    worker when that worker is alive, else none (reconcile then places it). Starting a
    running channel whose latest revision is already deployed changes nothing. Starting a
    FAILED connector restarts it (a new generation).
    """
    with transaction.atomic():
        channel = Channel.objects.select_for_update().get(pk=channel.pk)
        revision = channel.latest_revision_obj()
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
        actor = actor or actor_for(user)
        if channel.target_state != TargetState.RUNNING:
            reason = f"start requested (revision {revision.number})"
            _set_target(channel, TargetState.RUNNING, actor, reason)
        elif previous_revision != revision:
            was = previous_revision.number if previous_revision else "none"
            _record_channel(
                channel,
                actor,
                from_state=channel.target_state,
                to_state=channel.target_state,
                reason=f"deploying revision {revision.number} (was {was})",
            )
        worker = connector.worker
        if revision.spec["source"]["type"] == HTTP_SOURCE:
            # Raises (nothing changes) when Kafka is down: the query would have no topic.
            ensure_ingest_topic(channel.name)
        deployment = Deployment(
            connector_id=connector.runtime_id,
            channel=channel.name,
            revision=revision.number,
            spec=with_ingest_fields(revision.spec, channel.name),
            target_state=runtime_states.TargetState.RUNNING,
            worker_id=worker.worker_id if worker and worker.state == WorkerState.ALIVE else None,
            generation=connector.generation,
        )
        _call_runtime(get_runtime().deploy, deployment)
        if connector.state == ConnectorState.FAILED:
            # A failed driver stays down until restarted (as in Kafka Connect): a start
            # after a failure is the user asking for exactly that.
            connector.generation = _call_runtime(get_runtime().restart, connector.runtime_id)
            connector.save(update_fields=["generation"])
            _record_channel(
                channel,
                actor,
                from_state=channel.target_state,
                to_state=channel.target_state,
                reason=f"restarting the failed connector (generation {connector.generation})",
            )
    return connector


def stop_channel(
    channel: Channel, *, user: AbstractBaseUser | None = None, actor: str | None = None
) -> Channel:
    """Set the target to STOPPED: the runtime releases the driver and keeps the checkpoint."""
    with transaction.atomic():
        channel = Channel.objects.select_for_update().get(pk=channel.pk)
        _set_target(channel, TargetState.STOPPED, actor or actor_for(user), "stop requested")
        connector = Connector.objects.filter(channel=channel).only("runtime_id").first()
        if connector is not None:
            _call_runtime(
                get_runtime().set_target_state,
                connector.runtime_id,
                runtime_states.TargetState.STOPPED,
            )
    return channel


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


def _prepare_ingest_topic(channel_name: str, spec: Mapping[str, Any]) -> None:
    """Create an http channel's ingest topic early, so events can be posted before it starts.

    Best effort: when Kafka is down the channel is still created; starting it (or posting
    to it) creates the topic later.
    """
    if spec["source"]["type"] != HTTP_SOURCE:
        return
    try:
        ensure_ingest_topic(channel_name)
    except IngestUnavailable as exc:
        logger.warning("channel %s: %s (retried on start)", channel_name, exc)


def _set_target(channel: Channel, target: TargetState, actor: str, reason: str) -> None:
    """Save a new target and record the change; the same target again is a no-op."""
    previous = channel.target_state
    if previous == target:
        return
    channel.target_state = target
    channel.save(update_fields=["target_state", "updated"])
    _record_channel(channel, actor, from_state=previous, to_state=target, reason=reason)


def _record_channel(
    channel: Channel | None,
    actor: str,
    *,
    from_state: str,
    to_state: str,
    reason: str,
    subject_id: str | None = None,
) -> None:
    record(
        channel=channel,
        subject_type=SubjectType.CHANNEL,
        subject_id=subject_id or channel.name,
        from_state=from_state,
        to_state=to_state,
        actor=actor,
        reason=reason,
    )


def _call_runtime(method: Callable[..., Any], *args: Any) -> Any:
    try:
        return method(*args)
    except RUNTIME_UNAVAILABLE_ERRORS as exc:
        logger.warning("runtime unavailable: %s failed: %s", method.__name__, exc)
        raise RuntimeUnavailable(f"the runtime is unavailable: {exc}") from exc
