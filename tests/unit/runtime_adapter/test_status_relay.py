"""A worker's status news to the status topic (:class:`StatusRelay`), with a recording writer
in place of Kafka's; on a real broker, through two placing workers: test_group_placement.py."""

from __future__ import annotations

import threading
import time
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import pytest
import redis

from runtime_adapter.base import ConnectorStatus, RuntimeUnavailable, TaskStatus
from runtime_adapter.group import GroupConfig, NotOwner, Ownership, StatusRejected, slot_of
from runtime_adapter.host.status_relay import MAX_TRACE, StatusRelay, status_record
from runtime_adapter.states import State
from runtime_adapter.store import status_to_json
from tests.support.processes import wait_until

CONFIG = GroupConfig("127.0.0.1:9", slots=8)
ALL_SLOTS = frozenset(range(8))


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


class RecordingWriter:
    """Commits what it is given, or raises what it is told to; skips connectors outside the
    ownership's slots as the real writer does with ``skip_unowned``."""

    def __init__(self) -> None:
        self.commits: list[dict[str, dict[str, Any]]] = []
        """The connector records of each transaction (a worker's own records apart)."""
        self.vouches: list[dict[str, Any]] = []
        self.tombstones: list[tuple[str, int]] = []
        """Each tombstone written: its key and slot."""
        self.written_to: dict[str, int] = {}
        """Each key's slot as last written (a record, not a tombstone)."""
        self.opened = 0
        self.fail: Exception | None = None

    def open(self) -> None:
        self.opened += 1

    def write(
        self,
        ownership: Ownership,
        statuses: Mapping[str, Mapping[str, Any] | None],
        *,
        skip_unowned: bool = False,
        slots: Mapping[str, int] | None = None,
    ) -> list[str]:
        assert skip_unowned
        if self.fail is not None:
            raise self.fail
        slot_for = {c: (slots or {}).get(c, slot_of(c, CONFIG.slots)) for c in statuses}
        self.written_to.update((c, slot_for[c]) for c, s in statuses.items() if s is not None)
        skipped = [c for c in statuses if slot_for[c] not in ownership.slots]
        self.tombstones += [
            (c, slot_for[c]) for c, s in statuses.items() if s is None and c not in skipped
        ]
        commit = {c: dict(s) for c, s in statuses.items() if c not in skipped and s is not None}
        for key in [k for k in commit if k.startswith("@worker:")]:
            vouch = commit.pop(key)
            assert abs(vouch.pop("at") - time.time()) < 60  # this host's wall clock
            self.vouches.append(vouch)
        if commit:
            self.commits.append(commit)
        return skipped

    def close(self) -> None:
        pass


class Owner:
    def __init__(self) -> None:
        self.slots: frozenset[int] | None = ALL_SLOTS

    def __call__(self) -> Ownership:
        if self.slots is None:
            raise NotOwner("owns no slot now")
        return Ownership("member-1", 7, self.slots, {}, b"metadata")


class Reports:
    """The drivers' reports as the store holds them; ``down`` makes reading fail."""

    def __init__(self) -> None:
        self.statuses: dict[str, ConnectorStatus] = {}
        self.down = False

    def __call__(self, ids: set[str]) -> dict[str, str]:
        """As :meth:`RedisStore.status_texts` gives them."""
        if self.down:
            raise redis.ConnectionError("Connection refused")
        return {
            cid: f"{s.dead_letters} {s.sink_retries} {status_to_json(s)}"
            for cid, s in self.statuses.items()
            if cid in ids
        }

    def report(self, *statuses: ConnectorStatus) -> None:
        self.statuses.update((s.connector_id, s) for s in statuses)


def status(
    cid: str, state: State = State.RUNNING, *, at: float = 1.0, **kw: Any
) -> ConnectorStatus:
    worker = kw.pop("worker", "w1")
    return ConnectorStatus(
        cid, state, worker, generation=2, updated_at=at, report_interval=10.0, **kw
    )


@dataclass
class Relay:
    relay: StatusRelay
    writer: RecordingWriter
    clock: Clock
    owner: Owner
    reports: Reports


