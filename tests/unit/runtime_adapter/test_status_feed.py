"""The status topic read as a feed from a cursor (:class:`StatusFeedReader`) on a real broker.

Records are written here by a plain producer, as a relay's committed transactions leave them;
the fenced writes of real relays are read in test_group_placement.py."""

from __future__ import annotations

import time
import uuid

import pytest
from confluent_kafka import Producer

from runtime_adapter.base import RuntimeUnavailable
from runtime_adapter.group import GroupConfig, StatusRecord, ensure_runtime_topics, slot_of
from runtime_adapter.group.status import StatusFeedReader, StatusScanner, vouch_key
from runtime_adapter.states import State

SLOTS = 4


@pytest.fixture
def config(kafka_bootstrap: str) -> GroupConfig:
    name = f"feed-{uuid.uuid4().hex[:8]}"
    config = GroupConfig(
        kafka_bootstrap,
        group_id=name,
        config_topic=f"{name}.config",
        status_topic=f"{name}.status",
        slots=SLOTS,
        placement="group",
    )
    ensure_runtime_topics(config)
    return config


class Writer:
    def __init__(self, config: GroupConfig) -> None:
        self.config = config
        self.producer = Producer({"bootstrap.servers": config.bootstrap})

    def status(self, cid: str, state: str, generation: int, *, reporting: bool = True) -> None:
        status = {"connector_id": cid, "state": state, "worker_id": "w1", "reporting": reporting}
        record = StatusRecord(cid, status, generation, "m1", "w1", self._slot(cid))
        self._send(cid, record.to_json())

    def vouch(self, worker: str, ids: list[str], generation: int, slot: int = 0) -> None:
        body = {"ages": {"4": ids}, "report_interval": 10.0, "at": 1_700_000_000.0}
        key = vouch_key(worker)
        self._send(key, StatusRecord(key, body, generation, "m1", worker, slot).to_json(), slot)

    def raw(self, key: str, value: bytes | None, slot: int = 0) -> None:
        self._send(key, value, slot)

    def _slot(self, cid: str) -> int:
        return slot_of(cid, SLOTS)

    def _send(self, key: str, value: bytes | None, slot: int | None = None) -> None:
        partition = self._slot(key) if slot is None else slot
        self.producer.produce(self.config.status_topic, value, key, partition=partition)
        self.producer.flush(10)


def read_all(feed: StatusFeedReader, cursor, want: int = 0):
    """Read until ``want`` news came and a read finds nothing more (the first one may end
    before every partition answered; on a busy machine a read's 2 s may pass before the
    broker's answer: more reads, for at most a minute)."""
    news, vouches = [], []
    give_up = time.monotonic() + 60
    while True:
        batch = feed.read(cursor, budget=2.0)
        news += batch.news
        vouches += batch.vouches
        if cursor == batch.cursor and (len(news) >= want or time.monotonic() > give_up):
            return news, vouches, cursor
        cursor = batch.cursor


def test_the_feed_reads_news_and_vouches_from_a_cursor_on(config: GroupConfig) -> None:
    writer = Writer(config)
    writer.status("a", "RUNNING", 3)
    writer.status("b", "RUNNING", 3)
    writer.vouch("w1", ["a", "b"], 3)
    feed = StatusFeedReader(config)
    news, vouches, cursor = read_all(feed, None, want=2)
    assert {n.connector_id: n.status.state for n in news if n.status} == {
        "a": State.RUNNING,
        "b": State.RUNNING,
    }
    assert [(v.worker_id, v.ages, v.report_interval, v.epoch) for v in vouches] == [
        ("w1", {"a": 4.0, "b": 4.0}, 10.0, 3)
    ]
    assert vouches[0].at == 1_700_000_000.0

    writer.status("a", "PAUSED", 3)
    writer.status("b", "RUNNING", 3, reporting=False)
    news, _, after = read_all(feed, cursor, want=2)
    assert [(n.connector_id, n.status.state, n.reporting) for n in news if n.status] == [
        ("a", State.PAUSED, True),
        ("b", State.RUNNING, False),
    ]

    # Another process's reader, or this one asked again from an older cursor: positioned anew.
    again, _, _ = read_all(StatusFeedReader(config), cursor, want=2)
    assert [n.connector_id for n in again] == ["a", "b"]
    replay, _, _ = read_all(feed, cursor, want=2)
    assert [n.connector_id for n in replay] == ["a", "b"]
    assert read_all(feed, after)[0] == []


