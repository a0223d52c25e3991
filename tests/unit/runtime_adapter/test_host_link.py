"""The host link in files (:mod:`runtime_adapter.host.link`) and a runtime worker that runs on it
while the console's Redis is away: a slot gained then is run all the same.

The worker runs stand-in drivers (``test_worker.FakeDriverWorker``) on a Redis of the test's own,
which it stops; the group's member is played by the test (slots given through the worker's
:class:`~runtime_adapter.host.membership.SlotOwner`, as the config topic gives them). A real
worker on real brokers with Redis stopped under a host kill is in tests/faults.
"""

from __future__ import annotations

import threading
from dataclasses import replace
from pathlib import Path

import pytest
import redis

from runtime_adapter.base import ConnectorStatus, Deployment, DriverInfo
from runtime_adapter.group import GroupConfig, slots_of
from runtime_adapter.host.link import HostFiles
from runtime_adapter.host.start import APPLIED_CHANGE, QueryStart
from runtime_adapter.host.worker import RuntimeWorker
from runtime_adapter.states import State, TargetState
from runtime_adapter.store import Placement, RedisStore, ReportOutcome
from tests.support.processes import start_redis, wait_until
from tests.unit.runtime_adapter.test_worker import FakeDriverWorker


def deployment(cid: str, target: TargetState = TargetState.RUNNING, **fields) -> Deployment:
    return Deployment(cid, cid, 1, {"runtime": {}}, target, **fields)


# -- the files ------------------------------------------------------------------------------


def test_a_driver_reads_what_its_worker_handed_over_and_notices_a_new_hand_over(
    tmp_path: Path,
) -> None:
    worker, driver = HostFiles(tmp_path), HostFiles(tmp_path)  # two processes' views
    worker.place("w1.d1", "orders", Placement(3, 2, 10.0))
    worker.place("w1.d1", "gone", Placement(1, 1, 9.0))
    worker.unplace("w1.d1", "gone")
    ran = deployment("orders", worker_id="w1", generation=3, offset_change="")
    assert worker.hand_over({"orders": ran}) == ["w1.d1"]
    assert worker.hand_over({"orders": ran}) == [], "an unchanged hand-over is not written"

    placements, deployments = driver.placed_deployments("w1.d1")
    assert placements == {"orders": Placement(3, 2, 10.0)}
    assert deployments == {"orders": ran}, "the worker it runs for and every field kept"
    assert not driver.wait_nudge("w1.d1", 0.1), "nothing new: waited the whole timeout"

    changed = threading.Timer(0.2, worker.hand_over, [{"orders": deployment("orders")}])
    changed.start()
    assert driver.wait_nudge("w1.d1", 5.0), "the new file woke the driver"
    changed.join()
    assert driver.placed_deployments("w1.d1")[1]["orders"].worker_id is None

    worker.retire("w1.d1")
    assert driver.retired("w1.d1") and driver.wait_nudge("w1.d1", 5.0)


def test_heartbeats_and_statuses_go_through_files_and_a_driver_gone_is_forgotten(
    tmp_path: Path,
) -> None:
    link = HostFiles(tmp_path)
    link.driver_heartbeat(DriverInfo("w1.d1", "w1", 42, "shared", 1.0, 2.0, connectors=["a"]))
    assert [(d.driver_id, d.connectors) for d in link.drivers()] == [("w1.d1", ["a"])]
    assert link.report(ConnectorStatus("a", State.RUNNING, "w1", 2)) == ReportOutcome.WRITTEN
    link.report(ConnectorStatus("b", State.FAILED, "w1", 1, trace="boom"))
    texts = link.status_texts(["a", "b", "c"], {"a": (4, 1)})
    assert set(texts) == {"a", "b"}
    assert texts["a"].startswith("4 1 ") and texts["b"].startswith("0 0 ")
    statuses = link.statuses(["a", "b"])
    assert statuses["a"].state == State.RUNNING and statuses["a"].updated_at > 0
    assert statuses["b"].trace == "boom"

    assert link.keep_statuses(["a"]) == 1 and link.reported() == {"a"}
    link.forget_driver("w1.d1")
    assert link.drivers() == []


