"""The runtime group on a real broker: slots shared, moved on a member's death, released only
after their channels stopped, fenced for a frozen member, self-fenced for a cut-off one, and
desired state read by slot.

Timings use a 6 s session (the brokers' least by default), 0.5 s heartbeats and a 2 s fence
margin: a member fences itself after 4 s without an answer from the coordinator.
"""

from __future__ import annotations

import logging
import signal
import time
import uuid
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path

import pytest

from runtime_adapter.base import Deployment
from runtime_adapter.group import (
    DesiredStateWriter,
    GroupConfig,
    GroupMember,
    NotOwner,
    RuntimeTopicMismatch,
    StatusFeedReader,
    StatusWriter,
    client_id_of,
    ensure_runtime_topics,
    slot_of,
    verify_runtime_topic,
)
from runtime_adapter.kafka import describe_topic, group_members
from runtime_adapter.states import TargetState
from tests.support.processes import wait_until
from tests.support.runtime_group import (
    GroupBroker,
    MemberProcess,
    RecordingListener,
    recording_member,
    start_group_broker,
)

pytestmark = pytest.mark.faults
log = logging.getLogger(__name__)

SLOTS = 12
SESSION = 6.0


@pytest.fixture(scope="module")
def broker(tmp_path_factory: pytest.TempPathFactory, artifacts_dir: Path) -> Iterator[GroupBroker]:
    """A broker of this module's own: its second listener sits behind a cuttable proxy."""
    started = start_group_broker(tmp_path_factory.mktemp("kafka-group"), artifacts_dir)
    try:
        yield started
    finally:
        started.proxy.close()
        started.service.stop()


@pytest.fixture
def config(broker: GroupBroker) -> GroupConfig:
    """A group and topics of the test's own, created."""
    name = f"t{uuid.uuid4().hex[:8]}"
    config = GroupConfig(
        bootstrap=broker.bootstrap,
        group_id=f"sluice-runtime-{name}",
        config_topic=f"sluice.runtime.{name}.config",
        status_topic=f"sluice.runtime.{name}.status",
        slots=SLOTS,
        session_timeout=SESSION,
        heartbeat_interval=0.5,
        fence_margin=2.0,
        stats_interval=0.25,
    )
    assert ensure_runtime_topics(config) == [config.config_topic, config.status_topic]
    return config


@pytest.fixture
def members() -> Iterator[list[GroupMember]]:
    """Members started in the test; closed at its end."""
    started: list[GroupMember] = []
    yield started
    for member in started:
        member.close()


@pytest.fixture
def processes() -> Iterator[list[MemberProcess]]:
    started: list[MemberProcess] = []
    yield started
    for process in started:
        process.stop()


def deployment(connector_id: str, revision: int = 1) -> Deployment:
    return Deployment(
        connector_id=connector_id,
        channel=connector_id.split("-")[0],
        revision=revision,
        spec={"source": {"type": "generator"}, "sink": {"type": "log"}},
        target_state=TargetState.RUNNING,
        generation=0,
    )


def join(
    config: GroupConfig, members: list[GroupMember], worker_id: str, stop_delay: float = 0.0
) -> RecordingListener:
    member, listener = recording_member(config, worker_id, stop_delay)
    member.start()
    members.append(member)
    return listener


def balanced(members: list[GroupMember], counts: list[int]) -> bool:
    owned = [member.owned() for member in members]
    every = set().union(*owned)
    return sorted(len(o) for o in owned) == sorted(counts) and every == set(range(SLOTS))


def told(listener: RecordingListener, slots: frozenset[int], after: float = float("-inf")) -> None:
    """Wait for ``listener`` to have been told of ``slots`` (after the monotonic instant
    ``after``): a member owns a slot a moment before its listener hears of it (the
    assignment callback tells it last)."""
    wait_until(
        lambda: all(listener.first("assigned", slot, after=after) is not None for slot in slots),
        10,
        0.05,
        f"the listener told of slots {sorted(slots)}",
    )


