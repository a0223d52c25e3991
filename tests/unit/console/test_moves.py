"""Capacity-aware moves (:mod:`console.services.moves`), driven by the control loop following
the status feed: a real-time channel whose slot's owner lacks the cores it needs goes to a
slot of a worker that has them, only after the old owner reported it stopped. The feed here
is the in-memory one of test_reconcile_feed.py; the runtime's side of a move on a real broker
is in tests/unit/runtime_adapter/test_group_placement.py."""

from __future__ import annotations

from typing import Any

import pytest

from console import services
from console.choices import ConnectorState
from console.models import Connector, LifecycleEvent, Worker
from console.services.moves import MOVE_PATIENCE, Room, rooms_of, slot_in
from runtime_adapter.base import ConnectorStatus, StatusNews, Vouch
from runtime_adapter.states import State, TargetState
from tests.unit.console.test_reconcile_feed import NOW, FakeFeed, far_resync, reconcile

pytestmark = pytest.mark.django_db

SHORT = "real-time mode needs 4 cores (one per source partition) and worker w1 has 0 of 2 free"


@pytest.fixture
def feed(runtime, settings) -> FakeFeed:
    settings.SLUICE_RECONCILE_RESYNC_SECONDS = 1_000_000
    runtime.places = True
    runtime.feed = FakeFeed()
    return runtime.feed


def capacity(worker: str, feed: FakeFeed, *, cores: int, held: int, slots: list[int]) -> None:
    """``worker``'s own record, with what it says of its capacity."""
    said = {"cores": cores, "cores_held": held, "connectors": 0, "draining": False}
    feed.log.append(Vouch(worker, {}, 0.0, 1, at=NOW, capacity={**said, "slots": slots}))


def news(feed: FakeFeed, cid: str, state: State | None, worker: str, slot: int, **kw: Any) -> None:
    status = (
        None
        if state is None
        else ConnectorStatus(cid, state, worker, 0, updated_at=NOW, report_interval=10.0, **kw)
    )
    feed.log.append(StatusNews(cid, status, True, 1, slot))


@pytest.fixture
def short(runtime, feed, spec):
    """Channels started on w1 (slots 0-3, 2 cores, both held), w2 with 8 free (slots 4-7),
    each reported UNASSIGNED by w1 for want of 4 cores."""

    def start(*names: str, w2_cores: int = 8) -> None:
        for worker in ("w1", "w2"):
            runtime.heartbeat(worker, at=NOW)
        capacity("w1", feed, cores=2, held=2, slots=[0, 1, 2, 3])
        capacity("w2", feed, cores=w2_cores, held=0, slots=[4, 5, 6, 7])
        for name in names:
            channel = services.create_channel(name=name, spec=spec)
            services.start_channel(channel)
            runtime.assignments[name] = "w1"
            home = runtime.home_slot(name)
            news(feed, name, State.UNASSIGNED, "w1", home, reason=SHORT, cores_needed=4)
        reconcile(runtime, NOW)
        far_resync()

    return start


def connector(name: str) -> Connector:
    return Connector.objects.select_related("channel").get(runtime_id=name)


def reasons(name: str) -> list[str]:
    return list(
        LifecycleEvent.objects.filter(subject_id=name)
        .order_by("id")
        .values_list("reason", flat=True)
    )


def test_a_channel_short_of_cores_moves_to_a_worker_with_them_only_after_its_owner_stopped_it(
    runtime, feed, short
) -> None:
    short("rt")
    rt = connector("rt")
    assert Worker.objects.get(worker_id="w2").capacity["slots"] == [4, 5, 6, 7]
    move = rt.move
    assert move is not None and move["worker"] == "w2" and move["phase"] == "stopping"
    assert move["slot"] in (4, 5, 6, 7) and move["cores"] == 4 and move["from"] == "w1"
    assert runtime.targets["rt"] == TargetState.STOPPED, "stopped where it is, first"
    assert runtime.calls_named("relocate") == []
    assert rt.state == ConnectorState.UNASSIGNED
    assert rt.status_reason.startswith("moving to worker w2 (slot")
    assert any(r.startswith("moving to worker w2") for r in reasons("rt"))

    reconcile(runtime, NOW + 1)  # no news: it waits for w1's word
    assert runtime.calls_named("relocate") == []
    assert "waiting for worker w1 to report it stopped" in connector("rt").status_reason

    home, slot = runtime.home_slot("rt"), move["slot"]
    news(feed, "rt", State.STOPPED, "w1", home)  # w1's fenced report, in the old slot
    reconcile(runtime, NOW + 2)
    assert runtime.calls_named("relocate") == [("rt", slot, TargetState.RUNNING)]
    rt = connector("rt")
    assert rt.slot == slot and rt.move is None
    assert rt.state == ConnectorState.UNASSIGNED, "the old slot's STOPPED is not shown"
    assert rt.status_reason == f"moved to worker w2's slot {slot}: starting there"
    assert runtime.targets["rt"] == TargetState.RUNNING

    # w2 runs it; the old slot's tombstone, read after it, says nothing of it now.
    runtime.assignments["rt"] = "w2"
    news(feed, "rt", State.RUNNING, "w2", slot)
    news(feed, "rt", None, "w1", home)
    reconcile(runtime, NOW + 3)
    rt = connector("rt")
    assert rt.state == ConnectorState.RUNNING and rt.worker_id == "w2"
    news(feed, "rt", State.STOPPED, "w1", home)  # a late record of the slot it left
    reconcile(runtime, NOW + 4)
    assert connector("rt").state == ConnectorState.RUNNING


