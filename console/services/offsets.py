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
:class:`OffsetsNotSupported`. Bad requests raise :class:`InvalidOffsets` with messages keyed
by the path of each bad field (``offsets[0].partition.topic``).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from django.contrib.auth.models import AbstractBaseUser
from django.db import transaction

from console.choices import ConnectorState, TargetState
from console.crypto import decrypt_spec
from console.models import Channel, Connector
from console.runtime import get_runtime
from console.services.errors import InvalidTransition, ServiceError, runtime_errors
from console.services.ingest import with_ingest_fields
from console.services.lifecycle import actor_for, record_channel
from pipelines.spec.configs.kafka import epoch_millis
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
    body: Any,
    *,
    user: AbstractBaseUser | None = None,
    actor: str | None = None,
) -> str:
    """Set explicit offsets (``{"offsets": [...]}``: the partitions named move, the others
    keep their position) or a time (``{"timestamp": epoch ms or RFC 3339}``: every partition
    moves to its first record at or after it, or its end). Returns Kafka Connect's message."""
    with transaction.atomic():
        channel = _stopped(channel, "alter its offsets")
        spec = _kafka_spec(channel)
        change = _parse_alter(body, _topic_check(spec))
        _require_checkpoint_for_http(channel, spec)
        if change.kind == "timestamp":
            reason = f"offsets set to the first records at or after {_iso(change.timestamp_ms)}"
        else:
            reason = f"offsets altered: {_describe(change.offsets)}"
        _apply(channel, change, actor or actor_for(user), reason)
    return ALTERED


def reset_channel_offsets(
    channel: Channel, *, user: AbstractBaseUser | None = None, actor: str | None = None
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
    body: Any,
    *,
    user: AbstractBaseUser | None = None,
    actor: str | None = None,
) -> str:
    """Give the channel the offsets of another channel (``{"from_channel": name}``) or of a
    consumer group (``{"from_consumer_group": group}``), for the topics it reads, so a
    pipeline moved to it neither skips nor replays events. Partitions the origin has no
    offset for keep their position. Returns Kafka Connect's message."""
    errors: dict[str, list[str]] = {}
    if not isinstance(body, Mapping):
        raise InvalidOffsets({"non_field_errors": ["Must be a JSON object."]})
    unknown = sorted(set(body) - {"from_channel", "from_consumer_group"})
    for key in unknown:
        errors[key] = ["Unknown field: give from_channel or from_consumer_group."]
    given = [key for key in ("from_channel", "from_consumer_group") if key in body]
    if len(given) != 1:
        errors.setdefault("non_field_errors", []).append(
            "Give exactly one of from_channel and from_consumer_group."
        )
    for key in given:
        if not isinstance(body[key], str) or not body[key].strip():
            errors[key] = ["Must be a non-empty string."]
    if errors:
        raise InvalidOffsets(errors)
    with transaction.atomic():
        channel = _stopped(channel, "copy offsets to it")
        spec = _kafka_spec(channel)
        reads = _topic_check(spec)
        if "from_channel" in body:
            origin, offsets = _channel_origin(channel, body["from_channel"])
        else:
            group = body["from_consumer_group"]
            origin = f"consumer group {group!r}"
            offsets = _call(get_runtime().consumer_group_offsets, spec, group)
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
    revision = channel.latest_revision_obj()
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


def _parse_alter(body: Any, reads) -> OffsetChange:
    if not isinstance(body, Mapping):
        raise InvalidOffsets({"non_field_errors": ["Must be a JSON object."]})
    errors: dict[str, list[str]] = {}
    for key in sorted(set(body) - {"offsets", "timestamp"}):
        errors[key] = ["Unknown field: give offsets or timestamp."]
    if ("offsets" in body) == ("timestamp" in body):
        errors.setdefault("non_field_errors", []).append(
            "Give exactly one of offsets (a list) and timestamp (epoch ms or RFC 3339)."
        )
    if errors:
        raise InvalidOffsets(errors)
    if "timestamp" in body:
        return OffsetChange("timestamp", timestamp_ms=_parse_timestamp(body["timestamp"]))
    return OffsetChange("offsets", _parse_offsets(body["offsets"], reads))


def _parse_timestamp(value: Any) -> int:
    if isinstance(value, bool) or not isinstance(value, (int, str)):
        raise InvalidOffsets({"timestamp": ["Must be epoch milliseconds or RFC 3339 text."]})
    try:
        return epoch_millis(value)
    except ValueError as exc:
        raise InvalidOffsets({"timestamp": [str(exc)]}) from None


def _parse_offsets(items: Any, reads) -> tuple[SourceOffset, ...]:
    if not isinstance(items, list) or not items:
        raise InvalidOffsets({"offsets": ["Must be a non-empty list."]})
    errors: dict[str, list[str]] = {}
    found: dict[tuple[str, int], int] = {}
    for index, item in enumerate(items):
        path = f"offsets[{index}]"
        parsed = _parse_item(item, path, reads, errors)
        if parsed is None:
            continue
        key, offset = parsed
        if key in found:
            errors[f"{path}.partition"] = [f"Partition {key[0]}/{key[1]} is named twice."]
        found[key] = offset
    if errors:
        raise InvalidOffsets(errors)
    return tuple(SourceOffset(t, p, o) for (t, p), o in sorted(found.items()))


def _parse_item(
    item: Any, path: str, reads, errors: dict[str, list[str]]
) -> tuple[tuple[str, int], int] | None:
    """One ``{"partition": {"topic", "partition"}, "offset": {"offset"}}``; Kafka Connect's
    sink spelling (``kafka_topic``, ``kafka_partition``, ``kafka_offset``) is accepted too."""
    if not isinstance(item, Mapping):
        errors[path] = ["Must be an object with partition and offset."]
        return None
    for key in sorted(set(item) - {"partition", "offset"}):
        errors[f"{path}.{key}"] = ["Unknown field."]
    partition, offset = item.get("partition"), item.get("offset")
    topic = number = position = None
    if not isinstance(partition, Mapping):
        errors[f"{path}.partition"] = ['Required: an object {"topic": ..., "partition": ...}.']
    else:
        topic = _field(partition, "topic", "kafka_topic")
        number = _field(partition, "partition", "kafka_partition")
        if not isinstance(topic, str) or not topic:
            errors[f"{path}.partition.topic"] = ["Required: a topic name."]
        elif not reads(topic):
            errors[f"{path}.partition.topic"] = [f"The channel does not read topic {topic!r}."]
        if not _is_count(number):
            errors[f"{path}.partition.partition"] = ["Required: a partition number (0 or more)."]
    if not isinstance(offset, Mapping):
        errors[f"{path}.offset"] = ['Required: an object {"offset": ...}.']
    else:
        position = _field(offset, "offset", "kafka_offset")
        if not _is_count(position):
            errors[f"{path}.offset.offset"] = [
                "Required: the next offset to read (0 or more); DELETE resets to starting_offsets."
            ]
    if any(key.startswith(path) for key in errors):
        return None
    return (topic, number), position


def _field(data: Mapping, name: str, alias: str) -> Any:
    return data.get(name, data.get(alias))


def _is_count(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value >= 0


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