def test_the_runtime_topics_are_compacted_with_one_partition_per_slot(
    config: GroupConfig,
) -> None:
    for topic in (config.config_topic, config.status_topic):
        found = describe_topic(config.bootstrap, topic)
        assert found is not None
        assert found.partitions == SLOTS and found.config["cleanup.policy"] == "compact"
    assert ensure_runtime_topics(config) == []  # idempotent
    with pytest.raises(RuntimeTopicMismatch, match="has 12 partitions but SLUICE_RUNTIME_SLOTS"):
        verify_runtime_topic(replace(config, slots=16), config.config_topic)


def test_three_members_share_the_slots_evenly(
    config: GroupConfig, members: list[GroupMember]
) -> None:
    for worker in ("w1", "w2", "w3"):
        join(config, members, worker)
    wait_until(lambda: balanced(members, [4, 4, 4]), 60, 0.1, "12 slots shared 4/4/4")
    # What the console asks the coordinator to tell live workers (SparkRuntime.workers).
    assert group_members(config.bootstrap, config.group_id) == {
        client_id_of(worker) for worker in ("w1", "w2", "w3")
    }


def test_a_killed_member_s_slots_are_owned_by_the_others_within_the_session_timeout(
    config: GroupConfig,
    members: list[GroupMember],
    processes: list[MemberProcess],
    artifacts_dir: Path,
) -> None:
    for worker in ("w1", "w2"):
        join(config, members, worker)
    victim = MemberProcess(config, "victim", artifacts_dir / "runtime-group")
    processes.append(victim)
    wait_until(
        lambda: len(victim.owned()) == 4 and [len(m.owned()) for m in members] == [4, 4],
        60,
        0.1,
        "4/4/4 shared",
    )
    lost = victim.owned()
    killed_at = time.monotonic()
    victim.signal(signal.SIGKILL)
    wait_until(lambda: balanced(members, [6, 6]), 60, 0.05, "the survivors owning all 12")
    failover = time.monotonic() - killed_at
    print(
        f"\nkill -9: slots {sorted(lost)} owned elsewhere after {failover:.1f} s "
        f"(session {SESSION:.0f} s)"
    )
    log.warning("kill -9 failover: %.1f s (session %.0f s)", failover, SESSION)
    assert SESSION - 1 < failover < SESSION + 5


def test_revoked_slots_are_stopped_before_their_new_owner_is_given_them(
    config: GroupConfig, members: list[GroupMember]
) -> None:
    first = join(config, members, "w1", stop_delay=1.5)  # its channels take 1.5 s to stop
    wait_until(lambda: len(members[0].owned()) == SLOTS, 60, 0.1, "w1 owning every slot")
    second = join(config, members, "w2")
    wait_until(lambda: balanced(members, [6, 6]), 60, 0.1, "6/6 after w2 joined")
    moved = members[1].owned()
    told(second, moved)
    for slot in moved:
        stopped = first.first("stopped", slot, "revoked")
        given = second.first("assigned", slot)
        assert stopped is not None and given is not None
        assert stopped.at < given.at, f"slot {slot} given to w2 before w1 stopped it"
    kept = members[0].owned()
    assert all(first.first("stopping", slot) is None for slot in kept)  # sticky: untouched
    gaps = []
    for slot in moved:
        stopped, given = first.first("stopped", slot), second.first("assigned", slot)
        assert stopped is not None and given is not None
        gaps.append(given.at - stopped.at)
    print(f"\nrevoked {sorted(moved)}: w2 got each {min(gaps):.2f} s or more after w1 stopped it")