def test_a_read_is_caught_up_only_once_every_partition_said_it_is_at_its_end(
    config: GroupConfig,
) -> None:
    """A new reader's first fetches answer partition by partition: a read that stopped
    before all of them did may have read old records only, and must not say it caught up
    (the console dates the news of a caught-up read as of now)."""
    writer = Writer(config)
    for n in range(200):
        writer.raw(f"c{n}", None, slot=n % SLOTS)
    early = StatusFeedReader(config).read(None, budget=0.001)
    assert not early.caught_up

    feed = StatusFeedReader(config)
    batch = feed.read(None, budget=10.0)
    while not batch.caught_up:
        batch = feed.read(batch.cursor, budget=10.0)
    assert sum(batch.cursor.values()) == 200, "caught up: every record was read"
    again = feed.read(batch.cursor, budget=10.0)
    assert again.caught_up and again.news == [], "nothing new: still at the end"
    writer.status("a", "RUNNING", 1)
    later = feed.read(batch.cursor, budget=10.0)
    assert later.caught_up and [n.connector_id for n in later.news] == ["a"]
    writer.status("a", "PAUSED", 2)
    partial = StatusRecord("b", {"state": "RUNNING"}, 1, "m1", "w1", slot_of("b", SLOTS))
    writer.raw("b", partial.to_json(), slot=slot_of("b", SLOTS))  # no connector_id: no news
    latest = StatusFeedReader(config).latest()
    assert set(latest) == {"a", "b"}, "the tombstoned keys hold nothing"
    assert (latest["a"].status["state"], latest["a"].generation) == ("PAUSED", 2)


def test_a_stale_generation_an_unreadable_record_and_a_tombstone(config: GroupConfig) -> None:
    writer = Writer(config)
    writer.status("a", "RUNNING", 5)
    writer.status("a", "FAILED", 4)  # a stale owner's write that slipped past the broker
    writer.raw("a", b"{not json", slot=slot_of("a", SLOTS))
    writer.status("c", "RUNNING", 5)
    writer.raw("c", None, slot=slot_of("c", SLOTS))  # the runtime forgot c
    news, _, _ = read_all(StatusFeedReader(config), None, want=3)
    by_id = [(n.connector_id, n.status.state if n.status else None) for n in news]
    assert ("a", State.FAILED) not in by_id
    assert by_id.count(("a", State.RUNNING)) == 1
    assert [state for cid, state in by_id if cid == "c"] == [State.RUNNING, None]


def test_a_sweep_reads_which_keys_a_slot_holds_to_its_end(config: GroupConfig) -> None:
    writer = Writer(config)
    for cid in ("a", "c", "gone"):
        writer.status(cid, "RUNNING", 2)
    writer.raw("gone", None, slot=slot_of("gone", SLOTS))  # already removed
    writer.vouch("w9", ["a"], 2, slot=slot_of("a", SLOTS))
    scanner = StatusScanner(config, client_id="test-sweep")
    try:
        slots = {slot_of(cid, SLOTS) for cid in ("a", "c", "gone")} | set(range(SLOTS))
        live = scanner.live_keys(slots)
        assert live is not None and set(live) == slots  # empty slots read to their end too
        expected: dict[int, set[str]] = {slot: set() for slot in slots}
        for cid in ("a", "c"):
            expected[slot_of(cid, SLOTS)].add(cid)
        expected[slot_of("a", SLOTS)].add(vouch_key("w9"))
        assert live == expected
        assert scanner.live_keys(set()) == {}
        assert scanner.live_keys({slot_of("a", SLOTS)}) == {  # again, from the beginning
            slot_of("a", SLOTS): expected[slot_of("a", SLOTS)]
        }
    finally:
        scanner.close()


def test_a_feed_that_cannot_reach_kafka_is_unavailable() -> None:
    config = GroupConfig("127.0.0.1:9", status_topic="nowhere.status", placement="group")
    with pytest.raises(RuntimeUnavailable):
        StatusFeedReader(config).read(None, budget=0.5)