class Topic:
    """The keys the status topic holds per slot, as a sweep reads them; ``None``: unread."""

    def __init__(self) -> None:
        self.keys: dict[int, set[str]] | None = {}
        self.scans: list[set[int]] = []

    def __call__(self, slots: set[int]) -> dict[int, set[str]] | None:
        self.scans.append(set(slots))
        if self.keys is None:
            return None
        return {slot: set(self.keys.get(slot, set())) for slot in slots}


@pytest.fixture
def topic() -> Topic:
    return Topic()


@pytest.fixture
def r(topic: Topic) -> Relay:
    writer, clock, owner, reports = RecordingWriter(), Clock(), Owner(), Reports()
    relay = StatusRelay(
        CONFIG, "w1", owner, reports, writer=lambda: writer, scan=topic, clock=clock
    )
    return Relay(relay, writer, clock, owner, reports)


def test_news_is_written_once_and_a_refresh_is_not(r: Relay) -> None:
    tasks = [TaskStatus(0, State.RUNNING, "w1", "orders", 0, 10, 12, 2, 5.0)]
    r.relay.own({"a", "b"})
    r.reports.report(status("a", tasks=tasks), status("b"))
    assert r.relay.poll() == 2
    record = r.writer.commits[0]["a"]
    assert record["state"] == "RUNNING" and record["generation"] == 2 and record["reporting"]
    assert record["tasks"][0]["offset"] == 10 and record["updated_at"] == 1.0

    r.clock.now += 5  # a refresh: a new updated_at, nothing else new
    r.reports.report(status("a", at=6.0, tasks=tasks), status("b", at=6.0))
    assert r.relay.poll() == 0

    moved = [TaskStatus(0, State.RUNNING, "w1", "orders", 0, 20, 22, 2, 5.0)]
    r.reports.report(status("a", at=7.0, tasks=moved), status("b", at=7.0))
    assert r.relay.poll() == 1  # a's position moved
    assert r.writer.commits[-1].keys() == {"a"}
    assert r.writer.commits[-1]["a"]["tasks"][0]["offset"] == 20


def test_a_report_not_refreshed_within_twice_its_interval_is_written_not_reporting(
    r: Relay,
) -> None:
    r.relay.own({"a", "s"})
    r.reports.report(status("a"), status("s", State.STOPPED))
    r.relay.poll()
    r.clock.now += 17.9
    assert r.relay.poll() == 0
    # 18.1 s since its report last changed, by this host's clock: twice its interval less
    # the 2 s a reader may take to learn it
    r.clock.now += 0.2
    assert r.relay.poll() == 1  # (a STOPPED connector's report is not awaited)
    assert r.writer.commits[-1] == {"a": {**r.writer.commits[0]["a"], "reporting": False}}
    # (its updated_at is the last report's: the driver's clock, shown, never compared)

    r.clock.now += 3  # its driver reports again
    r.reports.report(status("a", at=30.0))
    assert r.relay.poll() == 1 and r.writer.commits[-1]["a"]["reporting"] is True


def test_the_judgement_goes_on_while_the_store_cannot_be_read(r: Relay) -> None:
    """No report can arrive while the store is away: the relay's own clock still ages them."""
    r.relay.own({"a"})
    r.reports.report(status("a"))
    r.relay.poll()
    r.reports.down = True
    r.clock.now += 15
    assert r.relay.poll() == 0
    r.clock.now += 5
    assert r.relay.poll() == 1 and r.writer.commits[-1]["a"]["reporting"] is False
    r.reports.down = False
    r.reports.report(status("a", at=26.0))
    assert r.relay.poll() == 1 and r.writer.commits[-1]["a"]["reporting"] is True