def test_a_frozen_member_s_status_writes_are_refused_and_it_stops_itself(
    config: GroupConfig,
    members: list[GroupMember],
    processes: list[MemberProcess],
    artifacts_dir: Path,
) -> None:
    frozen = MemberProcess(config, "frozen", artifacts_dir / "runtime-group")
    processes.append(frozen)
    frozen.wait_for(lambda s: s["kind"] == "assigned", 60)
    join(config, members, "w2")
    wait_until(
        lambda: len(members[0].owned()) == 6 and len(frozen.owned()) == 6,
        60,
        0.1,
        "6/6 shared",
    )
    slot = min(frozen.owned())
    connector = next(f"c{n}" for n in range(10_000) if slot_of(f"c{n}", SLOTS) == slot)
    frozen.send(f"write {connector}")
    frozen.wait_for(lambda s: s["kind"] == "written", 30)
    frozen.send("capture")  # a write that passed the owner's own check, then froze
    frozen.wait_for(lambda s: s["kind"] == "captured", 30)

    frozen.signal(signal.SIGSTOP)
    stopped_at = time.monotonic()
    wait_until(lambda: len(members[0].owned()) == SLOTS, 60, 0.1, "w2 owning every slot")
    print(f"\nSIGSTOP: w2 owns every slot {time.monotonic() - stopped_at:.1f} s later")
    writer = StatusWriter(config, "w2")
    writer.open()
    writer.write(members[0].ownership(), {connector: {"state": "RUNNING", "by": "w2"}})

    resumed_at = time.monotonic()
    frozen.signal(signal.SIGCONT)
    frozen.send(f"write-captured {connector}")
    refused = frozen.wait_for(
        lambda s: s["kind"] in ("rejected", "written", "error") and s["at"] > resumed_at, 30
    )
    assert refused["kind"] == "rejected", refused
    assert "ILLEGAL_GENERATION" in refused["detail"] or "UNKNOWN_MEMBER_ID" in refused["detail"]
    stop = frozen.wait_for(
        lambda s: s["kind"] == "stopped" and slot in s["slots"] and s["at"] > resumed_at, 30
    )
    assert stop["detail"] in ("fenced", "lost"), stop
    frozen.send(f"write {connector}")  # its own check refuses now
    frozen.wait_for(lambda s: s["kind"] in ("not-owner", "rejected") and s["at"] > stop["at"], 30)

    reader = StatusFeedReader(config, client_id="fault-test-reader")
    try:
        records = reader.latest()
        assert records[connector].status["by"] == "w2"
        assert records[connector].worker_id == "w2"
    finally:
        reader.close()
        writer.close()
    print(f"frozen member: {refused['detail']}; stopped its slots ({stop['detail']})")


def test_a_member_cut_from_the_broker_fences_itself_before_its_session_expires(
    config: GroupConfig, members: list[GroupMember], broker: GroupBroker
) -> None:
    cut = join(replace(config, bootstrap=broker.cut_bootstrap), members, "cut")
    wait_until(lambda: len(members[0].owned()) == SLOTS, 60, 0.1, "the cut one owning all")
    other = join(config, members, "w2")
    wait_until(lambda: balanced(members, [6, 6]), 60, 0.1, "6/6 shared")
    held = members[0].owned()
    try:
        cut_at = time.monotonic()
        broker.proxy.down()
        wait_until(lambda: len(members[1].owned()) == SLOTS, 60, 0.05, "w2 owning every slot")
    finally:
        broker.proxy.up()
    told(other, held, after=cut_at)
    slot = min(held)
    fenced = cut.first("stopped", slot, "fenced")
    taken = other.first("assigned", slot, after=cut_at)
    assert fenced is not None and taken is not None
    print(
        f"\ncut at 0: fenced at {fenced.at - cut_at:.2f} s, slots taken over at "
        f"{taken.at - cut_at:.2f} s (session {SESSION:.0f} s, fence after "
        f"{config.fence_after:.0f} s)"
    )
    assert fenced.at - cut_at < SESSION - 1.0  # stopped with a margin of a second or more
    assert fenced.at < taken.at
    for slot in held:
        assert cut.first("stopped", slot, "fenced") is not None
    # Back on the network, the fenced member rejoins as a new member and gets slots again.
    wait_until(lambda: balanced(members, [6, 6]), 90, 0.2, "6/6 again after the cut")


