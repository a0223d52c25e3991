"""A running bus takes a new revision that changes its rules alone without a restart; any other
change releases the connector (its driver starts it again from its checkpoint).

The decision (:func:`pipelines.spec.live.live_revision`, on
:func:`pipelines.spec.live.live_change`), the hosted connector taking and applying it, and the
driver's pass choosing between taking and releasing, on the real store. The real query taking
it is tests/integration/test_live_rules.py.
"""

from __future__ import annotations

import copy
import time
from dataclasses import replace
from typing import Any

import pytest

from pipelines.spec import SpecError
from pipelines.spec.live import live_revision
from runtime_adapter.base import Deployment
from runtime_adapter.config import RuntimeConfig
from runtime_adapter.host.driver import DriverHost
from runtime_adapter.host.hosted import HostedConnector
from runtime_adapter.states import TargetState
from runtime_adapter.store import Placement, RedisStore

KAFKA = "127.0.0.1:9092"


def sink(topic: str) -> dict[str, Any]:
    return {"type": "kafka", "config": {"bootstrap_servers": KAFKA, "topic": topic}}


def bus(*rules: dict[str, Any], **changes: Any) -> dict[str, Any]:
    spec = {
        "source": {
            "type": "kafka",
            "config": {"bootstrap_servers": KAFKA, "topics": ["orders"]},
        },
        "transforms": [{"type": "cast", "config": {"fields": {"data.amount": "long"}}}],
        "rules": list(rules),
        # routed batch by batch: a Kafka-only bus under "none" is compiled into its query
        "errors": {"tolerance": "all"},
    }
    return {**spec, **changes}


ORDERS = {"name": "orders", "pattern": {"data": {"kind": ["order"]}}, "sinks": [sink("o")]}
REFUNDS = {"name": "refunds", "pattern": {"data": {"kind": ["refund"]}}, "sinks": [sink("r")]}
V1 = bus(ORDERS)
V2 = bus(ORDERS, REFUNDS)


@pytest.mark.parametrize(
    ("new", "live"),
    [
        (V2, True),  # a rule added
        (bus({**ORDERS, "pattern": {"data": {"kind": ["quote"]}}}), True),  # a pattern edited
        (bus({**ORDERS, "enabled": False}), True),  # a rule disabled
        (bus({**ORDERS, "sinks": [sink("o"), sink("o2")]}), True),  # a target added
        (bus(ORDERS, transforms=[]), False),  # the shared chain changed
        (
            bus(
                ORDERS,
                source={"type": "kafka", "config": {**V1["source"]["config"], "topics": ["x"]}},
            ),
            False,
        ),
        (bus(ORDERS, errors={"tolerance": "none"}), False),
        ({**{k: v for k, v in V1.items() if k != "rules"}, "sink": sink("o")}, False),  # linear
    ],
)
def test_only_a_change_of_the_rules_is_taken_live(new: dict[str, Any], live: bool) -> None:
    assert live_revision(V1, new) is live


def test_a_bus_compiled_into_its_query_changes_its_rules_by_a_restart() -> None:
    compiled = {"errors": {"tolerance": "none"}}
    assert not live_revision(bus(ORDERS, **compiled), bus(ORDERS, REFUNDS, **compiled))


def test_a_linear_channel_is_never_changed_live() -> None:
    linear = {**{k: v for k, v in V1.items() if k != "rules"}, "sink": sink("o")}
    assert not live_revision(linear, {**linear, "sink": sink("o2")})


def test_an_invalid_revision_is_not_taken_live() -> None:
    broken = bus({**REFUNDS, "pattern": {"data": {"kind": "refund"}}})  # not a list
    assert not live_revision(V1, broken)


class Router:
    """Records the specs a hosted connector hands its bus's router (the real one is in the
    integration test); ``refuse`` makes it refuse them as BusRouter does a change it cannot
    apply."""

    def __init__(self, refuse: bool = False) -> None:
        self.replaced: list[Any] = []
        self.refuse = refuse
        self.compiled = False

    def replace(self, spec: Any) -> None:
        if self.refuse:
            raise SpecError({"source": ["differs from the running query's"]})
        self.replaced.append(spec)