def test_only_its_own_reports_of_what_it_owns_are_relayed(r: Relay) -> None:
    r.relay.own({"a", "c"})
    r.reports.report(status("a"), status("c", worker="w0"), status("x"))  # c: its previous owner's
    r.relay.poll()
    assert r.writer.commits == [{"a": r.writer.commits[0]["a"]}]

    r.owner.slots = ALL_SLOTS - {slot_of("a", CONFIG.slots)}  # its slot revoked meanwhile
    r.reports.report(status("a", State.PAUSED))
    assert r.relay.poll() == 0  # skipped by the writer: not this member's slot any more
    r.owner.slots = ALL_SLOTS
    assert r.relay.poll() == 1  # still due: written once its slot is owned again

    r.relay.own({"c"})  # a given up: forgotten, not written again
    r.reports.report(status("a", State.FAILED))
    assert r.relay.poll() == 0


def test_nothing_is_written_while_not_a_member(r: Relay) -> None:
    r.owner.slots = None
    r.relay.own({"a"})
    r.reports.report(status("a"))
    assert r.relay.poll() == 0 and r.writer.opened == 0
    r.owner.slots = ALL_SLOTS
    assert r.relay.poll() == 1


def test_a_refused_write_is_written_again_whole_and_an_outage_waits(r: Relay) -> None:
    r.relay.own({"a", "b"})
    r.reports.report(status("a"), status("b"))
    r.relay.poll()
    r.writer.fail = StatusRejected("refused by the group coordinator: ILLEGAL_GENERATION", 22)
    r.reports.report(status("a", State.PAUSED))
    assert r.relay.poll() == 0 and r.relay.refused == 1
    r.writer.fail = None
    assert r.relay.poll() == 2  # everything again: the next generation's view starts whole

    r.writer.fail = RuntimeUnavailable("status write not committed: timed out")
    r.reports.report(status("a", State.RUNNING))
    assert r.relay.poll() == 0
    r.writer.fail = None
    assert r.relay.poll() == 1 and r.writer.commits[-1]["a"]["state"] == "RUNNING"


def test_a_record_keeps_a_bounded_trace_and_no_per_refresh_noise() -> None:
    """A JVM trace names its error first, a Python one last: both ends are kept."""
    jvm = "org.apache.spark.SparkNumberFormatException: cannot cast 'x' to BIGINT\n"
    failed = status(
        "a",
        State.FAILED,
        trace=jvm + "\tat frame\n" * 2000 + "ValueError: boom",
        progress={
            "batchId": 4,
            "numInputRows": 9,
            "timestamp": "2026-11-29T05:00:00Z",
            "durationMs": {"triggerExecution": 1234, "addBatch": 1000},
        },
    )
    record = status_record(failed, reporting=True)
    assert len(record["trace"]) <= MAX_TRACE
    assert record["trace"].startswith(jvm) and record["trace"].endswith("ValueError: boom")
    assert record["trace"].splitlines()[0] == jvm.strip()
    # The batch's duration is kept: the console's batch-duration metric is read from it.
    assert record["progress"] == {
        "batchId": 4,
        "numInputRows": 9,
        "durationMs": {"triggerExecution": 1234},
    }
    assert "executors" not in record and record["state"] == "FAILED"


def test_the_worker_vouches_every_half_interval_for_what_reports(r: Relay) -> None:
    """Its own record names the connectors it vouches for: the reporting ones whose record is
    written, in slots it owns; a reader dates their reports by it."""
    r.relay.own({"a", "b", "s"})
    r.reports.report(status("a"), status("b"), status("s", State.STOPPED))
    r.relay.poll()  # with their first records, in the same transaction
    assert r.writer.vouches == [{"ages": {"0": ["a", "b", "s"]}, "report_interval": 10.0}]
    r.clock.now += 4.9
    r.relay.poll()
    assert len(r.writer.vouches) == 1  # due every half interval: 5 s
    r.clock.now += 0.2
    r.relay.poll()
    assert len(r.writer.vouches) == 2

    r.reports.report(status("a", at=2.0))  # a refreshed; b not since the start
    r.clock.now += 13  # 18.1 s: b overdue (18 s)
    r.relay.poll()
    assert r.writer.commits[-1] == {"b": {**r.writer.commits[0]["b"], "reporting": False}}
    r.clock.now += 5
    r.relay.poll()
    # seconds since each one's refresh was read here (a's 5 s ago, s's at the start), up
    assert r.writer.vouches[-1]["ages"] == {"5": ["a"], "24": ["s"]}

    r.owner.slots = ALL_SLOTS - {slot_of("s", CONFIG.slots)}
    r.clock.now += 5
    r.relay.poll()
    assert r.writer.vouches[-1]["ages"] == {"10": ["a"]}  # s: not its slot any more


