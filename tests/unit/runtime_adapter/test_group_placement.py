"""The runtime group places channels (``SLUICE_RUNTIME_PLACEMENT=group``): two runtime workers
with stand-in drivers (``test_worker.FakeDriverWorker``) on a real broker and a real Redis.

Each connector runs on the worker that owns its slot, whatever worker the console named; a
worker that leaves hands its channels over only once their queries stopped; the console's
stop and delete reach the owner through the config topic. A ``kill -9`` of a real runtime
host, with the console down, is in tests/faults.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator, Mapping
from typing import Any

import pytest

from runtime_adapter.base import Deployment, StatusNews
from runtime_adapter.group import GroupConfig, StopReason, slot_of, slots_of
from runtime_adapter.host.worker import RuntimeWorker
from runtime_adapter.spark import SparkRuntime
from runtime_adapter.states import State, TargetState
from runtime_adapter.store import RedisStore
from tests.support.processes import wait_until
from tests.support.runtime_group import placing_group
from tests.unit.runtime_adapter.test_worker import FakeDriverWorker

SLOTS = 8
CONNECTORS = [f"slow-{n}" for n in range(12)]
"""Their stand-in queries take 1.5 s to stop (``test_worker.FAKE_DRIVER``)."""


@pytest.fixture
def group(kafka_bootstrap: str) -> GroupConfig:
    return placing_group(kafka_bootstrap, "placement", SLOTS)


@pytest.fixture
def runtime(redis_url: str, prefix: str, tmp_path, group: GroupConfig) -> SparkRuntime:
    return SparkRuntime(redis_url, prefix, checkpoint_root=tmp_path / "checkpoints", group=group)


class Running:
    """Runtime workers running their loops on threads of their own, as ``main`` runs one."""

    def __init__(self, redis_url: str, prefix: str, worker_config, group: GroupConfig) -> None:
        self.redis_url, self.prefix = redis_url, prefix
        self.worker_config, self.group = worker_config, group
        self.workers: dict[str, RuntimeWorker] = {}
        self.threads: dict[str, threading.Thread] = {}

    def start(self, worker_id: str) -> RuntimeWorker:
        config = self.worker_config(
            worker_id=worker_id, driver_stop_grace=1.0, warm_drivers=1, heartbeat_interval=0.2
        )
        worker = FakeDriverWorker(
            config, RedisStore.from_url(self.redis_url, self.prefix), self.group
        )
        thread = threading.Thread(target=worker.run, name=f"worker-{worker_id}", daemon=True)
        self.workers[worker_id], self.threads[worker_id] = worker, thread
        thread.start()
        return worker

    def stop(self, worker_id: str) -> None:
        self.workers[worker_id].running = False
        self.threads[worker_id].join(60)
        assert not self.threads[worker_id].is_alive(), f"worker {worker_id} did not stop"

    def hosting(self, worker_id: str) -> set[str]:
        """Connectors a live driver of the worker runs now: placed there, or still listed in
        its heartbeat (its query stopping); none for a worker not started yet."""
        worker = self.workers.get(worker_id)
        if worker is None:
            return set()
        live = {d.driver_id: d for d in list(worker.drivers.values()) if not d.exited()}
        listed = {
            cid
            for info in worker.link.drivers()
            if info.driver_id in live
            for cid in info.connectors
        }
        return listed | {cid for d in live.values() for cid in set(d.placed)}


@pytest.fixture
def running(redis_url: str, prefix: str, worker_config, group: GroupConfig) -> Iterator[Running]:
    made = Running(redis_url, prefix, worker_config, group)
    yield made
    for worker_id, thread in made.threads.items():
        if thread.is_alive():
            made.stop(worker_id)


def deploy_all(runtime: SparkRuntime) -> None:
    runtime.deploy_many(
        [
            Deployment(cid, cid, 1, {"runtime": {}}, TargetState.RUNNING, worker_id="console-pick")
            for cid in CONNECTORS
        ]
    )


def states(runtime: SparkRuntime) -> dict[str, State]:
    return {cid: s.state for cid, s in runtime.status(CONNECTORS).items()}


def all_running_on(runtime: SparkRuntime, workers: set[str]) -> bool:
    statuses = runtime.status(CONNECTORS)
    return len(statuses) == len(CONNECTORS) and all(
        s.state == State.RUNNING and s.worker_id in workers for s in statuses.values()
    )


def start_both(running: Running, runtime: SparkRuntime) -> tuple[RuntimeWorker, RuntimeWorker]:
    """Start w1 and w2; return them once each runs some connectors and the group settled: every
    connector RUNNING, reported by and claimed by the worker that owns its slot and runs it.
    (Until the second member's rebalance is over, the first one's reports and claims of the
    slots it hands over are still read: RUNNING on both, but not yet where it ends up.)"""
    w1, w2 = running.start("w1"), running.start("w2")

    def settled() -> bool:
        if not (running.hosting("w1") and running.hosting("w2")):
            return False
        if not all_running_on(runtime, {"w1", "w2"}):
            return False
        statuses, owners = runtime.status(CONNECTORS), runtime.owners(CONNECTORS)
        workers = {"w1": w1, "w2": w2}
        return all(
            owners.get(cid) == statuses[cid].worker_id
            and slot_owner(workers[statuses[cid].worker_id], cid)
            and cid in running.hosting(statuses[cid].worker_id)
            for cid in CONNECTORS
        )

    wait_until(settled, 30, interval=0.2, what="all RUNNING where their slots are owned")
    return w1, w2


def slot_owner(worker: RuntimeWorker, cid: str) -> bool:
    return worker.owner is not None and slot_of(cid, SLOTS) in worker.owner.slots()


def test_each_channel_runs_where_its_slot_is_owned_whatever_the_console_named(
    runtime: SparkRuntime, running: Running
) -> None:
    deploy_all(runtime)
    w1, w2 = start_both(running, runtime)
    owners = runtime.owners(CONNECTORS)
    assert set(owners.values()) <= {"w1", "w2"}, "claimed by the owners, not the console"
    for cid, owner in owners.items():
        worker = w1 if owner == "w1" else w2
        assert slot_owner(worker, cid), f"{cid} runs on {owner}, which owns its slot"
        assert cid in running.hosting(owner)
        assert runtime.status([cid])[cid].worker_id == owner
    assert not running.hosting("w1") & running.hosting("w2")
    assert w1.owner is not None and w2.owner is not None
    assert set(w1.owner.slots()).isdisjoint(w2.owner.slots())

    # The console's stop and delete reach the owner through the config topic.
    stopped, deleted = CONNECTORS[0], CONNECTORS[1]
    runtime.set_target_state(stopped, TargetState.STOPPED)
    runtime.delete(deleted)
    wait_until(
        lambda: (
            states(runtime).get(stopped) == State.STOPPED
            and deleted not in running.hosting("w1") | running.hosting("w2")
        ),
        15,
        interval=0.1,
        what="stopped and deleted",
    )
    assert stopped not in running.hosting("w1") | running.hosting("w2")
    assert all(deleted not in w.owner.owned() for w in (w1, w2) if w.owner is not None)


def test_a_leaving_worker_hands_its_channels_over_once_they_stopped(
    runtime: SparkRuntime, running: Running
) -> None:
    deploy_all(runtime)
    w1 = running.start("w1")
    wait_until(lambda: all_running_on(runtime, {"w1"}), 30, interval=0.2, what="RUNNING on w1")
    overlaps: list[set[str]] = []
    watching = threading.Event()

    def watch() -> None:  # no channel may run on both at any moment
        while not watching.is_set():
            both = running.hosting("w1") & running.hosting("w2")
            if both:
                overlaps.append(both)
            time.sleep(0.01)
        overlaps.append(set())  # watched to the end (an error would have ended it sooner)

    watcher = threading.Thread(target=watch, daemon=True)
    watcher.start()
    running.start("w2")
    wait_until(
        lambda: running.hosting("w2") and all_running_on(runtime, {"w1", "w2"}),
        30,
        interval=0.2,
        what="w2 took its share",
    )
    moved_at_join = set(running.hosting("w2"))
    assert moved_at_join and set(CONNECTORS) - moved_at_join, "cooperative: only a share moved"
    assert not overlaps, f"ran on both workers at once as w2 joined: {overlaps[:3]}"

    left = time.monotonic()
    stopper = threading.Thread(target=running.stop, args=("w1",))
    stopper.start()
    wait_until(lambda: all_running_on(runtime, {"w2"}), 30, interval=0.1, what="all on w2")
    took = time.monotonic() - left
    stopper.join(60)
    watching.set()
    watcher.join(5)
    assert overlaps == [set()], f"ran on both workers at once: {overlaps[:3]}"
    assert running.hosting("w2") == set(CONNECTORS)
    assert set(runtime.owners(CONNECTORS).values()) == {"w2"}
    assert took < 15, f"handed over in {took:.1f} s"
    assert w1.owner is not None and not w1.owner.owned()


def test_a_drained_worker_leaves_the_group_and_joins_again_when_put_back(
    runtime: SparkRuntime, running: Running
) -> None:
    deploy_all(runtime)
    w1, w2 = start_both(running, runtime)

    runtime.set_draining({"w1"})  # as the console's control loop does for a DRAINING worker
    wait_until(
        lambda: all_running_on(runtime, {"w2"}) and not running.hosting("w1"),
        30,
        interval=0.1,
        what="all on w2",
    )
    assert set(runtime.owners(CONNECTORS).values()) == {"w2"}
    assert w1.membership is not None and not w1.membership.live()
    assert w1.drivers, "a drained worker keeps its warm driver"
    assert w1.owner is not None and not w1.owner.owned()

    runtime.set_draining(set())  # back in service: it joins and takes its share again
    wait_until(
        lambda: running.hosting("w1") and all_running_on(runtime, {"w1", "w2"}),
        30,
        interval=0.2,
        what="w1 back",
    )
    assert not running.hosting("w1") & running.hosting("w2")
    assert w2.owner is not None


@pytest.mark.parametrize("during", ["claims", "placements"])
def test_a_slot_let_go_of_during_a_pass_is_neither_claimed_nor_placed_after_it(
    redis_url: str, prefix: str, worker_config, during: str
) -> None:
    """A pass works from what the worker owned when it began; a revocation arriving meanwhile
    (on the member's thread) must not be followed by a claim or a placement of the slot's
    connectors, which would then run on two workers (or, for a late claim, be taken from the
    new owner, whose driver would stop it). Seen at scale (bench/group_scale.py): a pass
    placing 2,000 connectors took seconds; the revocation returned at once (nothing of the
    slot placed yet) and the pass went on placing them, or the release waited for the whole
    pass and timed out, killing the driver."""
    group = GroupConfig(bootstrap="127.0.0.1:9", slots=4, placement="group")
    ids = [f"pass-{n}" for n in range(40)]
    by_slot = slots_of(ids, group.slots)
    store = RedisStore.from_url(redis_url, prefix)
    SparkRuntime(redis_url, prefix).deploy_many(
        [Deployment(cid, cid, 1, {"runtime": {}}, TargetState.RUNNING) for cid in ids]
    )
    config = worker_config(worker_id="w1", driver_stop_grace=1.0, warm_drivers=1)
    worker = FakeDriverWorker(config, store, group)
    worker.membership = None  # the member's part is played here: slots given and revoked
    owner = worker.owner
    assert owner is not None
    deployments = store.deployments_of(ids)
    for slot, members in by_slot.items():
        owner.slot_ready(slot, {cid: deployments[cid] for cid in members})
    revoked: list[int] = []
    releases: list[threading.Thread] = []

    def revoke_another_slot_than(cid: str) -> None:
        if revoked:
            return
        slot = max((s for s in by_slot if s != slot_of(cid, group.slots)), key=lambda s: s)
        revoked.append(slot)
        thread = threading.Thread(
            target=owner.stop_slots, args=(frozenset({slot}), StopReason.REVOKED)
        )
        releases.append(thread)
        thread.start()
        wait_until(lambda: slot not in owner.slots(), 5, interval=0.01, what="the revocation")

    if during == "claims":  # revoked once the pass has read what it owns, before it claims
        read = owner.owned
        reads: list[frozenset[str]] = []

        def owned() -> frozenset[str]:
            reads.append(read())
            if len(reads) == 1:  # the claims' (the deployments came from deployments())
                revoke_another_slot_than(ids[0])
            return reads[-1]

        owner.owned = owned  # type: ignore[method-assign]
    else:
        place = worker.place

        def place_and_revoke(cid: str, deployment: Deployment, driver) -> None:
            revoke_another_slot_than(cid)
            place(cid, deployment, driver)

        worker.place = place_and_revoke  # type: ignore[method-assign]
    try:
        worker.converge()
        assert revoked, "the pass claimed and placed"
        gone = set(by_slot[revoked[0]])
        assert not gone & set(worker.placed), "nothing of the revoked slot placed after it"
        if during == "claims":
            claimed = {cid for cid, w in store.owners(ids).items() if w == "w1"}
            assert not gone & claimed, "nothing of the revoked slot claimed after it"
        releases[0].join(3)
        assert not releases[0].is_alive(), "the release returned (nothing of it ran here)"
        worker.converge()  # the next pass (at once: the release woke the loop)
        assert set(worker.placed) == set(ids) - gone
        assert all(not d.killed_for for d in worker.drivers.values()), "no driver killed"
    finally:
        worker.shutdown()


def test_the_status_feed_says_where_each_channel_runs_and_the_workers_vouch_for_them(
    runtime: SparkRuntime, running: Running
) -> None:
    """Each worker's relay writes its connectors' news to the status topic, fenced by its
    generation, and vouches for them: the console's feed reads RUNNING on the slot's owner."""
    deploy_all(runtime)
    start_both(running, runtime)
    feed = runtime.status_feed()
    assert feed is not None
    latest: dict[str, StatusNews] = {}
    vouched: dict[str, frozenset[str]] = {}
    ages: list[float] = []
    capacity: dict[str, Mapping[str, Any]] = {}
    cursor: dict[int, int] | None = None

    def read() -> bool:
        nonlocal cursor
        batch = feed.read(cursor, budget=1.0)
        cursor = batch.cursor
        latest.update((n.connector_id, n) for n in batch.news)
        vouched.update((v.worker_id, v.connector_ids) for v in batch.vouches)
        capacity.update((v.worker_id, v.capacity) for v in batch.vouches if v.capacity)
        ages.extend(age for v in batch.vouches for age in v.ages.values())
        owners = runtime.owners(CONNECTORS)
        return all(
            cid in latest
            and latest[cid].status is not None
            and latest[cid].status.state == State.RUNNING
            and latest[cid].status.worker_id == owners[cid]
            and latest[cid].reporting
            and cid in vouched.get(owners[cid] or "", frozenset())
            for cid in CONNECTORS
        )

    wait_until(read, 30, interval=0.2, what="every connector RUNNING on its owner in the feed")
    epochs = {n.epoch for n in latest.values()}
    assert min(epochs) > 0, "each record carries its writer's group generation"
    assert ages and max(ages) <= 2, "the stand-in drivers refresh every 0.1 s"
    owners = runtime.owners(CONNECTORS)
    for worker in ("w1", "w2"):  # each says its capacity and load in its own record
        said = capacity[worker]
        assert said["cores"] == running.workers[worker].config.worker_cores
        assert said["cores_held"] == 0 and said["draining"] is False
        assert said["connectors"] == sum(1 for o in owners.values() if o == worker)
        assert said["memory_available_mb"] > 0

    stopped = CONNECTORS[0]
    runtime.set_target_state(stopped, TargetState.STOPPED)

    def stopped_in_feed() -> bool:
        read()
        status = latest[stopped].status
        return status is not None and status.state == State.STOPPED

    wait_until(stopped_in_feed, 15, interval=0.2, what="the stop in the feed")
    news = latest[stopped]
    assert news.status is not None and news.status.worker_id in {"w1", "w2"}

    # Deleted: its owner's relay writes a tombstone (fenced like a status), so the status
    # topic does not keep the record of a connector that no longer exists.
    runtime.delete(stopped)

    def removed_from_the_feed() -> bool:
        read()
        return latest[stopped].status is None

    wait_until(removed_from_the_feed, 15, interval=0.2, what="the deleted one's tombstone")


def test_a_connector_moved_to_another_slot_runs_on_that_slots_owner_and_never_on_both(
    runtime: SparkRuntime, running: Running
) -> None:
    """Capacity-aware placement's move, as the console makes it: stopped where it runs (a
    report fenced by the old owner's generation), then its desired state moved to a slot of
    the other worker (the tombstone in the old slot confirmed first). It runs there, is
    reported from there, and a delete reaches it there."""
    deploy_all(runtime)
    w1, w2 = start_both(running, runtime)
    assert w2.owner is not None
    cid = next(c for c in CONNECTORS if runtime.owners([c])[c] == "w1")
    home, target = slot_of(cid, SLOTS), min(w2.owner.slots())
    feed = runtime.status_feed()
    assert feed is not None
    seen: list[StatusNews] = []
    cursor: dict[int, int] | None = None

    def read() -> None:
        nonlocal cursor
        batch = feed.read(cursor, budget=1.0)
        cursor = batch.cursor
        seen.extend(n for n in batch.news if n.connector_id == cid)

    runtime.set_target_state(cid, TargetState.STOPPED)  # step 1: stopped by its owner
    wait_until(lambda: states(runtime).get(cid) == State.STOPPED, 15, 0.1, "stopped on w1")
    moved = runtime.relocate(cid, target)  # step 2
    assert moved is not None and moved.slot == target
    runtime.set_target_state(cid, TargetState.RUNNING)
    both: list[str] = []

    def running_on_w2() -> bool:
        on1, on2 = cid in running.hosting("w1"), cid in running.hosting("w2")
        if on1 and on2:
            both.append(cid)
        status = runtime.status([cid]).get(cid)
        return on2 and not on1 and status is not None and status.state == State.RUNNING

    wait_until(running_on_w2, 20, 0.05, "running on w2, the owner of its new slot")
    assert both == [], "never run by both workers"
    assert runtime.owners([cid])[cid] == "w2"
    assert w1.owner is not None and cid not in w1.owner.owned()

    def reported_from_the_new_slot() -> bool:
        read()
        mine = [n for n in seen if n.slot == target]
        return bool(mine) and mine[-1].status is not None and mine[-1].status.worker_id == "w2"

    wait_until(reported_from_the_new_slot, 15, 0.2, "RUNNING on w2 in the feed, new slot")
    wait_until(
        lambda: (read(), any(n.slot == home and n.status is None for n in seen))[1],
        15,
        0.2,
        "its record in the slot it left removed (a tombstone)",
    )
    runtime.delete(cid)  # the tombstone goes to the slot it was placed in
    wait_until(lambda: cid not in running.hosting("w2"), 15, 0.1, "deleted where it runs")
    assert cid not in w2.owner.owned()