def test_with_no_worker_free_enough_it_stays_and_says_so(runtime, feed, short) -> None:
    short("rt", w2_cores=3)
    rt = connector("rt")
    assert rt.move is None and runtime.targets["rt"] == TargetState.RUNNING
    assert rt.status_reason == f"{SHORT} (no live worker has 4 cores free)"


def test_the_cores_of_moves_on_their_way_are_not_free_twice(runtime, feed, short) -> None:
    short("rt-a", "rt-b", w2_cores=6)
    moving = [c for c in ("rt-a", "rt-b") if connector(c).move is not None]
    assert len(moving) == 1, "6 free cores: one channel of 4, not two"
    (stays,) = {"rt-a", "rt-b"} - set(moving)
    assert connector(stays).status_reason.endswith("(no live worker has 4 cores free)")
    # The next pass too counts the move on its way (w2 has not started it yet).
    news(
        feed, stays, State.UNASSIGNED, "w1", runtime.home_slot(stays), reason=SHORT, cores_needed=4
    )
    reconcile(runtime, NOW + 1)
    assert connector(stays).move is None


def test_a_move_is_given_up_when_the_old_owner_runs_it_after_all(runtime, feed, short) -> None:
    short("rt")
    news(feed, "rt", State.RUNNING, "w1", runtime.home_slot("rt"))  # its cores were freed
    reconcile(runtime, NOW + 1)
    rt = connector("rt")
    assert rt.move is None and rt.state == ConnectorState.RUNNING and rt.slot is None
    assert runtime.calls_named("relocate") == []
    assert "move to worker w2 given up: w1 runs it" in reasons("rt")


def test_a_move_with_no_word_from_the_old_owner_is_given_up_after_its_patience(
    runtime, feed, short
) -> None:
    short("rt")
    reconcile(runtime, NOW + MOVE_PATIENCE - 1)
    assert connector("rt").move is not None
    reconcile(runtime, NOW + MOVE_PATIENCE + 1)
    assert connector("rt").move is None
    assert runtime.targets["rt"] == TargetState.RUNNING, "its target sent back"
    assert runtime.calls_named("relocate") == []


def test_a_channel_stopped_during_its_move_ends_it_where_it_is(runtime, feed, short) -> None:
    short("rt")
    services.stop_channel(connector("rt").channel)
    reconcile(runtime, NOW + 1)
    assert connector("rt").move is None
    assert runtime.targets["rt"] == TargetState.STOPPED
    assert runtime.calls_named("relocate") == []


def test_rooms_are_live_workers_in_service_that_say_their_cores_and_slots() -> None:
    def worker(wid: str, **capacity: Any) -> Worker:
        return Worker(worker_id=wid, capacity=capacity)

    workers = [
        worker("a", cores=8, cores_held=2, slots=[1, 2], connectors=3),
        worker("dead", cores=8, slots=[3]),
        worker("drained", cores=8, slots=[4]),
        worker("leaving", cores=8, slots=[5], draining=True),
        worker("no-slots", cores=8, slots=[]),
        worker("mute"),
    ]
    live = {"a", "drained", "leaving", "no-slots", "mute"}
    moving = Connector(runtime_id="x", move={"worker": "a", "cores": 3})
    rooms = rooms_of(workers, live, {"drained"}, [moving])
    assert rooms == {"a": Room("a", 3, (1, 2), 4)}
    assert {slot_in(rooms["a"], f"c{n}") for n in range(20)} == {1, 2}, "spread over its slots"
