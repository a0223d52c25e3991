"""The self-fence's input: when did the group coordinator last answer this member?

librdkafka keeps one connection to the group coordinator per consumer (its logical broker
``GroupCoordinator``), over which the member's heartbeats go every heartbeat interval; its
statistics give, per connection, the microseconds since the last bytes were received
(``rxidle``) as of ``ts``, a reading of librdkafka's monotonic clock (``CLOCK_MONOTONIC``,
the clock of :func:`time.monotonic` on Linux). ``ts - rxidle`` is therefore the moment of the
coordinator's last answer on this host's monotonic clock: no other host's clock is read.

The coordinator took that heartbeat no earlier than one round trip before that moment, so
the broker cannot expire the member's session before ``last answer - round trip + session
timeout``; a member that fences itself at ``last answer + session timeout - margin`` is safe
as long as stopping its channels takes less than ``margin - round trip``.
"""

from __future__ import annotations

import json
import struct
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

COORDINATOR = "GroupCoordinator"
"""The name librdkafka gives its connection to the group coordinator in statistics."""


def last_coordinator_answer(stats: Mapping[str, Any]) -> float | None:
    """The monotonic time (seconds) of the coordinator's last answer in librdkafka
    ``stats``, or ``None`` when they show none: not connected yet, or the consumer is
    looking for its coordinator (``cgrp.state`` other than ``up``: a broker that answers
    ``NOT_COORDINATOR`` is not keeping the session alive)."""
    ts = stats.get("ts")
    if not isinstance(ts, int):
        return None
    if (stats.get("cgrp") or {}).get("state", "up") != "up":
        return None
    for name, broker in (stats.get("brokers") or {}).items():
        if not name.startswith(COORDINATOR) or broker.get("nodeid") != -1:
            continue
        idle = broker.get("rxidle")
        if isinstance(idle, int) and idle >= 0:
            return (ts - idle) / 1_000_000
    return None


class CoordinatorContact:
    """The latest answer of the coordinator seen so far (monotonic seconds)."""

    def __init__(self, now: float) -> None:
        self.last = now

    def heard(self, at: float) -> None:
        """An answer at ``at`` (an assignment, for instance); earlier ones change nothing."""
        self.last = max(self.last, at)

    def observe(self, raw_stats: str) -> None:
        """Take one statistics report of librdkafka (its JSON)."""
        answer = last_coordinator_answer(json.loads(raw_stats))
        if answer is not None:
            self.heard(answer)

    def silence(self, now: float) -> float:
        return max(0.0, now - self.last)


@dataclass(frozen=True)
class GroupMetadata:
    """A member's identity in the group as the broker will check it: its member id and the
    generation it joined (librdkafka's serialised consumer group metadata)."""

    group_id: str
    generation: int
    member_id: str


_MAGIC = b"CGMDv2:"


def parse_group_metadata(raw: bytes) -> GroupMetadata:
    """Read librdkafka's serialised consumer group metadata (``CGMDv2:`` format: generation
    as a native int32, then NUL-terminated group id and member id). Raises ``ValueError`` for
    another format; the bytes themselves are what the transactional fence sends."""
    if not raw.startswith(_MAGIC) or len(raw) < len(_MAGIC) + 4:
        raise ValueError(f"unknown consumer group metadata format: {raw[:8]!r}")
    (generation,) = struct.unpack_from("=i", raw, len(_MAGIC))
    rest = raw[len(_MAGIC) + 4 :]
    group_id, _, rest = rest.partition(b"\0")
    member_id, _, _ = rest.partition(b"\0")
    return GroupMetadata(group_id.decode(), generation, member_id.decode())
