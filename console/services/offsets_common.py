"""What the offsets services share (:mod:`console.services.offsets`, KIP-875's alter, reset
and copy; :mod:`console.services.mirrormaker2`, MirrorMaker 2's takeover and hand-back): the
errors, the STOPPED rule, a channel's deployed spec and connector, and the runtime calls."""

from __future__ import annotations

import re
from typing import Any, cast

from console.choices import ConnectorState, TargetState
from console.crypto import decrypt_spec
from console.errors import InvalidTransition, ServiceError, runtime_errors
from console.models import Channel, Connector, Revision
from console.runtime import get_runtime
from console.services.ingest import with_ingest_fields
from console.services.lifecycle import record_channel
from runtime_adapter.base import OffsetChange, SourceOffset

KAFKA_BACKED_SOURCES = ("kafka", "http")
_LISTED_PARTITIONS = 20


class InvalidOffsets(ServiceError):
    """The request does not say a valid change; ``errors`` maps field paths to messages."""

    def __init__(self, errors: dict[str, list[str]]) -> None:
        super().__init__("invalid offsets request")
        self.errors = errors


class OffsetsNotSupported(ServiceError):
    """The channel's source has no offsets that can be moved (a files or generator source)."""


def deployed_spec(channel: Channel) -> dict[str, Any]:
    # Every channel is created with its revision 1 (create_channel).
    revision = cast(Revision, channel.latest_revision_obj())
    # The runtime's offset calls run here and connect to Kafka: they need the plaintext secrets.
    return with_ingest_fields(decrypt_spec(revision.spec), channel.name)


def connector_id(channel: Channel) -> str:
    connector = Connector.objects.filter(channel=channel).only("runtime_id").first()
    return connector.runtime_id if connector is not None else channel.name


def locked_if_stopped(channel: Channel, doing: str) -> Channel:
    """The channel, locked, if it is STOPPED; else :class:`InvalidTransition` with why."""
    channel = Channel.objects.select_for_update().get(pk=channel.pk)
    if channel.target_state != TargetState.STOPPED:
        raise InvalidTransition(
            f"channel {channel.name!r} is {channel.target_state}: stop it before you {doing} "
            "(offsets can change only while it is STOPPED)"
        )
    connector = Connector.objects.filter(channel=channel).only("state").first()
    if connector is not None and connector.state not in (
        ConnectorState.STOPPED,
        ConnectorState.UNASSIGNED,
    ):
        raise InvalidTransition(
            f"channel {channel.name!r} is stopping (its connector is still {connector.state}): "
            f"wait until it is STOPPED, then {doing}"
        )
    return channel


def kafka_spec(channel: Channel) -> dict[str, Any]:
    spec = deployed_spec(channel)
    source_type = spec["source"]["type"]
    if source_type not in KAFKA_BACKED_SOURCES:
        raise OffsetsNotSupported(
            f"channel {channel.name!r} reads a {source_type} source, which has no offsets to "
            "move: only Kafka-backed sources (kafka, http) do"
        )
    return spec


def topic_check(spec: dict[str, Any]):
    """``topic -> bool``: whether the spec's source reads the topic."""
    config = spec["source"].get("config", {})
    if spec["source"]["type"] == "http":
        return lambda topic: topic == config.get("ingest_topic")
    if config.get("topics") is not None:
        topics = set(config["topics"])
        return lambda topic: topic in topics
    pattern = config.get("topic_pattern") or ""
    return lambda topic: bool(re.fullmatch(pattern, topic))


def require_checkpoint_for_http(channel: Channel, spec: dict[str, Any]) -> None:
    """An http source always starts at its ingest topic's beginning: only a checkpoint can
    hold another position, so it must have run once."""
    if spec["source"]["type"] != "http":
        return
    found = call_runtime(get_runtime().offsets, connector_id(channel), channel.checkpoint_key)
    if found.batch_id is None:
        raise InvalidTransition(
            f"channel {channel.name!r} has never committed a batch: an http source's offsets "
            "can be moved only after it ran once"
        )


def apply_change(channel: Channel, change: OffsetChange, actor: str, reason: str) -> None:
    """Hand the change to the runtime and record it (the channel is locked)."""
    state = channel.target_state
    record_channel(channel, actor, from_state=state, to_state=state, reason=reason)
    call_runtime(get_runtime().alter_offsets, connector_id(channel), change)


def describe(offsets: tuple[SourceOffset, ...] | list[SourceOffset]) -> str:
    shown = ", ".join(f"{o.topic}/{o.partition} → {o.offset}" for o in offsets[:_LISTED_PARTITIONS])
    more = len(offsets) - _LISTED_PARTITIONS
    return shown + (f" and {more} more partition(s)" if more > 0 else "")


def call_runtime(method, *args: Any) -> Any:
    """Call the runtime; unreachable runtime or Kafka is :class:`RuntimeUnavailable`, a
    request the runtime cannot serve is :class:`InvalidTransition`."""
    with runtime_errors():
        return method(*args)
