"""A channel's source offsets, Kafka Connect's KIP-875 way, and migration (MirrorMaker 2's idea).

* :func:`channel_offsets` reads them: per source partition, the NEXT offset the channel will
  read, from its checkpoint's latest committed batch (with a pending change laid over it).
* :func:`alter_channel_offsets` (explicit offsets or a timestamp), :func:`reset_channel_offsets`
  (back to the source's ``starting_offsets``) and :func:`copy_channel_offsets` (from another
  channel, or from a consumer group's committed offsets) change them. Each is allowed only
  while the channel is STOPPED (target STOPPED, connector STOPPED or UNASSIGNED or never
  deployed), else :class:`InvalidTransition`; each records a lifecycle event. The change is
  kept by the runtime and applied by the connector's next driver before its query starts,
  so the next start resumes exactly from what was set.

Only Kafka-backed sources (``kafka``; ``http``, which reads its ingest topic) have offsets;
for the others reading answers an empty list with a note and changing raises
:class:`OffsetsNotSupported`. A request's shape is checked by the API's serializers
(:mod:`console.api.offsets.serializers`); what only the channel can tell (a topic it does not
read, an origin that is not another channel) raises :class:`InvalidOffsets` with messages
keyed by the path of each bad field (``offsets[0].partition.topic``).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, cast

from django.contrib.auth.models import User
from django.db import transaction

from console.choices import ConnectorState, TargetState
from console.crypto import decrypt_spec
from console.models import Channel, Connector, Revision
from console.runtime import get_runtime
from console.services.errors import InvalidTransition, ServiceError, runtime_errors
from console.services.ingest import with_ingest_fields
from console.services.lifecycle import actor_for, record_channel
from runtime_adapter.base import OffsetChange, SourceOffset

KAFKA_BACKED_SOURCES = ("kafka", "http")
ALTERED = "The offsets for this channel have been altered successfully"
RESET = "The offsets for this channel have been reset successfully"
COPIED = "The offsets for this channel have been copied successfully"
_LISTED_PARTITIONS = 20


class InvalidOffsets(ServiceError):
    """The request does not say a valid change; ``errors`` maps field paths to messages."""

    def __init__(self, errors: dict[str, list[str]]) -> None:
        super().__init__("invalid offsets request")
        self.errors = errors


class OffsetsNotSupported(ServiceError):
    """The channel's source has no offsets that can be moved (a files or generator source)."""


@dataclass(frozen=True)
class ChannelOffsets:
    """KIP-875's answer: ``offsets`` per source partition, and a ``note`` when something
    about them needs saying (a pending change, no checkpoint yet, a source without offsets)."""

    offsets: list[SourceOffset]
    note: str = ""


def channel_offsets(channel: Channel) -> ChannelOffsets:
    """The channel's offsets as its next start will see them. Reads only; raises
    :class:`RuntimeUnavailable` when the runtime cannot be reached."""
    spec = _spec(channel)
    source_type = spec["source"]["type"]
    if source_type not in KAFKA_BACKED_SOURCES:
        return ChannelOffsets(
            [],
            f"a {source_type} source keeps its position in the channel's checkpoint "
            "(which files it read, or how far it counted); it has no offsets to show or move",
        )
    found = _call(get_runtime().offsets, _connector_id(channel), channel.checkpoint_key)
    pending = found.pending
    if pending is not None and pending.kind == "reset":
        note = "offsets reset: the next start begins from the source's starting_offsets"
    elif pending is not None and pending.kind == "timestamp":
        note = (
            f"pending: the next start moves every partition to its first record at or after "
            f"{_iso(pending.timestamp_ms)}; until then these are the checkpoint's offsets"
        )
    elif pending is not None:
        note = "pending: these offsets apply when the channel next starts"
    elif found.batch_id is None:
        note = "the channel has not committed a batch yet: it starts from starting_offsets"
    else:
        note = ""
    return ChannelOffsets(found.offsets, note)


