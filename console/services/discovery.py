"""Schema discovery: a channel's live events sampled, their JSON Schema inferred and kept.

Opt-in per channel (:func:`set_discovery`). A channel with discovery on is deployed with
``Deployment.discovery``: its driver samples a few events of each micro-batch in the same
pass as the data (:mod:`pipelines.discovery`) and leaves them in the runtime's store. Each
reconcile pass takes them (:func:`collect_samples`) and merges them into the channel's
:class:`~console.models.ChannelDiscovery`: the union of the fields, types widened, with
when each field was first seen. When the shape changes, the new schema is registered as a
version of the subject ``<channel>-discovered`` (JSON Schema, compatibility ``NONE``: a
discovered schema only records what came, it promises nothing).

Turning discovery on or off for a channel whose connector is deployed re-deploys its running
revision with the flag and restarts its query (a new generation): the sampling ``observe``
is part of the query's plan.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Iterable, Mapping
from datetime import datetime
from typing import Any

from django.db import transaction
from django.utils import timezone

from console.choices import HOSTED_TARGETS
from console.errors import runtime_errors
from console.models import Channel, ChannelDiscovery, Connector, Subject
from console.runtime import get_runtime
from console.services.deployments import deployment_for
from console.services.lifecycle import record_channel
from console.services.schemas import Candidate, register
from pipelines.spec import shapes as inference
from runtime_adapter.base import RuntimeAdapter

logger = logging.getLogger(__name__)

SUBJECT_SUFFIX = "-discovered"
ACTOR = "system:discovery"


def subject_name(channel: Channel | str) -> str:
    """The registry subject of a channel's discovered schema."""
    name = channel if isinstance(channel, str) else channel.name
    return f"{name}{SUBJECT_SUFFIX}"


def discovery_of(channel: Channel) -> ChannelDiscovery:
    """The channel's discovery record (off and empty until turned on)."""
    found = ChannelDiscovery.objects.filter(channel=channel).first()
    return found or ChannelDiscovery(channel=channel)


def discovers(channel: Channel) -> bool:
    """Whether the channel's connector is to sample its events."""
    return ChannelDiscovery.objects.filter(channel=channel, enabled=True).exists()


def set_discovery(channel: Channel, enabled: bool, *, actor: str) -> ChannelDiscovery:
    """Turn discovery on or off (idempotent); a deployed connector is re-deployed with it
    and restarted. Recorded in the channel's history with who did it."""
    with transaction.atomic():
        channel = Channel.objects.select_for_update().get(pk=channel.pk)
        found, _ = ChannelDiscovery.objects.get_or_create(channel=channel)
        if found.enabled == enabled:
            return found
        found.enabled = enabled
        found.save(update_fields=["enabled"])
        word = "on" if enabled else "off"
        connector = (
            Connector.objects.select_related("revision", "worker").filter(channel=channel).first()
        )
        restarting = (
            connector is not None
            and connector.revision is not None
            and channel.target_state in HOSTED_TARGETS
        )
        reason = f"schema discovery turned {word}"
        if restarting:
            reason += "; restarting the connector's query with it"
        record_channel(
            channel,
            actor,
            from_state=channel.target_state,
            to_state=channel.target_state,
            reason=reason,
        )
        if restarting:
            assert connector is not None and connector.revision is not None
            _redeploy(channel, connector, enabled)
    return found


def _redeploy(channel: Channel, connector: Connector, enabled: bool) -> None:
    revision = connector.revision
    assert revision is not None
    runtime = get_runtime()
    deployment = deployment_for(
        channel, connector, revision, target=channel.target_state, discovery=enabled
    )
    with runtime_errors("deploy"):
        runtime.deploy(deployment)
    with runtime_errors("restart"):
        connector.generation = runtime.restart(connector.runtime_id)
    connector.save(update_fields=["generation"])


def collect_samples(
    *, runtime: RuntimeAdapter | None = None, now: datetime | None = None
) -> dict[str, int]:
    """Take the sampled events of every channel with discovery on and merge them in;
    returns the new subject version per channel whose shape changed."""
    runtime = runtime or get_runtime()
    now = now or timezone.now()
    found = {
        d.channel.connector.runtime_id: d
        for d in ChannelDiscovery.objects.filter(
            enabled=True, channel__connector__isnull=False
        ).select_related("channel__connector")
    }
    if not found:
        return {}
    taken = runtime.take_samples(found)
    changed: dict[str, int] = {}
    for runtime_id, events in taken.items():
        record_ = found.get(runtime_id)
        if record_ is None or not events:
            continue
        version = fold(record_, events, now=now)
        if version:
            changed[record_.channel.name] = version
    return changed


def fold(found: ChannelDiscovery, events: Iterable[Mapping[str, Any]], *, now: datetime) -> int:
    """Merge sampled ``events`` into a channel's discovery; a changed shape is registered
    (the new version number is returned, else 0)."""
    events = list(events)
    before = inference.canonical(found.schema or {})
    merged = inference.merge_all(events, found.schema or None)
    stamp = now.isoformat()
    fields = dict(found.fields or {})
    for path, types in inference.field_paths(merged).items():
        known = fields.get(path)
        if known is None:
            fields[path] = {"types": types, "first_seen": stamp}
        elif known.get("types") != types:
            fields[path] = {**known, "types": types}
    found.samples += len(events)
    found.last_sample_at = now
    found.fields = fields
    version = 0
    if inference.canonical(merged) != before:
        found.schema = merged
        found.changed_at = now
        version = _register(found.channel, merged)
        found.version = version or found.version
    found.save(
        update_fields=[
            "schema",
            "fields",
            "samples",
            "version",
            "last_sample_at",
            "changed_at",
        ]
    )
    return version


def _register(channel: Channel, schema: Mapping[str, Any]) -> int:
    name = subject_name(channel)
    team = channel.team  # the channel's team's registry
    Subject.objects.get_or_create(team=team, name=name, defaults={"compatibility": "NONE"})
    document = inference.document(schema, f"{channel.name} (discovered)")
    try:
        registered = register(team, name, Candidate("JSON", json.dumps(document), []), actor=ACTOR)
    except Exception as exc:  # the registry refusing must not stop the merging
        logger.warning("could not register the discovered schema of %s: %s", channel.name, exc)
        return 0
    record_channel(
        channel,
        ACTOR,
        from_state=channel.target_state,
        to_state=channel.target_state,
        reason=f"discovered schema changed: {name} version {registered.version}",
    )
    return registered.version


def _time(text: object) -> datetime | None:
    try:
        return datetime.fromisoformat(str(text)) if text else None
    except ValueError:
        return None


def view(found: ChannelDiscovery) -> dict[str, Any]:
    """The discovery of a channel as the API shows it."""
    fields = [
        {"path": path, "types": info.get("types", []), "first_seen": _time(info.get("first_seen"))}
        for path, info in sorted((found.fields or {}).items())
    ]
    return {
        "enabled": found.enabled,
        "subject": subject_name(found.channel),
        "version": found.version,
        "samples": found.samples,
        "last_sample_at": found.last_sample_at,
        "changed_at": found.changed_at,
        "schema": inference.document(found.schema, f"{found.channel.name} (discovered)")
        if found.schema
        else None,
        "fields": fields,
    }
