"""Where a connector's query starts: its checkpoint made ready, the console's pending offset
change applied to it, and a Kafka source's first start resolved once and kept.

A :class:`QueryStart` does this one job for a hosted connector
(:class:`~runtime_adapter.host.hosted.HostedConnector`); it reads and writes only the store's
start positions and offset changes, and tells its connector what to wait for rather than
reporting it.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from runtime_adapter.checkpoint import discard_unfinished_start, has_batches, write_atomically
from runtime_adapter.kafka import GroupCommitter, PartitionInfo, list_partitions
from runtime_adapter.offsets import apply_change, kafka_source, starting_position
from runtime_adapter.store import RedisStore, offset_change_token

log = logging.getLogger("sluice.driver")

APPLIED_CHANGE = ".sluice-offset-change"
"""A file in a checkpoint naming the last offset change applied to it (its token)."""


@dataclass(frozen=True)
class Pinned:
    """The spec a query starts from (``None`` while source topics are missing)."""

    spec: dict[str, Any] | None
    partitions: list[PartitionInfo] | None = None
    """The source's partitions when they were listed (a Kafka source's first start)."""
    missing: list[str] = field(default_factory=list)
    """Source topics that do not exist yet: the query waits for them."""
    servers: str = ""


class QueryStart:
    """One connector's start position (see the module docstring)."""

    def __init__(self, store: RedisStore, connector_id: str) -> None:
        self.store = store
        self.connector_id = connector_id
        self.waited: list[str] = []
        """Topics the last look found missing: read from their beginning once they exist."""

    def pinned(self, spec: dict[str, Any], checkpoint: Path) -> Pinned:
        """The spec to start from, its Kafka source's start resolved once and kept.

        A query whose checkpoint has no batch yet resolves ``latest`` when it starts: a
        restart before its first batch would resolve it again and skip what came in between.
        So the first start resolves it to offsets, kept in the store until the connector is
        deleted or its offsets reset; later starts before the first batch reuse them. A source
        topic that does not exist yet is waited for (``missing``); when it appears it is read
        from its beginning: everything in it came after the start.
        """
        from runtime_adapter.offsets import with_starting_offsets

        source = kafka_source(spec)
        if source is None or source.topics is None or source.settings is None:
            return Pinned(spec)  # no Kafka offsets, a topic pattern (Spark waits), or TLS
        if has_batches(checkpoint):
            return Pinned(spec)  # the checkpoint decides
        partitions = list_partitions(
            source.bootstrap_servers, source.topics, settings=source.settings
        )
        present = {p.topic for p in partitions}
        missing = [topic for topic in source.topics if topic not in present]
        if missing:
            if missing != self.waited:
                log.info(
                    "waiting for source topic(s) %s on %s",
                    ", ".join(missing),
                    source.bootstrap_servers,
                )
            self.waited = missing
            return Pinned(None, missing=missing, servers=source.bootstrap_servers)
        kept = self.store.start_position(self.connector_id)
        waited, self.waited = self.waited, []
        if kept is None and source.starting != "latest" and not waited:
            return Pinned(spec)  # earliest, a timestamp or offsets: the same at every start
        position: dict[tuple[str, int], int] = {
            (topic, int(partition)): offset
            for topic, offsets in (kept or {}).items()
            for partition, offset in offsets.items()
        }
        unknown = [p for p in partitions if (p.topic, p.partition) not in position]
        if unknown:
            fresh = [p for p in unknown if p.topic not in waited]
            resolved = starting_position(source, fresh) if fresh else {}
            for partition in unknown:  # a topic created after the start: from its beginning
                key = (partition.topic, partition.partition)
                position[key] = resolved.get(key, -2)
            self.store.put_start_position(self.connector_id, _by_topic(position))
        return Pinned(with_starting_offsets(spec, position), partitions)

    def prepare_checkpoint(
        self,
        spec: dict[str, Any],
        checkpoint: Path,
        empty_batches: Callable[[range], None],
        committer: GroupCommitter | None,
        pending: str | None = None,
    ) -> dict[str, Any]:
        """Make ``checkpoint`` ready for the query to start; return the spec to build.

        What a first batch killed half-written left behind is discarded (Spark would refuse
        the folder), then the console's pending offset change is applied
        (:meth:`apply_offset_change`).
        """
        checkpoint.mkdir(parents=True, exist_ok=True)
        removed = discard_unfinished_start(checkpoint)
        if removed:
            log.warning(
                "checkpoint %s had no batch but a first batch's leftovers in %s: discarded",
                checkpoint,
                ", ".join(removed),
            )
        return self.apply_offset_change(spec, checkpoint, empty_batches, committer, pending)

    def apply_offset_change(
        self,
        spec: dict[str, Any],
        checkpoint: Path,
        empty_batches: Callable[[range], None],
        committer: GroupCommitter | None,
        pending: str | None = None,
    ) -> dict[str, Any]:
        """Apply the offset change the console left for this connector (KIP-875's alter or
        reset while it was stopped) before the query starts; return the spec to build.

        ``pending`` is the deployment's word on it (:attr:`Deployment.offset_change`): ``""``
        none is pending, a token one is, ``None`` unknown. The store is read only for a change
        not known to be absent and not applied to this checkpoint yet (its token is kept in
        the checkpoint, :data:`APPLIED_CHANGE`): a start needs no Redis otherwise.

        ``empty_batches`` records batches that read nothing in the checkpoint. The new
        position is committed to the channel's consumer group (``committer``) at once, so
        Kafka tools show it even before a batch runs. The change is removed only after the
        checkpoint holds it: a crash in between applies it again, to the same effect. Any
        start position kept from a first start is dropped: the change decides now.
        """
        if pending == "" or (pending and _applied(checkpoint) == pending):
            return spec
        found = self.store.offset_change(self.connector_id)
        if found is None:
            return spec
        change, raw = found
        applied = apply_change(change, spec, checkpoint, empty_batches)
        log.info(
            "applied offset change %s: batch %s, position %s",
            change.kind,
            applied.batch_id,
            applied.position,
        )
        if committer is not None and applied.position:
            try:
                committer.commit(applied.position)
            except Exception as exc:  # lag display must never take a channel down
                log.warning("could not commit the new offsets to the consumer group: %s", exc)
        write_atomically(checkpoint / APPLIED_CHANGE, offset_change_token(raw))
        self.store.clear_start_position(self.connector_id)
        self.store.clear_offset_change(self.connector_id, raw)
        return applied.spec


def _applied(checkpoint: Path) -> str | None:
    """The token of the offset change last applied to ``checkpoint``, if any."""
    try:
        return (checkpoint / APPLIED_CHANGE).read_text().strip()
    except FileNotFoundError:
        return None


def _by_topic(position: dict[tuple[str, int], int]) -> dict[str, dict[str, int]]:
    offsets: dict[str, dict[str, int]] = {}
    for (topic, number), offset in sorted(position.items()):
        offsets.setdefault(topic, {})[str(number)] = offset
    return offsets
