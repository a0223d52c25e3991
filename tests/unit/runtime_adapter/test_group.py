"""The runtime group's pure parts: slots, desired-state records, the fence's clock, status
generations, settings."""

from __future__ import annotations

import json
import struct
import threading
import time
from collections import Counter
from dataclasses import dataclass

import pytest
from confluent_kafka import OFFSET_BEGINNING, KafkaError, TopicPartition

from runtime_adapter.base import Deployment
from runtime_adapter.config import RuntimeSettings, SettingsError
from runtime_adapter.group import (
    CoordinatorContact,
    DesiredSlots,
    GroupConfig,
    GroupMember,
    StatusView,
    deployment_from_json,
    deployment_to_json,
    murmur2,
    parse_group_metadata,
    slot_of,
    slots_of,
)
from runtime_adapter.group.fence import last_coordinator_answer
from runtime_adapter.group.status import StatusRecord
from runtime_adapter.kafka import CoordinatorProbe, group_partition
from runtime_adapter.states import TargetState
from tests.support.runtime_group import RecordingListener


@pytest.mark.parametrize(
    ("key", "expected"),
    [  # Kafka's own UtilsTest vectors for Utils.murmur2
        ("21", -973932308),
        ("foobar", -790332482),
        ("a-little-bit-long-string", -985981536),
        ("a-little-bit-longer-string", -1486304829),
        ("lkjh234lh9fiuh90y23oiuhsafujhadof229phr9h19h89h8", -58897971),
        ("abc", 479470107),
    ],
)
def test_murmur2_is_kafkas(key: str, expected: int) -> None:
    assert murmur2(key.encode()) == expected


def test_a_connectors_slot_is_stable_in_range_and_spread() -> None:
    ids = [f"channel-{n}.{n * 7919 % 1000}" for n in range(6400)]
    slots = [slot_of(cid, 64) for cid in ids]
    assert slots == [slot_of(cid, 64) for cid in ids]
    assert set(slots) == set(range(64))
    counts = Counter(slots).values()
    assert max(counts) < 2 * min(counts)  # 100 each on average
    assert slot_of("orders-connector", 64) == (murmur2(b"orders-connector") & 0x7FFFFFFF) % 64
    grouped = slots_of(ids[:50], 64)
    assert sorted(cid for group in grouped.values() for cid in group) == sorted(ids[:50])
    with pytest.raises(ValueError, match="at least 1"):
        slot_of("x", 0)


def _deployment(connector_id: str, revision: int = 1) -> Deployment:
    return Deployment(
        connector_id=connector_id,
        channel="orders",
        revision=revision,
        spec={"source": {"type": "generator"}},
        target_state=TargetState.PAUSED,
        worker_id="w9",
        generation=3,
        checkpoint="orders.ab12",
    )


def test_a_deployment_record_round_trips_without_its_placement() -> None:
    raw = deployment_to_json(_deployment("c1"))
    assert "worker_id" not in json.loads(raw)
    back = deployment_from_json(raw)
    assert back.worker_id is None and back.target_state is TargetState.PAUSED
    assert back == _deployment("c1").__class__(**{**_deployment("c1").__dict__, "worker_id": None})
    newer = json.dumps({**json.loads(raw), "written_by_a_newer_console": 1}).encode()
    assert deployment_from_json(newer) == back


def test_desired_slots_report_changes_only_once_a_slot_is_read_to_its_end() -> None:
    desired = DesiredSlots()
    desired.gain([3])
    assert desired.apply(3, "a", deployment_to_json(_deployment("a", 1)), 0) is None
    assert desired.apply(3, "a", deployment_to_json(_deployment("a", 2)), 1) is None
    assert desired.apply(3, "b", deployment_to_json(_deployment("b")), 2) is None
    assert desired.apply(3, "b", None, 3) is None  # deleted before the slot was ready
    assert desired.apply(5, "z", deployment_to_json(_deployment("z")), 0) is None  # not owned
    ready = desired.caught_up(3)
    assert ready is not None and list(ready) == ["a"] and ready["a"].revision == 2
    assert desired.caught_up(3) is None  # once
    change = desired.apply(3, "a", deployment_to_json(_deployment("a", 3)), 4)
    assert change is not None and change.deployment is not None
    assert change.deployment.revision == 3
    assert desired.apply(3, "a", deployment_to_json(_deployment("a", 3)), 5) is None  # same
    gone = desired.apply(3, "a", None, 6)
    assert gone is not None and gone.deployment is None
    assert desired.positions == {3: 7}
    desired.drop([3])
    assert desired.deployments() == {} and desired.owned() == frozenset()