def alter_channel_offsets(
    channel: Channel,
    *,
    offsets: Sequence[SourceOffset] | None = None,
    timestamp_ms: int | None = None,
    user: User | None = None,
    actor: str | None = None,
) -> str:
    """Set explicit ``offsets`` (the partitions named move, the others keep their position)
    or a time, ``timestamp_ms`` (every partition moves to its first record at or after it,
    or its end): exactly one, each partition named once (the API's serializer checks the
    request's shape). Returns Kafka Connect's message."""
    if (offsets is None) == (timestamp_ms is None):
        raise ValueError("give exactly one of offsets and timestamp_ms")
    with transaction.atomic():
        channel = _stopped(channel, "alter its offsets")
        spec = _kafka_spec(channel)
        if timestamp_ms is not None:
            change = OffsetChange("timestamp", timestamp_ms=timestamp_ms)
        else:
            change = OffsetChange("offsets", _read_offsets(offsets or [], _topic_check(spec)))
            _within_partitions(spec, offsets or [])
        _require_checkpoint_for_http(channel, spec)
        if change.kind == "timestamp":
            reason = f"offsets set to the first records at or after {_iso(change.timestamp_ms)}"
        else:
            reason = f"offsets altered: {_describe(change.offsets)}"
        _apply(channel, change, actor or actor_for(user), reason)
    return ALTERED


def reset_channel_offsets(
    channel: Channel, *, user: User | None = None, actor: str | None = None
) -> str:
    """Forget the channel's position: its next start begins from the source's
    ``starting_offsets``. Returns Kafka Connect's message."""
    with transaction.atomic():
        channel = _stopped(channel, "reset its offsets")
        spec = _kafka_spec(channel)
        starting = spec["source"].get("config", {}).get("starting_offsets", "latest")
        if spec["source"]["type"] == "http":
            starting = "earliest"
        reason = f"offsets reset: the next start begins from starting_offsets {starting}"
        _apply(channel, OffsetChange("reset"), actor or actor_for(user), reason)
    return RESET


def copy_channel_offsets(
    channel: Channel,
    *,
    from_channel: str | None = None,
    from_consumer_group: str | None = None,
    user: User | None = None,
    actor: str | None = None,
) -> str:
    """Give the channel the offsets of another channel (``from_channel``) or of a consumer
    group (``from_consumer_group``), exactly one, for the topics it reads, so a pipeline
    moved to it neither skips nor replays events. Partitions the origin has no offset for
    keep their position. Returns Kafka Connect's message."""
    if (from_channel is None) == (from_consumer_group is None):
        raise ValueError("give exactly one of from_channel and from_consumer_group")
    with transaction.atomic():
        channel = _stopped(channel, "copy offsets to it")
        spec = _kafka_spec(channel)
        reads = _topic_check(spec)
        if from_channel is not None:
            origin, offsets = _channel_origin(channel, from_channel)
        else:
            origin = f"consumer group {from_consumer_group!r}"
            offsets = _call(get_runtime().consumer_group_offsets, spec, from_consumer_group)
        kept = tuple(o for o in offsets if reads(o.topic))
        if not kept:
            raise InvalidTransition(
                f"{origin} has no committed offsets for the topics channel "
                f"{channel.name!r} reads: there is nothing to copy"
            )
        _require_checkpoint_for_http(channel, spec)
        reason = f"offsets copied from {origin}: {_describe(kept)}"
        _apply(channel, OffsetChange("offsets", kept), actor or actor_for(user), reason)
    return COPIED


# -- helpers -----------------------------------------------------------------------------------


def _spec(channel: Channel) -> dict[str, Any]:
    # Every channel is created with its revision 1 (create_channel).
    revision = cast(Revision, channel.latest_revision_obj())
    # The runtime's offset calls run here and connect to Kafka: they need the plaintext secrets.
    return with_ingest_fields(decrypt_spec(revision.spec), channel.name)


def _connector_id(channel: Channel) -> str:
    connector = Connector.objects.filter(channel=channel).only("runtime_id").first()
    return connector.runtime_id if connector is not None else channel.name


def _stopped(channel: Channel, doing: str) -> Channel:
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


def _kafka_spec(channel: Channel) -> dict[str, Any]:
    spec = _spec(channel)
    source_type = spec["source"]["type"]
    if source_type not in KAFKA_BACKED_SOURCES:
        raise OffsetsNotSupported(
            f"channel {channel.name!r} reads a {source_type} source, which has no offsets to "
            "move: only Kafka-backed sources (kafka, http) do"
        )
    return spec


def _topic_check(spec: dict[str, Any]):
    """``topic -> bool``: whether the spec's source reads the topic."""
    config = spec["source"].get("config", {})
    if spec["source"]["type"] == "http":
        return lambda topic: topic == config.get("ingest_topic")
    if config.get("topics") is not None:
        topics = set(config["topics"])
        return lambda topic: topic in topics
    pattern = config.get("topic_pattern") or ""
    return lambda topic: bool(re.fullmatch(pattern, topic))