def test_a_vouch_goes_in_a_slot_the_worker_owns_and_is_fenced_like_the_rest(r: Relay) -> None:
    r.relay.own({"a"})
    r.reports.report(status("a"))
    r.relay.poll()
    r.owner.slots = frozenset({5})  # its vouch goes in slot 5; a's slot may be another
    r.clock.now += 6
    r.relay.poll()
    expected = {"6": ["a"]} if slot_of("a", CONFIG.slots) == 5 else {}
    assert r.writer.vouches[-1]["ages"] == expected and len(r.writer.vouches) == 2
    r.owner.slots = None
    r.clock.now += 6
    r.relay.poll()
    assert len(r.writer.vouches) == 2  # not a member: nothing written


def _slots(*ids: str) -> dict[int, frozenset[str]]:
    """Every slot ready, with these connectors in theirs."""
    return {
        slot: frozenset(cid for cid in ids if slot_of(cid, CONFIG.slots) == slot)
        for slot in ALL_SLOTS
    }


def test_a_connector_deleted_from_an_owned_slot_gets_a_tombstone_once(r: Relay) -> None:
    r.relay.own({"a", "b"}, _slots("a", "b"))
    r.reports.report(status("a"), status("b"))
    assert r.relay.poll() == 2 and r.writer.tombstones == []
    r.relay.own({"b"}, _slots("b"))  # "a" deleted: gone from its slot's desired state
    r.relay.poll()
    assert r.writer.tombstones == [("a", slot_of("a", CONFIG.slots))]
    r.clock.now += 1
    r.relay.poll()
    assert r.writer.tombstones == [("a", slot_of("a", CONFIG.slots))]  # once
    assert "a" not in [c for commit in r.writer.commits[1:] for c in commit]


def test_a_connector_created_again_before_the_write_keeps_its_record(r: Relay) -> None:
    r.relay.own({"a"}, _slots("a"))
    r.relay.own(set(), _slots())
    r.relay.own({"a"}, _slots("a"))  # created again within the same half second
    r.reports.report(status("a"))
    r.relay.poll()
    assert r.writer.tombstones == [] and r.writer.commits[-1]["a"]["state"] == "RUNNING"


def test_a_gained_slot_is_swept_of_what_its_desired_state_does_not_hold(
    r: Relay, topic: Topic
) -> None:
    """Deleted while no one owned the slot, or another worker's own record left there (and
    this worker's own, outside the slot it now writes it to: slot 0)."""
    slot = slot_of("a", CONFIG.slots)
    assert slot != 0
    topic.keys = {slot: {"a", "gone", "@worker:w9", "@worker:w1"}}
    r.relay.own({"a"}, _slots("a"))
    r.reports.report(status("a"))
    r.relay.poll()
    # One record per key and transaction: w1's own record in slot 0 goes in this one.
    assert sorted(r.writer.tombstones) == [("@worker:w9", slot), ("gone", slot)]
    r.clock.now += 1
    r.relay.poll()
    assert ("@worker:w1", slot) in r.writer.tombstones and len(r.writer.tombstones) == 3
    assert topic.scans == [set(ALL_SLOTS)]  # each slot swept once while owned
    r.relay.own({"a"}, {s: ids for s, ids in _slots("a").items() if s != slot})  # let go of
    r.relay.own({"a"}, _slots("a"))  # gained again: swept again
    r.relay.poll()
    assert topic.scans[-1] == {slot}


def test_a_sweep_that_cannot_read_the_topic_is_tried_again(r: Relay, topic: Topic) -> None:
    topic.keys = None
    r.relay.own(set(), _slots())
    r.relay.poll()
    assert r.writer.tombstones == []
    topic.keys = {3: {"gone"}}
    r.relay.poll()
    assert r.writer.tombstones == [("gone", 3)]