def _stats(ts_us: int, rxidle_us: int, name: str = "GroupCoordinator") -> str:
    return json.dumps(
        {
            "ts": ts_us,
            "brokers": {
                "127.0.0.1:9092/1": {"nodeid": 1, "rxidle": 10},
                name: {"nodeid": -1, "rxidle": rxidle_us, "state": "UP"},
            },
        }
    )


def test_the_coordinators_last_answer_is_read_on_the_monotonic_clock() -> None:
    assert last_coordinator_answer(json.loads(_stats(50_000_000, 1_500_000))) == 48.5
    assert last_coordinator_answer(json.loads(_stats(50_000_000, -1))) is None
    assert last_coordinator_answer({"ts": 1, "brokers": {}}) is None
    contact = CoordinatorContact(now=40.0)
    contact.observe(_stats(50_000_000, 1_500_000))
    assert contact.last == 48.5 and contact.silence(now=52.0) == 3.5
    contact.observe(_stats(48_000_000, 0))  # a late report of an older answer changes nothing
    assert contact.last == 48.5
    contact.observe(_stats(60_000_000, -1))  # disconnected: no answer since
    assert contact.silence(now=60.0) == 11.5
    looking = json.loads(_stats(61_000_000, 100))
    looking["cgrp"] = {"state": "wait-coord", "join_state": "init"}
    contact.observe(json.dumps(looking))  # answers while it looks for its coordinator
    assert contact.last == 48.5


@pytest.mark.parametrize(
    ("group_id", "partition"),
    [  # Utils.abs(groupId.hashCode()) % 50, as Java 17's jshell computes it
        ("sluice-runtime", 2),
        ("", 0),
        ("a", 47),
        ("polygenelubricants", 0),  # hashCode() is Integer.MIN_VALUE: Utils.abs gives 0
        ("sluice-runtime-t1234abcd", 31),  # a negative hashCode (-290601531)
        ("é∆😀", 12),  # outside ASCII, and a surrogate pair: UTF-16 code units
    ],
)
def test_the_groups_coordinator_partition_is_kafkas(group_id: str, partition: int) -> None:
    assert group_partition(group_id, 50) == partition


def test_a_vacant_coordinator_moves_the_start_of_the_silence_at_most_the_ride_out() -> None:
    contact = CoordinatorContact(now=100.0, ride_out=10.0)
    assert contact.silence(now=106.0) == 6.0
    contact.vacated(asked_at=105.0)  # counted from a metadata lag before the question
    assert contact.silence(now=106.0) == 2.0 and contact.unanswered(now=106.0) == 6.0
    contact.vacated(asked_at=130.0)  # capped: 10 s after the last answer
    assert contact.silence(now=131.0) == 21.0
    contact.heard(135.0)  # an answer: counted from it (the older vacancy changes nothing)
    assert contact.silence(now=136.0) == 1.0
    assert CoordinatorContact(now=100.0).silence(now=106.0) == 6.0  # no ride-out: as before


def _fenced_by_silence(
    probe_answers: list[CoordinatorProbe | None], steps: list[float]
) -> tuple[list[float], list[str]]:
    """Own slots at clock 100, then for each step: advance the clock, probe, check the fence.
    Returns the silences the member counted and what it recorded."""
    config = GroupConfig(bootstrap="127.0.0.1:9", slots=8, placement="group")
    now = [100.0]
    answers = iter(probe_answers)
    member = GroupMember(
        config, "w1", RecordingListener(slots=8), clock=lambda: now[0], probe=lambda: next(answers)
    )
    consumer = _FakeConsumer(config.config_topic)
    consumer.generation = 1
    member._on_assign(consumer, [TopicPartition(config.config_topic, 1)])  # type: ignore[arg-type]
    silences = []
    for at in steps:
        now[0] = at
        member._probe_once()
        member._fence_if_due()
        silences.append(member._contact.silence(now[0]))
        if member.fenced:
            break
    return silences, [event.kind for event in member.events]


