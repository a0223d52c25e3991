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

What this module and :mod:`console.services.mirrormaker2` share (the STOPPED rule, the
errors, the runtime calls) is :mod:`console.services.offsets_common`.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from django.contrib.auth.models import User
from django.db import transaction
from django.db.models import QuerySet

from console.errors import InvalidTransition
from console.models import Channel
from console.runtime import get_runtime
from console.services.lifecycle import actor_for
from console.services.offsets_common import (
    KAFKA_BACKED_SOURCES as KAFKA_BACKED_SOURCES,
)
from console.services.offsets_common import (
    InvalidOffsets as InvalidOffsets,
)
from console.services.offsets_common import (
    OffsetsNotSupported as OffsetsNotSupported,
)
from console.services.offsets_common import (
    apply_change,
    call_runtime,
    connector_id,
    deployed_spec,
    describe,
    kafka_spec,
    locked_if_stopped,
    require_checkpoint_for_http,
    topic_check,
)
from runtime_adapter.base import OffsetChange, SourceOffset

ALTERED = "The offsets for this channel have been altered successfully"
RESET = "The offsets for this channel have been reset successfully"
COPIED = "The offsets for this channel have been copied successfully"


@dataclass(frozen=True)
class ChannelOffsets:
    """KIP-875's answer: ``offsets`` per source partition, and a ``note`` when something
    about them needs saying (a pending change, no checkpoint yet, a source without offsets)."""

    offsets: list[SourceOffset]
    note: str = ""


def channel_offsets(channel: Channel) -> ChannelOffsets:
    """The channel's offsets as its next start will see them. Reads only; raises
    :class:`RuntimeUnavailable` when the runtime cannot be reached."""
    spec = deployed_spec(channel)
    source_type = spec["source"]["type"]
    if source_type not in KAFKA_BACKED_SOURCES:
        return ChannelOffsets(
            [],
            f"a {source_type} source keeps its position in the channel's checkpoint "
            "(which files it read, or how far it counted); it has no offsets to show or move",
        )
    found = call_runtime(get_runtime().offsets, connector_id(channel), channel.checkpoint_key)
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
        channel = locked_if_stopped(channel, "alter its offsets")
        spec = kafka_spec(channel)
        if timestamp_ms is not None:
            change = OffsetChange("timestamp", timestamp_ms=timestamp_ms)
        else:
            change = OffsetChange("offsets", _read_offsets(offsets or [], topic_check(spec)))
            _within_partitions(spec, offsets or [])
        require_checkpoint_for_http(channel, spec)
        if change.kind == "timestamp":
            reason = f"offsets set to the first records at or after {_iso(change.timestamp_ms)}"
        else:
            reason = f"offsets altered: {describe(change.offsets)}"
        apply_change(channel, change, actor or actor_for(user), reason)
    return ALTERED


def reset_channel_offsets(
    channel: Channel, *, user: User | None = None, actor: str | None = None
) -> str:
    """Forget the channel's position: its next start begins from the source's
    ``starting_offsets``. Returns Kafka Connect's message."""
    with transaction.atomic():
        channel = locked_if_stopped(channel, "reset its offsets")
        spec = kafka_spec(channel)
        starting = spec["source"].get("config", {}).get("starting_offsets", "latest")
        if spec["source"]["type"] == "http":
            starting = "earliest"
        reason = f"offsets reset: the next start begins from starting_offsets {starting}"
        apply_change(channel, OffsetChange("reset"), actor or actor_for(user), reason)
    return RESET


def copy_channel_offsets(
    channel: Channel,
    *,
    from_channel: str | None = None,
    from_consumer_group: str | None = None,
    origins: QuerySet[Channel] | None = None,
    user: User | None = None,
    actor: str | None = None,
) -> str:
    """Give the channel the offsets of another channel (``from_channel``) or of a consumer
    group (``from_consumer_group``), exactly one, for the topics it reads, so a pipeline
    moved to it neither skips nor replays events. Partitions the origin has no offset for
    keep their position. Returns Kafka Connect's message.

    ``from_channel`` is looked for among ``origins`` (default: every channel; the API passes
    the caller's teams' channels, so another team's reads as no channel of that name)."""
    if (from_channel is None) == (from_consumer_group is None):
        raise ValueError("give exactly one of from_channel and from_consumer_group")
    with transaction.atomic():
        channel = locked_if_stopped(channel, "copy offsets to it")
        spec = kafka_spec(channel)
        reads = topic_check(spec)
        if from_channel is not None:
            origin, offsets = _channel_origin(channel, from_channel, origins)
        else:
            origin = f"consumer group {from_consumer_group!r}"
            offsets = call_runtime(get_runtime().consumer_group_offsets, spec, from_consumer_group)
        kept = tuple(o for o in offsets if reads(o.topic))
        if not kept:
            raise InvalidTransition(
                f"{origin} has no committed offsets for the topics channel "
                f"{channel.name!r} reads: there is nothing to copy"
            )
        require_checkpoint_for_http(channel, spec)
        reason = f"offsets copied from {origin}: {describe(kept)}"
        apply_change(channel, OffsetChange("offsets", kept), actor or actor_for(user), reason)
    return COPIED


# -- helpers -----------------------------------------------------------------------------------


def _channel_origin(
    channel: Channel, name: str, origins: QuerySet[Channel] | None
) -> tuple[str, list[SourceOffset]]:
    if name == channel.name:
        raise InvalidOffsets({"from_channel": ["Name another channel than this one."]})
    origin = (origins if origins is not None else Channel.objects.all()).filter(name=name).first()
    if origin is None:
        raise InvalidOffsets({"from_channel": [f"No channel is named {name!r}."]})
    found = call_runtime(get_runtime().offsets, connector_id(origin), origin.checkpoint_key)
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
    _starts, ends = call_runtime(get_runtime().window_offsets, spec, _FAR_FUTURE_MS, _FAR_FUTURE_MS)
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


def _iso(millis: int | None) -> str:
    moment = datetime.fromtimestamp((millis or 0) / 1000, tz=UTC)
    return moment.isoformat(timespec="milliseconds").replace("+00:00", "Z")