def test_a_member_reads_the_desired_state_of_its_own_slots_only(
    config: GroupConfig, members: list[GroupMember]
) -> None:
    writer = DesiredStateWriter(config)
    ids = [f"ch{n}-conn" for n in range(40)]
    writer.put([deployment(cid) for cid in ids])
    listeners = [join(config, members, w) for w in ("w1", "w2")]
    wait_until(lambda: balanced(members, [6, 6]), 60, 0.1, "6/6 shared")

    def mine(member: GroupMember) -> set[str]:
        return {cid for cid in ids if slot_of(cid, SLOTS) in member.owned()}

    def settled() -> bool:
        return all(
            set(lst.deployments) == mine(m) for m, lst in zip(members, listeners, strict=True)
        )

    wait_until(settled, 30, 0.1, "each member holding its own slots' connectors")
    assert set(listeners[0].deployments).isdisjoint(listeners[1].deployments)

    changed, deleted = ids[0], ids[1]
    writer.put([deployment(changed, revision=2)])
    writer.delete([deleted])
    owner = next(lst for m, lst in zip(members, listeners, strict=True) if changed in mine(m))
    wait_until(lambda: owner.deployments[changed].revision == 2, 30, 0.1, "revision 2 read")
    wait_until(lambda: all(deleted not in lst.deployments for lst in listeners), 30, 0.1, "deleted")
    changes = [s for lst in listeners for s in lst.steps if s.kind == "changed"]
    assert sorted(s.detail for s in changes) == sorted([changed, deleted])
    writer.close()


def test_status_writes_carry_the_owners_generation_and_only_for_its_slots(
    config: GroupConfig, members: list[GroupMember]
) -> None:
    join(config, members, "w1")
    wait_until(lambda: len(members[0].owned()) == SLOTS, 60, 0.1, "w1 owning every slot")
    ids = [f"s{n}" for n in range(24)]
    first = StatusWriter(config, "w1")
    first.open()
    before = members[0].ownership()
    first.write(before, {cid: {"state": "RUNNING"} for cid in ids})

    join(config, members, "w2")
    wait_until(lambda: balanced(members, [6, 6]), 60, 0.1, "6/6 after w2 joined")
    moved = [cid for cid in ids if slot_of(cid, SLOTS) in members[1].owned()]
    kept = [cid for cid in ids if cid not in moved]
    now = members[0].ownership()
    assert now.generation > before.generation and now.slots == members[0].owned()
    with pytest.raises(NotOwner, match="does not own the slots of"):
        first.write(now, {cid: {"state": "STOPPED"} for cid in ids})
    skipped = first.write(now, {cid: {"state": "PAUSED"} for cid in ids}, skip_unowned=True)
    assert sorted(skipped) == sorted(moved)
    second = StatusWriter(config, "w2")
    second.open()
    second.write(members[1].ownership(), {cid: {"state": "RUNNING"} for cid in moved})

    reader = StatusFeedReader(config, client_id="fault-test-reader")
    try:
        records = reader.latest()
        assert {records[cid].worker_id for cid in kept} == {"w1"}
        assert {records[cid].status["state"] for cid in kept} == {"PAUSED"}
        assert {records[cid].generation for cid in kept} == {now.generation}
        assert {records[cid].worker_id for cid in moved} == {"w2"}
        assert all(records[cid].slot == slot_of(cid, SLOTS) for cid in ids)
    finally:
        reader.close()
        first.close()
        second.close()


def test_a_member_that_leaves_hands_its_slots_over_at_once_after_stopping_them(
    config: GroupConfig, members: list[GroupMember]
) -> None:
    leaving = join(config, members, "w1", stop_delay=0.5)
    staying = join(config, members, "w2")
    wait_until(lambda: balanced(members, [6, 6]), 60, 0.1, "6/6 shared")
    held = members[0].owned()
    left_at = time.monotonic()
    members[0].close()  # a drain: leave the group
    wait_until(lambda: len(members[1].owned()) == SLOTS, 30, 0.05, "w2 owning every slot")
    handed_over = time.monotonic() - left_at
    # w2 may have owned every slot once already, had it joined the group first.
    told(staying, held, after=left_at)
    for slot in held:
        stopped = leaving.first("stopped", slot, "closed")
        given = staying.first("assigned", slot, after=left_at)
        assert stopped is not None and given is not None and stopped.at < given.at
    print(f"\nleave: {len(held)} slots owned by w2 {handed_over:.2f} s after w1 left")
    assert handed_over < SESSION  # no session timeout to wait for
    members.pop(0)
