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

Silence is not always danger. A member's session can expire only on a live broker that
coordinates its group, and a broker that becomes the coordinator (the new leader of the
group's ``__consumer_offsets`` partition, after the old one died) gives every member a whole
session from the moment it loaded the group (Kafka's ``onLoaded`` reschedules each classic
member's heartbeat expiry). So when a broker's metadata, asked at ``t``, names no leader for
that partition, or names one whose listener refuses connections (its process is gone), no
coordinator that could expire the member loaded the group before ``t - METADATA_LAG``: the
fence may count its silence from there (:meth:`CoordinatorContact.vacated`). A member whose
coordinator broker was killed thus rides out the coordinator's move instead of stopping
every channel; one cut off from the cluster (no metadata), or from its coordinator alone
(packets dropped, not refused), fences as before. The ride-out is capped
(``ride_out``): metadata from a broker itself cut off from the cluster's controller could be
stale for longer than ``METADATA_LAG``.
"""

from __future__ import annotations

import json
import struct
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from runtime_adapter.kafka import FailoverWait

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


METADATA_LAG = 1.0
"""How far behind its cluster's controller a live broker's metadata is taken to be, at most
(seconds): a leader elected that long before a broker's answer may not be in it yet."""


class CoordinatorContact:
    """The latest answer of the coordinator seen so far (monotonic seconds), and the latest
    moment the group was seen with no live coordinator (see the module's description).

    ``ride_out``: how much later than the last answer a vacancy may move the start of the
    silence, at most."""

    def __init__(self, now: float, ride_out: float = 0.0) -> None:
        self.last = now
        self.vacant = float("-inf")
        self.ride_out = ride_out

    def heard(self, at: float) -> None:
        """An answer at ``at`` (an assignment, for instance); earlier ones change nothing."""
        self.last = max(self.last, at)

    def vacated(self, asked_at: float) -> None:
        """A broker asked at ``asked_at`` said the group had no live coordinator."""
        self.vacant = max(self.vacant, asked_at - METADATA_LAG)

    def unanswered(self, now: float) -> float:
        """Seconds since the coordinator's last answer, whatever the vacancies."""
        return max(0.0, now - self.last)

    def observe(self, raw_stats: str) -> None:
        """Take one statistics report of librdkafka (its JSON)."""
        answer = last_coordinator_answer(json.loads(raw_stats))
        if answer is not None:
            self.heard(answer)

    def silence(self, now: float) -> float:
        """Seconds of silence the fence counts: since the last answer, or since the latest
        vacancy seen (no later than ``ride_out`` after the last answer)."""
        since = max(self.last, min(self.vacant, self.last + self.ride_out))
        return max(0.0, now - since)


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


FAILOVER_ROOM = 2.0
"""Seconds a coordinator's move takes beyond the brokers' own waits (:class:`~runtime_adapter.
kafka.FailoverWait`): the new leader's election, loading the group, the members finding the
new coordinator. Measured in the fault suite: the group loaded 1.3 s after Kafka's default 9 s
broker session; with the active controller killed too, 0.7 s after the 6 s broker session that
the new controller (elected 2.0 s after the kill) counted from its own start."""


def slow_failover(session_timeout: float, wait: FailoverWait | None) -> str | None:
    """Why the group's session is too short for a coordinator broker's death, or ``None``.

    librdkafka drops a member's assignment (``on_lost``) once its session timeout passes
    without an answer from the coordinator, whatever the broker thinks; a dead coordinator's
    partition moves after the brokers' :class:`~runtime_adapter.kafka.FailoverWait` and a
    little more. A session no longer than that loses every member's slots whenever the
    coordinator's broker dies, the ride-out notwithstanding."""
    if wait is None:
        return None
    needed = wait.total + FAILOVER_ROOM
    if session_timeout > needed:
        return None
    election = (
        f", after electing a new controller when the dead broker was the active one (up to "
        f"{wait.controller_election:g} s: controller.quorum.fetch.timeout.ms and "
        f"controller.quorum.election.timeout.ms)"
        if wait.controller_election
        else ""
    )
    return (
        f"the brokers move a dead broker's partitions after broker.session.timeout.ms = "
        f"{wait.broker_session * 1000:.0f} ms{election}, and the runtime group's coordinator "
        f"with them, about {needed:.0f} s after its death; SLUICE_RUNTIME_SESSION_TIMEOUT "
        f"({session_timeout:g} s) must be longer, or every runtime worker drops its channels "
        f"when the coordinator's broker dies. Lower those settings (Sluice's own brokers use "
        f"4000, 1000 and 1000) or raise SLUICE_RUNTIME_SESSION_TIMEOUT above {needed:.0f} s"
    )