@pytest.mark.parametrize("key", ["../../etc/passwd", "a/b", "..", ".hidden", "ü%2F"])
def test_no_id_names_a_file_outside_its_folder(tmp_path: Path, key: str) -> None:
    link = HostFiles(tmp_path / "host")
    link.report(ConnectorStatus(key, State.RUNNING, "w1", 1))
    written = [p for p in (tmp_path / "host").rglob("*") if p.is_file()]
    assert len(written) == 1 and written[0].parent == tmp_path / "host" / "status"
    assert link.reported() == {key} and link.statuses([key])[key].connector_id == key


# -- a worker on the files, Redis away ------------------------------------------------------


@pytest.fixture
def own_redis(tmp_path: Path, artifacts_dir: Path):
    service, url = start_redis(tmp_path / "redis", artifacts_dir)
    try:
        yield service, url
    finally:
        service.stop()


def running(worker: RuntimeWorker, ids: list[str]) -> bool:
    worker.turn()
    statuses = worker.link.statuses(ids)
    return all(
        cid in statuses and statuses[cid].state == State.RUNNING and cid in worker.placed
        for cid in ids
    )


def test_with_redis_stopped_a_worker_runs_the_channels_of_a_slot_it_gains_and_stops_them(
    own_redis, worker_config
) -> None:
    """Before, the worker read its deployments and its drivers' placements, heartbeats and
    statuses from Redis: with Redis away, a slot it gained was never run."""
    service, url = own_redis
    group = GroupConfig(bootstrap="127.0.0.1:9", slots=4, placement="group")
    config = replace(
        worker_config(worker_id="w1", driver_stop_grace=1.0, warm_drivers=1), redis_url=url
    )
    worker = FakeDriverWorker(config, RedisStore.from_url(url, "linked"), group)
    worker.membership = None  # the member's part is played here: slots given
    owner = worker.owner
    assert owner is not None and isinstance(worker.link, HostFiles)
    ids = [f"linked-{n}" for n in range(8)]
    by_slot = sorted(slots_of(ids, group.slots).items())
    first, later = by_slot[0], by_slot[1:]
    try:
        owner.slot_ready(first[0], {cid: deployment(cid) for cid in first[1]})
        wait_until(lambda: running(worker, sorted(first[1])), 30, what="the first slot running")
        copied = worker.store.statuses(first[1])
        assert {s.state for s in copied.values()} == {State.RUNNING}, "the console's copy"

        service.stop()  # Redis away: heartbeats, claims and copies fail; nothing else does
        for slot, members in later:
            owner.slot_ready(slot, {cid: deployment(cid) for cid in members})
        wait_until(lambda: running(worker, ids), 30, what="every slot running, Redis away")
        assert worker.outage.since is not None, "the worker says the store is away"
        texts = worker.relay_texts(ids)
        assert set(texts) == set(ids), "the relay reads every status (from the files)"

        stopped = sorted(later[0][1])
        for cid in stopped:
            owner.desired_changed(later[0][0], cid, deployment(cid, TargetState.STOPPED))

        def stopped_here() -> bool:
            worker.turn()
            statuses = worker.link.statuses(stopped)
            return all(
                statuses[cid].state == State.STOPPED and cid not in worker.placed for cid in stopped
            )

        wait_until(stopped_here, 30, what="a stop reaching the drivers, Redis away")
    finally:
        worker.shutdown()


def test_a_start_reads_the_offset_change_from_redis_only_when_one_is_pending(
    tmp_path: Path,
) -> None:
    """A channel moved while Redis is away starts: its deployment (the config topic's) says
    no offset change is pending (``""``), or names the one its checkpoint already took."""
    away = RedisStore.from_url("redis://127.0.0.1:9/0", "away")  # nothing listens on port 9
    start = QueryStart(away, "moved")
    spec = {"source": {"type": "generator"}}

    def apply(pending: str | None) -> dict:
        return start.apply_offset_change(spec, tmp_path, lambda batches: None, None, pending)

    assert apply("") is spec, "none pending: Redis not read"
    (tmp_path / APPLIED_CHANGE).write_text("5f2c")
    assert apply("5f2c") is spec, "applied to this checkpoint already: Redis not read"
    for unknown in ("9a41", None):  # pending and not applied here, or not known: read
        with pytest.raises(redis.ConnectionError):
            apply(unknown)