def test_tombstones_of_a_slot_let_go_of_are_not_written(r: Relay) -> None:
    r.relay.own({"a"}, _slots("a"))
    r.relay.own(set(), _slots())
    r.owner.slots = ALL_SLOTS - {slot_of("a", CONFIG.slots)}  # revoked before the write
    r.relay.poll()
    assert r.writer.tombstones == []
    r.owner.slots = ALL_SLOTS
    r.relay.poll()
    assert r.writer.tombstones == []  # the slot's next owner sweeps it


def test_the_workers_own_record_moved_to_another_slot_leaves_none_behind(r: Relay) -> None:
    """It goes in the lowest slot the worker owns; when that changes, the record left in
    the slot it still owns gets a tombstone (in one it let go of, the slot's new owner's sweep
    removes it)."""
    r.relay.own({"a"})
    r.reports.report(status("a"))
    r.relay.poll()
    assert len(r.writer.vouches) == 1  # in slot 0
    r.owner.slots = ALL_SLOTS - {0}  # slot 0 taken away: the next one goes to slot 1
    for _ in range(2):
        r.clock.now += 6
        r.reports.report(status("a", at=r.clock.now))
        r.relay.poll()
    assert len(r.writer.vouches) == 3 and r.writer.tombstones == []
    r.owner.slots = ALL_SLOTS  # slot 0 back: the record in slot 1 (still its own) goes
    r.clock.now += 6
    r.reports.report(status("a", at=r.clock.now))
    r.relay.poll()
    r.clock.now += 1
    r.relay.poll()
    assert r.writer.tombstones == [("@worker:w1", 1)]


def test_a_connector_placed_in_another_slot_is_written_there_and_a_move_leaves_none_behind(
    r: Relay, topic: Topic
) -> None:
    """The console may place a connector away from its home slot (capacity): its record goes
    to the slot its desired state is in, and a record of it in its home slot is swept; moved
    again, the record in the slot it left gets a tombstone once, after the record where it
    runs now."""
    home = slot_of("a", CONFIG.slots)
    away, other = (home + 1) % CONFIG.slots, (home + 2) % CONFIG.slots
    topic.keys = {home: {"a"}, away: {"a"}}  # before it was placed away, it ran at home
    r.relay.own({"a"}, {**_slots(), away: frozenset({"a"})})
    r.reports.report(status("a"))
    r.relay.poll()
    assert r.writer.written_to["a"] == away and r.writer.commits[-1]["a"]["state"] == "RUNNING"
    r.clock.now += 1
    r.relay.poll()
    assert r.writer.tombstones == [("a", home)]  # the record where it runs stays
    r.relay.own({"a"}, {**_slots(), other: frozenset({"a"})})  # moved from away to other
    r.reports.report(status("a", at=2.0))
    r.relay.poll()
    assert r.writer.written_to["a"] == other and r.writer.tombstones == [("a", home)]
    r.clock.now += 1
    r.relay.poll()
    assert r.writer.tombstones == [("a", home), ("a", away)]
    r.clock.now += 1
    r.relay.poll()
    assert r.writer.tombstones == [("a", home), ("a", away)]  # once each


def test_the_workers_capacity_goes_in_its_own_record_at_once_when_it_changes(r: Relay) -> None:
    """Even a worker with no connector says what it has (the console moves real-time channels
    to it); a change of cores held is written at once, the memory with the next vouch."""
    capacity = {"cores": 4, "cores_held": 0, "connectors": 0, "draining": False}
    r.relay.own(set(), _slots())
    r.relay.poll()
    assert r.writer.vouches == []  # nothing to say yet
    r.relay.capacity({**capacity, "memory_available_mb": 900})
    r.relay.poll()
    assert r.writer.vouches[-1]["capacity"] == {
        **capacity,
        "memory_available_mb": 900,
        "slots": sorted(ALL_SLOTS),  # where the console may move a connector to it
    }
    r.relay.capacity({**capacity, "memory_available_mb": 800})
    r.clock.now += 0.5
    r.relay.poll()
    assert len(r.writer.vouches) == 1  # the memory alone: not news
    r.relay.capacity({**capacity, "cores_held": 3, "memory_available_mb": 800})
    r.relay.poll()
    assert len(r.writer.vouches) == 2
    assert r.writer.vouches[-1]["capacity"]["cores_held"] == 3
    assert r.writer.vouches[-1]["capacity"]["memory_available_mb"] == 800
    r.relay.poll()
    assert len(r.writer.vouches) == 2  # written once
    r.owner.slots = ALL_SLOTS - {0}  # its slots changed: news
    r.relay.poll()
    assert r.writer.vouches[-1]["capacity"]["slots"] == sorted(ALL_SLOTS - {0})


