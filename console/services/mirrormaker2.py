"""Migration between MirrorMaker 2 and a replication channel (Kafka source → Kafka sink).

MM2's ``MirrorSourceConnector`` keeps, per source partition, the offset of the last record it
copied in its Kafka Connect offsets topic (``mm2-offsets.<source alias>.internal`` on its target
cluster; :mod:`runtime_adapter.mirrormaker2` reads and writes it byte for byte as Connect does):

* :func:`mirrormaker2_preview` shows them next to the channel's own position;
* :func:`take_over_from_mirrormaker2` gives a STOPPED channel the position right after them
  (the partitions of the topics it reads), so the channel continues where MM2 stopped: no
  gap, no duplicate;
* :func:`hand_back_to_mirrormaker2` writes a STOPPED channel's position in MM2's form, so a
  MirrorMaker 2 started next resumes where the channel stopped.

Stop MirrorMaker 2 before either move: a running MM2 keeps copying, and overwrites what the
hand-back wrote. The offsets topic must be on a Kafka cluster the channel already reads or
writes (an editor names no other broker here); its name and the alias pass allow-lists, and a
bad one is :class:`InvalidOffsets` keyed by the field's path.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from django.conf import settings
from django.contrib.auth.models import User
from django.db import transaction

from console.errors import InvalidTransition
from console.models import Channel
from console.runtime import get_runtime
from console.services.lifecycle import actor_for, record_channel
from console.services.offsets import COPIED
from console.services.offsets_common import (
    InvalidOffsets,
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
from runtime_adapter.base import MirrorOffsetsTopic, OffsetChange, SourceOffset
from runtime_adapter.mirrormaker2 import ALIAS, spec_clusters

HANDED_BACK = "The offsets for this channel have been handed back to MirrorMaker 2 successfully"
_TOPIC = re.compile(r"[A-Za-z0-9._-]{1,249}")
_MM2_OFFSETS = re.compile(rf"mm2-offsets\.(?:{ALIAS.pattern})\.internal")
"""MirrorMaker 2's own offsets topic name, for any cluster alias."""


@dataclass(frozen=True)
class MirrorPreview:
    """MM2's offsets for the topics the channel reads, next to the channel's."""

    where: MirrorOffsetsTopic
    mirrormaker2: list[SourceOffset]
    """MM2's position as NEXT offsets (its last copied offset + 1)."""
    channel: list[SourceOffset]
    """The channel's position as its next start will see it."""


@dataclass(frozen=True)
class HandBack:
    message: str
    where: MirrorOffsetsTopic
    offsets: list[SourceOffset]
    """What was written, in MirrorMaker 2's form: the LAST copied offset (-1: none)."""
    created_topic: bool


def mirror_topic(
    channel: Channel,
    *,
    source_alias: str,
    bootstrap_servers: str | None = None,
    offsets_topic: str | None = None,
    prefix: str = "",
) -> MirrorOffsetsTopic:
    """Where MM2's offsets are for this channel; :class:`InvalidOffsets` keyed by
    ``prefix`` + field name for an alias, cluster or topic that is not allowed."""
    spec = kafka_spec(channel)
    if spec["source"]["type"] != "kafka":
        raise InvalidTransition(
            f"channel {channel.name!r} reads its http ingest topic: only a channel with a Kafka "
            "source can take over from or hand back to MirrorMaker 2"
        )
    errors: dict[str, list[str]] = {}
    if not ALIAS.fullmatch(source_alias):
        errors[f"{prefix}source_alias"] = [
            "A cluster alias: 1-64 letters, digits, '_' or '-', starting with a letter or digit."
        ]
        if offsets_topic is None:  # the default name is made of it: one error is enough
            offsets_topic = "mm2-offsets.invalid.internal"
    clusters = list(spec_clusters(spec))
    servers = bootstrap_servers if bootstrap_servers is not None else clusters[0]
    if servers not in clusters:
        errors[f"{prefix}bootstrap_servers"] = [
            "Must be the brokers of the channel's Kafka source or sink: "
            + ", ".join(repr(c) for c in clusters)
            + "."
        ]
    topic = offsets_topic if offsets_topic is not None else f"mm2-offsets.{source_alias}.internal"
    reads = topic_check(spec)
    sink_topic = (spec.get("sink") or {}).get("config", {}).get("topic")
    if not _TOPIC.fullmatch(topic) or topic in (".", "..") or topic.startswith("__"):
        errors[f"{prefix}offsets_topic"] = [
            "A Kafka topic name (1-249 letters, digits, '.', '_' or '-'), not an internal "
            "topic (__...)."
        ]
    elif reads(topic) or topic == sink_topic:
        errors[f"{prefix}offsets_topic"] = [
            "This is a topic the channel reads or writes, not MirrorMaker 2's offsets topic."
        ]
    elif not (_MM2_OFFSETS.fullmatch(topic) or topic in settings.SLUICE_MM2_OFFSETS_TOPICS):
        errors[f"{prefix}offsets_topic"] = [
            "MirrorMaker 2's offsets topic is mm2-offsets.<source alias>.internal; another "
            "name must be one the operator allowed (SLUICE_MM2_OFFSETS_TOPICS), so no other "
            "topic is read or written as one."
        ]
    if errors:
        raise InvalidOffsets(errors)
    return MirrorOffsetsTopic(source_alias, topic, servers)


