"""The runtime group's pure parts: slots, desired-state records, the fence's clock, status
generations, settings."""

from __future__ import annotations

import json
import struct
from collections import Counter

import pytest

from runtime_adapter.base import Deployment
from runtime_adapter.config import RuntimeSettings, SettingsError
from runtime_adapter.group import (
    CoordinatorContact,
    DesiredSlots,
    GroupConfig,
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
from runtime_adapter.states import TargetState


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