class Query:
    isActive = True

    def __init__(self) -> None:
        self.stopped = False

    def stop(self) -> None:
        self.stopped = True
        self.isActive = False


def deployment(revision: int, spec: dict[str, Any], **changes: Any) -> Deployment:
    fields = {"worker_id": "w1", "generation": 0, **changes}
    return Deployment("c1", "c1", revision, spec, TargetState.RUNNING, **fields)


def running(router: Router | None = None, store: Any = None) -> HostedConnector:
    """A hosted connector whose query runs revision 1 (V1, its start pinned to offsets)."""
    hosted = HostedConnector(
        store,
        RuntimeConfig.from_env(),
        connector_id="c1",
        worker_id="w1",
        generation=0,
        placement=Placement(0, 1, 1.0),
    )
    hosted.deployment = deployment(1, V1)
    hosted.query, hosted.router = Query(), router or Router()
    hosted.running_plain = copy.deepcopy(V1)
    pinned = copy.deepcopy(V1)
    pinned["source"]["config"]["starting_offsets"] = {"offsets": {"orders": {"0": 42}}}
    hosted.built_plain = pinned
    return hosted


def test_a_rules_change_is_taken_and_applied_to_the_running_query() -> None:
    hosted = running()
    new = Placement(0, 2, 2.0)
    assert hosted.take_revision(new, deployment(2, V2))
    assert hosted.placement == new and hosted.wake.is_set()
    # Until its thread applied it, the connector owns both revisions (it must not stop).
    assert hosted.owns(deployment(2, V2)) and hosted.owns(deployment(1, V1))
    hosted.apply_live_revision()
    [applied] = hosted.router.replaced
    # The new rules, on the spec the query was built from (its start as resolved then).
    assert [rule.name for rule in applied.rules] == ["orders", "refunds"]
    assert applied.source.config["starting_offsets"] == {"offsets": {"orders": {"0": 42}}}
    assert hosted.revision == 2 and hosted.live is None and not hosted.query.stopped
    assert hosted.layout == [("orders", ["kafka"]), ("refunds", ["kafka"])]
    assert hosted.running_plain == V2
    assert not hosted.owns(deployment(1, V1))
    hosted.apply_live_revision()  # nothing more to apply: idempotent
    assert len(hosted.router.replaced) == 1


def test_the_newest_of_two_quick_revisions_is_the_one_applied() -> None:
    hosted = running()
    assert hosted.take_revision(Placement(0, 2, 2.0), deployment(2, V2))
    v3 = bus(REFUNDS)
    assert hosted.take_revision(Placement(0, 3, 3.0), deployment(3, v3))
    hosted.apply_live_revision()
    assert [[rule.name for rule in spec.rules] for spec in hosted.router.replaced] == [["refunds"]]
    assert hosted.revision == 3
    # Judged against what runs now: a change of the source is not taken.
    moved = bus(
        REFUNDS, source={"type": "kafka", "config": {"bootstrap_servers": KAFKA, "topics": ["x"]}}
    )
    assert not hosted.take_revision(Placement(0, 4, 4.0), deployment(4, moved))


@pytest.mark.parametrize(
    "why",
    ["restart", "other worker", "paused", "no query", "not a bus", "released", "source", "gone"],
)
def test_what_is_not_taken_live(why: str) -> None:
    hosted = running()
    placement, new = Placement(0, 2, 2.0), deployment(2, V2)
    if why == "restart":
        placement, new = Placement(1, 2, 2.0), deployment(2, V2, generation=1)
    elif why == "other worker":
        new = deployment(2, V2, worker_id="w2")
    elif why == "paused":
        new = replace(new, target_state=TargetState.PAUSED)
    elif why == "no query":
        hosted.stop_query()
    elif why == "not a bus":
        hosted.router = None
    elif why == "released":
        hosted.release()
    elif why == "source":
        new = deployment(2, bus(ORDERS, REFUNDS, transforms=[]))
    assert not hosted.take_revision(placement, None if why == "gone" else new)
    assert hosted.placement == Placement(0, 1, 1.0) and hosted.live is None