def mirrormaker2_preview(
    channel: Channel,
    *,
    source_alias: str,
    bootstrap_servers: str | None = None,
    offsets_topic: str | None = None,
) -> MirrorPreview:
    """Reads only (the channel may be running)."""
    where = mirror_topic(
        channel,
        source_alias=source_alias,
        bootstrap_servers=bootstrap_servers,
        offsets_topic=offsets_topic,
    )
    spec = deployed_spec(channel)
    mm2 = call_runtime(get_runtime().mirrormaker2_offsets, spec, where)
    found = call_runtime(get_runtime().offsets, connector_id(channel), channel.checkpoint_key)
    return MirrorPreview(where, mm2, found.offsets)


def take_over_from_mirrormaker2(
    channel: Channel,
    *,
    source_alias: str,
    bootstrap_servers: str | None = None,
    offsets_topic: str | None = None,
    user: User | None = None,
    actor: str | None = None,
) -> str:
    """The channel's next start resumes right after the last records MM2 copied (partitions
    MM2 has no offset for keep their position). Returns Kafka Connect's message."""
    with transaction.atomic():
        channel = locked_if_stopped(channel, "copy offsets to it")
        where = mirror_topic(
            channel,
            source_alias=source_alias,
            bootstrap_servers=bootstrap_servers,
            offsets_topic=offsets_topic,
            prefix="from_mirrormaker2.",
        )
        spec = deployed_spec(channel)
        offsets = call_runtime(get_runtime().mirrormaker2_offsets, spec, where)
        if not offsets:
            raise InvalidTransition(
                f"MirrorMaker 2 has no offsets for cluster alias {source_alias!r} in "
                f"{where.topic!r} on {where.bootstrap_servers} for the topics channel "
                f"{channel.name!r} reads: there is nothing to take over"
            )
        require_checkpoint_for_http(channel, spec)
        reason = (
            f"offsets copied from MirrorMaker 2 ({where.topic} on {where.bootstrap_servers}, "
            f"alias {source_alias}): {describe(offsets)}"
        )
        apply_change(
            channel, OffsetChange("offsets", tuple(offsets)), actor or actor_for(user), reason
        )
    return COPIED


def hand_back_to_mirrormaker2(
    channel: Channel,
    *,
    source_alias: str,
    bootstrap_servers: str | None = None,
    offsets_topic: str | None = None,
    user: User | None = None,
    actor: str | None = None,
) -> HandBack:
    """Write the STOPPED channel's position into MM2's offsets topic (created when missing),
    so MirrorMaker 2 resumes where the channel stopped. Stop MM2 first."""
    with transaction.atomic():
        channel = locked_if_stopped(channel, "hand its offsets back")
        where = mirror_topic(
            channel,
            source_alias=source_alias,
            bootstrap_servers=bootstrap_servers,
            offsets_topic=offsets_topic,
        )
        spec = deployed_spec(channel)
        found = call_runtime(get_runtime().offsets, connector_id(channel), channel.checkpoint_key)
        if found.pending is not None and found.pending.kind != "offsets":
            raise InvalidTransition(
                f"channel {channel.name!r} has a {found.pending.kind} of its offsets waiting for "
                "its next start: its position is not known yet; start it once, or alter its "
                "offsets explicitly, then hand back"
            )
        if not found.offsets:
            raise InvalidTransition(
                f"channel {channel.name!r} has no position yet (it never committed a batch): "
                "there is nothing to hand back"
            )
        created = call_runtime(get_runtime().write_mirrormaker2_offsets, spec, where, found.offsets)
        written = [SourceOffset(o.topic, o.partition, o.offset - 1) for o in found.offsets]
        reason = (
            f"offsets handed back to MirrorMaker 2 ({where.topic} on {where.bootstrap_servers}, "
            f"alias {source_alias}; last copied offsets): {describe(written)}"
        )
        state = channel.target_state
        record_channel(
            channel, actor or actor_for(user), from_state=state, to_state=state, reason=reason
        )
    return HandBack(HANDED_BACK, where, written, created)