def _require_checkpoint_for_http(channel: Channel, spec: dict[str, Any]) -> None:
    """An http source always starts at its ingest topic's beginning: only a checkpoint can
    hold another position, so it must have run once."""
    if spec["source"]["type"] != "http":
        return
    found = _call(get_runtime().offsets, _connector_id(channel), channel.checkpoint_key)
    if found.batch_id is None:
        raise InvalidTransition(
            f"channel {channel.name!r} has never committed a batch: an http source's offsets "
            "can be moved only after it ran once"
        )


def _channel_origin(channel: Channel, name: str) -> tuple[str, list[SourceOffset]]:
    if name == channel.name:
        raise InvalidOffsets({"from_channel": ["Name another channel than this one."]})
    origin = Channel.objects.filter(name=name).first()
    if origin is None:
        raise InvalidOffsets({"from_channel": [f"No channel is named {name!r}."]})
    found = _call(get_runtime().offsets, _connector_id(origin), origin.checkpoint_key)
    return f"channel {name!r}", found.offsets


def _read_offsets(offsets: Sequence[SourceOffset], reads) -> tuple[SourceOffset, ...]:
    """``offsets`` by topic and partition, if the channel reads every topic named; else
    :class:`InvalidOffsets` naming each one (``offsets[1].partition.topic``)."""
    errors = {
        f"offsets[{index}].partition.topic": [f"The channel does not read topic {o.topic!r}."]
        for index, o in enumerate(offsets)
        if not reads(o.topic)
    }
    if errors:
        raise InvalidOffsets(errors)
    return tuple(sorted(offsets, key=lambda o: (o.topic, o.partition)))


#: A time no record has (Kafka timestamps are int64 milliseconds): every partition's first
#: record at or after it is none, so the runtime answers each partition's end offset.
_FAR_FUTURE_MS = 2**62


def _within_partitions(spec: dict[str, Any], offsets: Sequence[SourceOffset]) -> None:
    """Each offset is at most its partition's end offset (the offset the next record written
    gets), and names a partition its topic has, else :class:`InvalidOffsets` naming each one
    by its place in the request (``offsets[0].offset.offset``). Past the end the channel would
    wait for records that are not there, then skip the first ones written. A topic the brokers
    do not list (not created yet) is left to the runtime, which refuses its partitions."""
    _starts, ends = _call(get_runtime().window_offsets, spec, _FAR_FUTURE_MS, _FAR_FUTURE_MS)
    end_of = {(o.topic, o.partition): o.offset for o in ends}
    known_topics = {o.topic for o in ends}
    errors: dict[str, list[str]] = {}
    for index, o in enumerate(offsets):
        end = end_of.get((o.topic, o.partition))
        if end is None and o.topic in known_topics:
            errors[f"offsets[{index}].partition.partition"] = [
                f"Topic {o.topic!r} has no partition {o.partition}."
            ]
        elif end is not None and o.offset > end:
            errors[f"offsets[{index}].offset.offset"] = [
                f"Past the end of {o.topic}/{o.partition}: its end offset is {end} (the "
                f"next record written gets it); give {end} or less."
            ]
    if errors:
        raise InvalidOffsets(errors)


def _apply(channel: Channel, change: OffsetChange, actor: str, reason: str) -> None:
    """Hand the change to the runtime and record it (the channel is locked)."""
    state = channel.target_state
    record_channel(channel, actor, from_state=state, to_state=state, reason=reason)
    _call(get_runtime().alter_offsets, _connector_id(channel), change)


def _describe(offsets: tuple[SourceOffset, ...] | list[SourceOffset]) -> str:
    shown = ", ".join(f"{o.topic}/{o.partition} → {o.offset}" for o in offsets[:_LISTED_PARTITIONS])
    more = len(offsets) - _LISTED_PARTITIONS
    return shown + (f" and {more} more partition(s)" if more > 0 else "")


def _iso(millis: int | None) -> str:
    moment = datetime.fromtimestamp((millis or 0) / 1000, tz=UTC)
    return moment.isoformat(timespec="milliseconds").replace("+00:00", "Z")


def _call(method, *args: Any) -> Any:
    """Call the runtime; unreachable runtime or Kafka is :class:`RuntimeUnavailable`, a
    request the runtime cannot serve is :class:`InvalidTransition`."""
    with runtime_errors():
        return method(*args)