def test_a_capacity_is_read_with_its_known_figures_of_the_right_type() -> None:
    from runtime_adapter.group.status import _capacity

    assert _capacity(None) is None and _capacity([1]) is None
    assert _capacity(
        {"cores": 8, "cores_held": "2", "draining": 1, "connectors": True, "gpu": 1}
    ) == {"cores": 8}
    assert _capacity({"slots": [1, 2]}) == {"slots": [1, 2]}
    assert _capacity({"slots": [1, "2"]}) == {} and _capacity({"slots": [True]}) == {}


class WedgedWriter(RecordingWriter):
    """A writer whose write never returns until released (librdkafka's
    send_offsets_to_transaction, stuck past its timeout when the coordinator broker died)."""

    def __init__(self) -> None:
        super().__init__()
        self.release = threading.Event()

    def write(self, *args: Any, **kwargs: Any) -> list[str]:
        self.release.wait(30)
        return []


def test_a_write_that_does_not_return_gives_its_writer_up_and_a_new_one_writes(
    topic: Topic,
) -> None:
    wedged, fresh = WedgedWriter(), RecordingWriter()
    made = iter([wedged, fresh])
    owner, reports, clock = Owner(), Reports(), Clock()
    relay = StatusRelay(
        CONFIG, "w1", owner, reports, writer=lambda: next(made), scan=topic, clock=clock
    )
    relay.write_patience = 0.2
    relay.own({"a"})
    reports.report(status("a"))
    try:
        started = time.monotonic()
        assert relay.poll() == 0, "nothing committed"
        # the wedge holds for 30 s, the relay's patience is 0.2 s: half the wedge apart from
        # both, so a busy machine cannot cross it
        assert time.monotonic() - started < 15, "the relay's thread did not wait on the wedge"
        assert relay.wedged == 1
        assert relay.poll() == 1, "a new writer wrote what was due"
        assert fresh.opened == 1 and fresh.commits[-1]["a"]["state"] == "RUNNING"
    finally:
        wedged.release.set()


def test_writes_that_never_return_pile_up_no_further_than_the_cap(topic: Topic) -> None:
    """A Kafka that wedges every write: each wedged call keeps its thread and producer, so
    past :attr:`StatusRelay.max_wedged` of them no new writer is made until one returns."""
    wedged = [WedgedWriter() for _ in range(3)]
    made = iter(wedged)
    owner, reports, clock = Owner(), Reports(), Clock()
    relay = StatusRelay(
        CONFIG, "w1", owner, reports, writer=lambda: next(made), scan=topic, clock=clock
    )
    relay.write_patience, relay.max_wedged = 0.1, 2
    relay.own({"a"})
    reports.report(status("a"))
    try:
        assert relay.poll() == 0 and relay.poll() == 0
        assert relay.wedged == 2 and relay.wedged_now() == 2
        assert relay.poll() == 0, "the cap: nothing written"
        assert relay.wedged == 2, "and no third writer made"
        assert relay.outage.since is not None, "said as an outage of the status topic"
        wedged[0].release.set()  # one returns: a new writer may be made
        wait_until(lambda: relay.wedged_now() == 1, 5, what="the wedged call to return")
        wedged[2].release.set()  # the third writer, made now, answers at once
        assert relay.poll() == 1, "written once a wedged call returned"
        assert relay.wedged == 2 and relay.outage.since is None
    finally:
        for writer in wedged:
            writer.release.set()
