"""The store's side of the console's re-send (issue 28): a cheap summary read every pass, the
ids read only on a shortfall, and a restore that fills in, raises and goes on counting."""

from __future__ import annotations

from runtime_adapter.base import Deployment, Restoration, WorkerInfo
from runtime_adapter.spark import SparkRuntime
from runtime_adapter.states import TargetState
from runtime_adapter.store import RedisStore


def deployment(cid: str, *, worker: str | None = "w1", generation: int = 0) -> Deployment:
    return Deployment(
        cid, cid, 2, {"source": {}}, TargetState.RUNNING, worker, generation, f"{cid}-key"
    )


def test_the_summary_counts_only_connectors_held_whole(store: RedisStore):
    assert store.desired_summary() == (None, 0)
    store.put_deployment(deployment("a"))
    store.put_deployment(deployment("b"))
    store.set_target("stray", TargetState.STOPPED)  # a target alone is no connector
    store.redis.hdel(store.key("desired:generation"), "b")

    assert store.desired_summary() == (None, 1)
    assert store.desired_ids() == {"a"}
    store.set_epoch("t1")
    assert store.desired_summary() == ("t1", 1)


def test_restore_fills_in_raises_the_generation_and_goes_on_counting(store: RedisStore):
    store.set_target("a", TargetState.STOPPED)  # sent since the loss: stays
    store.add_dead_letters("a", 2)  # counted since the loss
    store.add_sink_retries("a", 9)  # above the console's total: nothing was lost

    store.restore([Restoration(deployment("a", generation=3), dead_letters=7, sink_retries=4)])

    restored = store.deployment("a")
    assert restored == Deployment(
        "a", "a", 2, {"source": {}}, TargetState.STOPPED, "w1", 3, "a-key"
    )
    assert store.redis.hget(store.key("deadletters"), "a") == "9"
    assert store.redis.hget(store.key("sinkretries"), "a") == "9"


def test_restore_never_lowers_a_generation_and_is_idempotent(store: RedisStore):
    store.put_deployment(deployment("a"))
    store.bump_generation("a")
    store.bump_generation("a")

    for _ in range(2):
        store.restore([Restoration(deployment("a", generation=1), dead_letters=5)])

    assert store.deployment("a").generation == 2
    assert store.redis.hget(store.key("deadletters"), "a") == "5"


def test_an_unassigned_connector_is_restored_unassigned(store: RedisStore):
    store.restore([Restoration(deployment("a", worker=None))])

    assert store.deployment("a").worker_id is None
    assert store.desired_ids() == {"a"}


def test_set_epoch_wakes_every_registered_worker(runtime: SparkRuntime):
    runtime.store.heartbeat(WorkerInfo("w1", "h", 1, 1.0, 2.0))

    runtime.set_epoch("t2")

    assert runtime.store.epoch() == "t2"
    assert runtime.store.wait_nudge("w1", 0.01)
