"""Desired state in the config topic: what the console wants each connector to be.

One record per connector, keyed by its id, in the partition of its slot
(:func:`~runtime_adapter.group.slots.slot_of`); the value is the JSON of its
:class:`~runtime_adapter.base.Deployment` (spec, target state, generation, revision, …), a
tombstone when it is deleted. The topic is compacted, so its latest record per key is the
whole desired state. :class:`DesiredStateWriter` is the console's side; a runtime worker
reads only the slots it owns, through its :class:`~runtime_adapter.group.member.GroupMember`,
into a :class:`DesiredSlots`.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from dataclasses import asdict, dataclass, fields
from typing import Any

from runtime_adapter.base import Deployment, RuntimeUnavailable
from runtime_adapter.group.settings import GroupConfig
from runtime_adapter.group.slots import slot_of
from runtime_adapter.kafka import DurableProducer
from runtime_adapter.states import TargetState

_PLACEMENT_FIELDS = ("worker_id",)
"""Deployment fields the config topic does not carry: where a connector runs is the group's."""


def deployment_to_json(deployment: Deployment) -> bytes:
    data = {k: v for k, v in asdict(deployment).items() if k not in _PLACEMENT_FIELDS}
    data["target_state"] = deployment.target_state.value
    return json.dumps(data, separators=(",", ":"), sort_keys=True).encode()


def deployment_from_json(raw: bytes) -> Deployment:
    """A deployment as :func:`deployment_to_json` wrote it; fields this code does not know
    (written by a newer console) are left out."""
    data: dict[str, Any] = json.loads(raw)
    names = {f.name for f in fields(Deployment)} - set(_PLACEMENT_FIELDS)
    known = {k: v for k, v in data.items() if k in names}
    known["target_state"] = TargetState(known["target_state"])
    return Deployment(**known)


class DesiredStateNotWritten(RuntimeUnavailable):
    """Kafka did not confirm a desired-state record (the console's write may be retried)."""


class DesiredStateWriter:
    """Writes deployments to the config topic, each in its slot, waiting for Kafka's
    confirmation (acks=all, idempotent): the console's one way to change desired state."""

    def __init__(self, config: GroupConfig, *, delivery_timeout: float = 10.0) -> None:
        self._config = config
        self._producer = DurableProducer(config.bootstrap, delivery_timeout)

    def put(self, deployments: Iterable[Deployment]) -> None:
        """Write every deployment (one record each, in the partition of its slot:
        :attr:`Deployment.slot`, else its home slot); raises :class:`DesiredStateNotWritten`
        naming those Kafka did not confirm."""
        self._write([(d.connector_id, self.slot(d), deployment_to_json(d)) for d in deployments])

    def delete(
        self, connector_ids: Iterable[str], slots: Mapping[str, int | None] | None = None
    ) -> None:
        """Write a tombstone for every id, in ``slots[id]`` (the slot it was placed in) or its
        home slot: the owner of that slot stops it and forgets it."""
        placed = slots or {}
        self._write([(cid, self._slot_of(cid, placed.get(cid)), None) for cid in connector_ids])

    def slot(self, deployment: Deployment) -> int:
        """The slot ``deployment`` is written to."""
        return self._slot_of(deployment.connector_id, deployment.slot)

    def _slot_of(self, connector_id: str, placed: int | None) -> int:
        if placed is None:
            return slot_of(connector_id, self._config.slots)
        if not 0 <= placed < self._config.slots:
            raise ValueError(
                f"slot {placed} of connector {connector_id} is outside the runtime's "
                f"{self._config.slots} slots"
            )
        return placed

    def _write(self, records: list[tuple[str, int, bytes | None]]) -> None:
        if not records:
            return
        answers = self._producer.produce(
            self._config.config_topic,
            [(key, value) for key, _, value in records],
            partitions=[slot for _, slot, _ in records],
        )
        failed = {key: why for (key, _, _), why in zip(records, answers, strict=True) if why}
        if failed:
            raise DesiredStateNotWritten(
                f"desired state of {len(failed)} connector(s) not confirmed by Kafka: "
                + "; ".join(f"{key}: {why}" for key, why in sorted(failed.items()))
            )

    def close(self) -> None:
        self._producer.close()


@dataclass(frozen=True)
class DesiredChange:
    """A connector's desired state changed in a slot its worker owns (``None``: deleted)."""

    slot: int
    connector_id: str
    deployment: Deployment | None


class DesiredSlots:
    """The latest deployment per connector of the slots a worker owns.

    A gained slot is read from its beginning; it is *ready* once read to the end it had
    when gained (:meth:`caught_up`), and only then are its records reported as changes, so
    a worker never starts a connector from a record that a later one in the same slot
    overrides. Not thread-safe: the member's poll loop alone calls it.
    """

    def __init__(self) -> None:
        self._slots: dict[int, dict[str, Deployment]] = {}
        self._ready: set[int] = set()
        self.positions: dict[int, int] = {}
        """Per owned slot, the offset after the last record read."""

    def gain(self, slots: Iterable[int]) -> None:
        for slot in slots:
            self._slots[slot] = {}
            self._ready.discard(slot)
            self.positions[slot] = 0

    def drop(self, slots: Iterable[int]) -> None:
        for slot in slots:
            self._slots.pop(slot, None)
            self._ready.discard(slot)
            self.positions.pop(slot, None)

    def apply(
        self, slot: int, connector_id: str, value: bytes | None, offset: int
    ) -> DesiredChange | None:
        """Take one record of ``slot``; the change to act on, or ``None`` (a slot not owned
        or not ready yet, or a record equal to what was there)."""
        table = self._slots.get(slot)
        if table is None:
            return None
        self.positions[slot] = offset + 1
        deployment = None if value is None else deployment_from_json(value)
        previous = table.pop(connector_id, None)
        if deployment is not None:
            table[connector_id] = deployment
        if slot not in self._ready or previous == deployment:
            return None
        return DesiredChange(slot, connector_id, deployment)

    def caught_up(self, slot: int) -> Mapping[str, Deployment] | None:
        """Mark ``slot`` read to its end; its deployments the first time, else ``None``."""
        if slot not in self._slots or slot in self._ready:
            return None
        self._ready.add(slot)
        return dict(self._slots[slot])

    def ready(self, slot: int) -> bool:
        return slot in self._ready

    def owned(self) -> frozenset[int]:
        return frozenset(self._slots)

    def deployments(self) -> dict[str, Deployment]:
        """Every deployment of every owned slot, ready or not."""
        return {cid: d for table in self._slots.values() for cid, d in table.items()}
