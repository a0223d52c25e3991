from __future__ import annotations

from runtime_adapter.base import ConnectorStatus, Deployment, DriverInfo, TaskStatus, WorkerInfo
from runtime_adapter.spark import SparkRuntime
from runtime_adapter.states import State, TargetState
from runtime_adapter.store import Placement, RedisStore

SPEC = {"source": {"type": "kafka", "config": {}}, "transforms": [], "sink": {"type": "kafka"}}


def deployment(cid: str = "orders", **overrides) -> Deployment:
    fields = {
        "connector_id": cid,
        "channel": cid,
        "revision": 1,
        "spec": SPEC,
        "target_state": TargetState.RUNNING,
    }
    return Deployment(**{**fields, **overrides})


def status(cid: str, worker: str, generation: int = 0, state=State.RUNNING) -> ConnectorStatus:
    task = TaskStatus(0, state, worker, topic="t", partition=0, offset=5)
    return ConnectorStatus(cid, state, worker, generation=generation, tasks=[task])


def test_deploy_round_trips_and_keeps_assignment(runtime: SparkRuntime, store: RedisStore):
    runtime.deploy(deployment())
    runtime.assign("orders", "w1")
    runtime.deploy(deployment(revision=2))  # a redeploy without a worker keeps the assignment
    got = store.deployment("orders")
    assert got is not None
    assert (got.revision, got.worker_id, got.generation) == (2, "w1", 0)
    assert got.target_state is TargetState.RUNNING
    assert set(store.deployments()) == {"orders"}


def test_report_is_refused_from_a_stale_owner(runtime: SparkRuntime, store: RedisStore):
    runtime.deploy(deployment())
    runtime.assign("orders", "w1")
    assert store.report(status("orders", "w1"))
    assert not store.report(status("orders", "w2")), "w2 does not own the connector"
    generation = runtime.restart("orders")
    assert generation == 1
    assert runtime.status(["orders"])["orders"].state is State.RESTARTING
    assert not store.report(status("orders", "w1", generation=0)), "generation 0 is stale"
    assert store.report(status("orders", "w1", generation=1))
    got = runtime.status(["orders", "missing"])
    assert list(got) == ["orders"]
    assert got["orders"].tasks[0].offset == 5
    assert got["orders"].tasks[0].state is State.RUNNING
    assert got["orders"].updated_at > 0


def test_reassignment_drops_the_old_workers_status(runtime: SparkRuntime, store: RedisStore):
    runtime.deploy(deployment())
    runtime.assign("orders", "w1")
    store.report(status("orders", "w1"))
    runtime.assign("orders", "w1")  # same worker: status kept
    assert "orders" in runtime.status(["orders"])
    runtime.assign("orders", "w2")
    assert runtime.status(["orders"]) == {}


def test_target_state_and_delete(runtime: SparkRuntime, store: RedisStore):
    runtime.deploy(deployment())
    runtime.set_target_state("orders", TargetState.PAUSED)
    assert store.deployment("orders").target_state is TargetState.PAUSED
    runtime.delete("orders")
    assert store.deployment("orders") is None
    assert store.deployments() == {}


def test_target_states_of_many_connectors_at_once(runtime: SparkRuntime, store: RedisStore):
    for name in ("a", "b", "c"):
        runtime.deploy(deployment(name, worker_id="w1"))
    while store.wait_nudge("w1", 0.01):  # the deploys' nudges
        pass

    runtime.set_target_states(["a", "c"], TargetState.STOPPED)

    targets = {cid: d.target_state for cid, d in store.deployments().items()}
    assert targets == {"a": TargetState.STOPPED, "b": TargetState.RUNNING, "c": TargetState.STOPPED}
    assert store.wait_nudge("w1", 1.0)  # its worker is woken to act now


def test_workers_heartbeat_and_forget(runtime: SparkRuntime, store: RedisStore):
    store.heartbeat(WorkerInfo("w1", "host", 42, 1.0, 2.0, ["orders"]))
    store.heartbeat(WorkerInfo("w1", "host", 42, 1.0, 3.0, ["orders"]))
    [worker] = runtime.workers()
    assert (worker.worker_id, worker.last_heartbeat, worker.connectors) == ("w1", 3.0, ["orders"])
    runtime.forget_worker("w1")
    assert runtime.workers() == []


def test_forgetting_a_worker_drops_its_drivers_only(runtime: SparkRuntime, store: RedisStore):
    store.heartbeat(WorkerInfo("w1", "host", 42, 1.0, 2.0, ["orders"]))
    store.heartbeat(WorkerInfo("w2", "host", 43, 1.0, 2.0, ["billing"]))
    store.driver_heartbeat(
        DriverInfo("w1.d1", "w1", 50, "shared", 1.0, 2.0, 8, connectors=["orders"])
    )
    store.driver_heartbeat(DriverInfo("w2.d1", "w2", 51, "shared", 1.0, 2.0, 8))
    store.place("w1.d1", "orders", Placement(0, 1, 1.0))
    store.place("w2.d1", "billing", Placement(0, 1, 1.0))
    store.retire("w1.d1")

    runtime.forget_worker("w1")

    assert [w.worker_id for w in runtime.workers()] == ["w2"]
    assert [d.driver_id for d in runtime.drivers()] == ["w2.d1"]
    assert store.placements("w1.d1") == {}
    assert not store.retired("w1.d1")
    assert list(store.placements("w2.d1")) == ["billing"]


def test_preview_keeps_the_newest_events_newest_first(runtime: SparkRuntime, store: RedisStore):
    store.publish_preview("orders", [{"id": "1"}, {"id": "2"}], keep=3)
    store.publish_preview("orders", [{"id": "3"}, {"id": "4"}], keep=3)
    assert [e["id"] for e in runtime.preview("orders", limit=10)] == ["4", "3", "2"]
    assert [e["id"] for e in runtime.preview("orders", limit=1)] == ["4"]
    store.publish_preview("orders", [], keep=3)
    runtime.delete("orders")
    assert runtime.preview("orders") == []


def test_dead_letters_and_sink_retries_add_up_across_reports(
    runtime: SparkRuntime, store: RedisStore
):
    runtime.deploy(deployment())
    runtime.assign("orders", "w1")
    assert store.report(status("orders", "w1"))
    store.add_dead_letters("orders", 2)
    store.add_sink_retries("orders", 1)
    store.add_sink_retries("orders", 1)
    assert store.report(status("orders", "w1"))  # a status rewrite keeps the counts
    got = store.statuses(["orders"])["orders"]
    assert (got.dead_letters, got.sink_retries) == (2, 2)
    runtime.delete("orders")
    assert store.redis.hget(store.key("sinkretries"), "orders") is None


def test_a_run_deployment_keeps_its_bounds(runtime: SparkRuntime, store: RedisStore):
    bounds = {
        "run_id": "r1",
        "kind": "replay",
        "start_offsets": {"orders": {"0": 3}},
        "end_offsets": {"orders": {"0": 9}},
    }
    runtime.deploy(deployment("orders.run-1", run=bounds, checkpoint="orders.run-1"))
    runtime.deploy(deployment("orders"))
    assert store.deployment("orders.run-1") == deployment(
        "orders.run-1", run=bounds, checkpoint="orders.run-1"
    )
    assert store.deployments()["orders.run-1"].run == bounds
    assert store.deployment("orders").run is None  # a channel's own connector has none