def test_a_member_whose_coordinator_broker_is_gone_runs_on_until_the_ride_out_ends() -> None:
    """Fence after 7 s, ride-out 10 s: the probe starts at 3.5 s of silence. A killed
    coordinator broker (its listener refuses) keeps the slots running; the cap fences at
    17 s all the same."""
    gone = CoordinatorProbe(leader=2, address="10.0.0.2:9092", refused=True)
    silences, events = _fenced_by_silence([gone] * 20, [103.0, 104.0, 107.5, 110.0, 116.0, 117.5])
    assert events.count("coordinator-vacant") == 1  # noted once per silence
    assert silences[:5] == [3.0, 1.0, 1.0, 1.0, 6.0]
    assert events[-2:] == ["fenced", "fence-stopped"] and silences[-1] == 7.5


@pytest.mark.parametrize(
    "answer",
    [
        None,  # no broker answered: cut off from the cluster
        CoordinatorProbe(leader=2, address="10.0.0.2:9092", refused=False),  # it listens
    ],
)
def test_a_member_that_cannot_tell_its_coordinator_is_gone_fences_on_silence(
    answer: CoordinatorProbe | None,
) -> None:
    silences, events = _fenced_by_silence([answer] * 5, [104.0, 106.5, 107.0])
    assert "coordinator-vacant" not in events
    assert events[-2:] == ["fenced", "fence-stopped"] and silences[-1] == 7.0


def test_a_partition_with_no_leader_is_a_vacancy() -> None:
    assert CoordinatorProbe(leader=None, address="", refused=False).vacant
    silences, events = _fenced_by_silence(
        [CoordinatorProbe(None, "", refused=False)] * 5, [104.0, 107.5]
    )
    assert "coordinator-vacant" in events and "fenced" not in events and silences[-1] == 1.0


def test_group_metadata_names_the_generation_and_member() -> None:
    raw = b"CGMDv2:" + struct.pack("=i", 7) + b"sluice-runtime\0worker-a-1234\0\x01"
    found = parse_group_metadata(raw)
    assert (found.group_id, found.generation, found.member_id) == (
        "sluice-runtime",
        7,
        "worker-a-1234",
    )
    with pytest.raises(ValueError, match="unknown consumer group metadata"):
        parse_group_metadata(b"CGMDv9:....")


def test_a_status_of_an_older_generation_is_dropped() -> None:
    view = StatusView()

    def record(generation: int, worker: str) -> bytes:
        return StatusRecord("c1", {"state": "RUNNING"}, generation, "m", worker, 4).to_json()

    assert view.apply("c1", record(5, "new")) is not None
    assert view.apply("c1", record(4, "stale")) is None
    assert view.records["c1"].worker_id == "new" and view.dropped == 1
    assert view.apply("c1", record(6, "newer")) is not None
    assert view.apply("c1", None) is None and "c1" not in view.records


def test_the_fence_margin_must_leave_room_for_a_heartbeat() -> None:
    config = GroupConfig(bootstrap="k:9092")
    assert config.fence_after == 7.0
    with pytest.raises(ValueError, match="fence margin"):
        GroupConfig(bootstrap="k:9092", session_timeout=6, fence_margin=5.5)


def test_group_settings_come_from_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SLUICE_KAFKA_BOOTSTRAP", "kafka-1:9092,kafka-2:9092")
    monkeypatch.setenv("SLUICE_RUNTIME_SLOTS", "128")
    monkeypatch.setenv("SLUICE_TOPIC_REPLICATION_FACTOR", "3")
    monkeypatch.setenv("SLUICE_TOPIC_MIN_INSYNC_REPLICAS", "2")
    config = GroupConfig.from_settings(RuntimeSettings.load())
    assert config.bootstrap == "kafka-1:9092,kafka-2:9092" and config.slots == 128
    assert (config.replication_factor, config.min_insync_replicas) == (3, 2)
    assert config.session_timeout == 10.0 and config.fence_after == 7.0
    monkeypatch.setenv("SLUICE_RUNTIME_FENCE_MARGIN", "9.5")
    with pytest.raises(SettingsError, match="SLUICE_RUNTIME_FENCE_MARGIN must be less"):
        RuntimeSettings.load()