def test_a_change_the_router_refuses_restarts_the_query_on_the_new_revision() -> None:
    hosted = running(Router(refuse=True))
    query = hosted.query
    assert hosted.take_revision(Placement(0, 2, 2.0), deployment(2, V2))
    hosted.apply_live_revision()
    # Stopped; the thread's next step starts it again from its checkpoint, on revision 2.
    assert query.stopped and hosted.query is None and hosted.router is None
    assert hosted.revision == 2 and hosted.deployment == deployment(2, V2)


def test_a_query_stopped_before_the_change_was_applied_starts_on_the_new_revision() -> None:
    hosted = running()
    router = hosted.router
    assert hosted.take_revision(Placement(0, 2, 2.0), deployment(2, V2))
    hosted.stop_query()  # paused meanwhile
    hosted.apply_live_revision()
    assert router.replaced == [] and hosted.revision == 2 and hosted.running_plain == V2


def test_the_driver_takes_a_rules_change_and_releases_for_anything_else(
    store: RedisStore, worker_config
) -> None:
    """The driver's pass, on the real store: placements as its worker writes them."""
    host = DriverHost(store, worker_config(), driver_id="w1.d1", worker_id="w1")
    hosted = running(store=store)
    host.hosted["c1"] = hosted
    store.redis.hset(store.key("desired:worker"), "c1", "w1")

    def redeploy(revision: int, spec: dict[str, Any]) -> Placement:
        store.put_deployment(deployment(revision, spec))
        placement = Placement(0, revision, time.time())
        store.place("w1.d1", "c1", placement)
        return placement

    second = redeploy(2, V2)
    assert host.tick()
    assert hosted.placement == second and not hosted.released and hosted.live is not None
    assert host.tick()  # the same placement again: nothing more happens
    assert hosted.placement == second and not hosted.released
    hosted.apply_live_revision()
    assert hosted.revision == 2 and len(hosted.router.replaced) == 1

    redeploy(3, bus(ORDERS, REFUNDS, transforms=[]))  # the shared chain changed: a restart
    assert host.tick()
    assert hosted.released and hosted.placement == second
    assert "c1" in store.drivers()[0].connectors  # until its thread has stopped the query


def test_the_driver_holds_its_connectors_through_an_emptied_store(
    store: RedisStore, worker_config
) -> None:
    """The store emptied under a running connector (a new Redis): the driver releases
    nothing until its worker has written its placements back under the store's new token,
    then runs on with the same placement (no restart)."""
    host = DriverHost(store, worker_config(), driver_id="w1.d1", worker_id="w1")
    hosted = running(store=store)
    host.hosted["c1"] = hosted
    store.put_deployment(deployment(1, V1))
    store.set_epoch("epoch-1")
    store.place("w1.d1", "c1", hosted.placement, "epoch-1")  # type: ignore[arg-type]
    assert host.tick() and not hosted.released

    store.redis.delete(*store.redis.keys(f"{store.prefix}:*"))
    assert host.tick() and not hosted.released, "the token is gone: held"
    store.put_deployment(deployment(1, V1))  # the console's re-send, then its new token
    store.set_epoch("epoch-2")
    assert host.tick() and not hosted.released, "its worker has not written it back yet: held"
    store.place("w1.d1", "c1", hosted.placement, "epoch-2")  # type: ignore[arg-type]
    assert host.tick() and not hosted.released and hosted.placement == Placement(0, 1, 1.0)
    store.unplace("w1.d1", "c1")
    assert host.tick() and hosted.released, "taken out for real: released"
