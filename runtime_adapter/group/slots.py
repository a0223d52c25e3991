"""Slots: the partitions of the runtime's config topic, the unit the group hands out.

A connector's slot is fixed by its id and the number of slots alone, with the hash Kafka's
Java clients use for keyed records (``Utils.murmur2``, then ``toPositive`` and modulo): a
record written by any Kafka tool with the connector id as its key, through the default
partitioner of the Java clients, lands in the same slot Sluice reads it from.
"""

from __future__ import annotations

from collections.abc import Iterable

_M = 0x5BD1E995
_SEED = 0x9747B28C
_MASK = 0xFFFFFFFF


def murmur2(data: bytes) -> int:
    """Kafka's ``Utils.murmur2`` of ``data`` as a signed 32-bit integer."""
    length = len(data)
    h = (_SEED ^ length) & _MASK
    whole = length - length % 4
    for i in range(0, whole, 4):
        k = int.from_bytes(data[i : i + 4], "little")
        k = (k * _M) & _MASK
        k ^= k >> 24
        k = (k * _M) & _MASK
        h = (h * _M) & _MASK
        h ^= k
    tail = data[whole:]
    if len(tail) == 3:
        h ^= tail[2] << 16
    if len(tail) >= 2:
        h ^= tail[1] << 8
    if tail:
        h ^= tail[0]
        h = (h * _M) & _MASK
    h ^= h >> 13
    h = (h * _M) & _MASK
    h ^= h >> 15
    return h - (1 << 32) if h & 0x80000000 else h


def slot_of(connector_id: str, slots: int) -> int:
    """The slot (config and status topic partition) of ``connector_id`` among ``slots``.

    Stable: the same id and number of slots give the same slot in every process and
    release, and the Java clients' default partitioner puts a record keyed by the id there.
    """
    if slots < 1:
        raise ValueError(f"slots must be at least 1, got {slots}")
    return (murmur2(connector_id.encode()) & 0x7FFFFFFF) % slots


def slots_of(connector_ids: Iterable[str], slots: int) -> dict[int, list[str]]:
    """The ids grouped by slot (only slots with an id appear)."""
    grouped: dict[int, list[str]] = {}
    for connector_id in connector_ids:
        grouped.setdefault(slot_of(connector_id, slots), []).append(connector_id)
    return grouped