class _FakeConsumer:
    """librdkafka's consumer as a group member sees it, rejoining during a rebalance: its
    ``unsubscribe`` then ``subscribe`` revoke nothing (the assignment is kept)."""

    def __init__(self, topic: str) -> None:
        self.topic = topic
        self.generation = 0
        self.assigned: dict[int, int] = {}
        self.calls: list[tuple[str, list[int]]] = []

    def incremental_assign(self, partitions: list[TopicPartition]) -> None:
        self.assigned.update({p.partition: p.offset for p in partitions})
        self.calls.append(("assign", sorted(p.partition for p in partitions)))

    def incremental_unassign(self, partitions: list[TopicPartition]) -> None:
        for p in partitions:
            del self.assigned[p.partition]  # librdkafka refuses one not assigned
        self.calls.append(("unassign", sorted(p.partition for p in partitions)))

    def assignment(self) -> list[TopicPartition]:
        return [TopicPartition(self.topic, p) for p in sorted(self.assigned)]

    def consumer_group_metadata(self) -> bytes:
        return b"CGMDv2:" + struct.pack("=i", self.generation) + b"group\0member-1\0"

    def unsubscribe(self) -> None:
        self.calls.append(("unsubscribe", []))

    def subscribe(self, topics: list[str], **callbacks: object) -> None:
        self.calls.append(("subscribe", []))

    def poll(self, timeout: float) -> None:
        return None


@dataclass
class _Record:
    slot: int
    connector_id: str = ""
    raw: bytes | None = None
    at: int = 0

    def error(self) -> KafkaError | None:
        return None if self.connector_id else KafkaError(KafkaError._PARTITION_EOF)

    def partition(self) -> int:
        return self.slot

    def key(self) -> bytes:
        return self.connector_id.encode()

    def offset(self) -> int:
        return self.at

    def value(self) -> bytes | None:
        return self.raw


def test_slots_kept_through_the_rejoin_after_a_fence_are_read_again_and_run() -> None:
    """After a fence the member stops its slots and rejoins (unsubscribe, subscribe). When it
    rejoins during a rebalance librdkafka keeps its assignment: no revocation, and the next
    assignment only names the slots gained. Seen at scale (bench/group_scale.py, the broker's
    coordinator away for 8 s under load): the kept slots stayed the member's in the group
    but were never run again (their connectors ran nowhere, their statuses frozen at
    RUNNING). They are confirmed by the new generation: read again and run."""
    config = GroupConfig(bootstrap="127.0.0.1:9", slots=8, placement="group")
    now = [100.0]
    listener = RecordingListener(slots=config.slots)
    member = GroupMember(config, "w1", listener, clock=lambda: now[0])
    consumer = _FakeConsumer(config.config_topic)
    member._consumer = consumer  # type: ignore[assignment]
    ids = {slot_of(f"c{n}", config.slots): f"c{n}" for n in range(200)}

    def read_to_end(slot: int) -> None:
        member._take(_Record(slot, ids[slot], deployment_to_json(_deployment(ids[slot]))))
        member._take(_Record(slot))

    consumer.generation = 1
    member._on_assign(consumer, [TopicPartition(config.config_topic, s) for s in (1, 2)])
    for slot in (1, 2):
        read_to_end(slot)
    assert set(listener.deployments) == {ids[1], ids[2]}

    # The coordinator silent past the fence window: the watchdog stops the slots.
    now[0] += config.fence_after + 1
    watchdog = threading.Thread(target=member._watch)
    watchdog.start()
    try:
        deadline = time.monotonic() + 5
        while not (member.fenced and member._state.rejoin) and time.monotonic() < deadline:
            time.sleep(0.01)
    finally:
        member._stop.set()
        watchdog.join(5)
    assert member.fenced and not listener.deployments, "stopped by the fence"
    member._poll_once(consumer)  # rejoins: nothing revoked
    assert ("unsubscribe", []) in consumer.calls and set(consumer.assigned) == {1, 2}

    consumer.generation = 2  # the new generation: slots 1 and 2 kept, 3 gained
    member._on_assign(consumer, [TopicPartition(config.config_topic, 3)])
    assert consumer.calls[-2:] == [("unassign", [1, 2]), ("assign", [1, 2, 3])]
    assert all(offset == OFFSET_BEGINNING for offset in consumer.assigned.values())
    for slot in (1, 2, 3):
        read_to_end(slot)
    assert set(listener.deployments) == {ids[1], ids[2], ids[3]}, "all three run"
    assert not member.fenced
    assert member.ownership().slots == {1, 2, 3}
    assert member.ownership().generation == 2
