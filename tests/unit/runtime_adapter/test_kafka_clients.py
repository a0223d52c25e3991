"""The runtime's Kafka clients, all built by runtime_adapter/kafka.py's factory, on a real broker:
a redrive written and read back, MirrorMaker 2's offsets topic created (replicated as the
settings say, compacted) and read back, a channel's offsets committed to its consumer group
without ever holding up the caller."""

from __future__ import annotations

import os
import socket
import time
import uuid

import pytest
from confluent_kafka import Consumer, KafkaError, KafkaException, TopicPartition
from confluent_kafka.admin import AdminClient, ConfigResource, NewTopic, ResourceType

from runtime_adapter.dead_letters import (
    OutgoingRecord,
    ensure_redrive_topic,
    produce_confirmed,
    read_kafka_tail,
)
from runtime_adapter.kafka import GroupCommitter, TopicReplication, watermarks
from runtime_adapter.mirrormaker2 import read_mirror_offsets, write_mirror_offsets


def topic_config(bootstrap: str, topic: str, name: str) -> tuple[str, bool]:
    admin = AdminClient({"bootstrap.servers": bootstrap})
    resource = ConfigResource(ResourceType.TOPIC, topic)
    entry = admin.describe_configs([resource])[resource].result(timeout=10)[name]
    return entry.value, entry.is_default


def test_a_redrive_is_written_in_order_and_read_back(kafka_bootstrap: str) -> None:
    topic = f"sluice-redrive.clients-{uuid.uuid4().hex[:8]}"
    ensure_redrive_topic(kafka_bootstrap, topic, replication=TopicReplication(1, 1))
    ensure_redrive_topic(kafka_bootstrap, topic, replication=TopicReplication(1, 1))  # again
    assert topic_config(kafka_bootstrap, topic, "min.insync.replicas") == ("1", False)

    records = [OutgoingRecord(f"event {n}".encode(), [("n", str(n).encode())]) for n in range(5)]
    placed = produce_confirmed(kafka_bootstrap, topic, records)
    assert placed == [(0, offset) for offset in range(5)]
    tail = read_kafka_tail(kafka_bootstrap, topic, limit=3)
    assert [record.value for record in tail] == [b"event 2", b"event 3", b"event 4"]


def test_mirrormaker2_offsets_topic_is_created_compacted_and_read_back(
    kafka_bootstrap: str,
) -> None:
    topic = f"mm2-offsets.clients{uuid.uuid4().hex[:6]}.internal"
    offsets = {("orders", 0): 41, ("orders", 1): 7}
    replication = TopicReplication(1, 1)
    assert write_mirror_offsets(kafka_bootstrap, topic, "east", offsets, replication=replication)
    assert not write_mirror_offsets(kafka_bootstrap, topic, "east", {("orders", 0): 42})
    assert topic_config(kafka_bootstrap, topic, "cleanup.policy") == ("compact", False)
    assert topic_config(kafka_bootstrap, topic, "min.insync.replicas") == ("1", False)
    assert read_mirror_offsets(kafka_bootstrap, topic, "east") == {
        ("orders", 0): 42,
        ("orders", 1): 7,
    }


def test_an_offsets_topic_read_keeps_its_aliases_keys_only_and_is_bounded(
    kafka_bootstrap: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Issue 29 (finding 5): the read held every record of any topic in memory."""
    from confluent_kafka import Producer

    from runtime_adapter import mirrormaker2
    from runtime_adapter.base import OffsetsError

    topic = f"mm2-offsets.bound{uuid.uuid4().hex[:6]}.internal"
    write_mirror_offsets(kafka_bootstrap, topic, "east", {("orders", 0): 41})
    producer = Producer({"bootstrap.servers": kafka_bootstrap})
    for n in range(50):  # another connector's keys and junk: read past, never kept
        producer.produce(topic, key=f"junk-{n}".encode(), value=b"{}")
    write_mirror_offsets(kafka_bootstrap, topic, "west", {("orders", 0): 5})
    producer.flush(10)
    assert read_mirror_offsets(kafka_bootstrap, topic, "east") == {("orders", 0): 41}

    monkeypatch.setattr(mirrormaker2, "MAX_SCANNED", 20)
    with pytest.raises(OffsetsError, match="not an offsets topic Sluice reads"):
        read_mirror_offsets(kafka_bootstrap, topic, "east")


class LeaderMovingConsumer:
    """A consumer whose partition leader is still unknown for its first ``moving`` asks (what a
    topic just created answers), then known; or failing with ``code`` every time."""

    def __init__(self, moving: int, code: int = KafkaError.NOT_LEADER_FOR_PARTITION) -> None:
        self.moving, self.code, self.asked = moving, code, 0

    def get_watermark_offsets(self, partition: TopicPartition, timeout: float) -> tuple[int, int]:
        self.asked += 1
        if self.asked <= self.moving:
            raise KafkaException(KafkaError(self.code))
        return 3, 17


def test_watermarks_ask_again_while_the_leader_is_moving_and_no_longer() -> None:
    moving = LeaderMovingConsumer(moving=3)
    assert watermarks(moving, TopicPartition("t", 0), timeout=5) == (3, 17)
    assert moving.asked == 4

    gone = LeaderMovingConsumer(moving=10**6, code=KafkaError.TOPIC_AUTHORIZATION_FAILED)
    with pytest.raises(KafkaException):
        watermarks(gone, TopicPartition("t", 0), timeout=5)
    assert gone.asked == 1  # not a moving leader: no second ask

    stuck = LeaderMovingConsumer(moving=10**6)
    with pytest.raises(KafkaException):
        watermarks(stuck, TopicPartition("t", 0), timeout=0.5)
    assert 1 <= stuck.asked <= 4  # gives up at the timeout


def closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def test_a_commit_never_waits_for_a_coordinator_that_is_away() -> None:
    # librdkafka's synchronous commit waits for the group's coordinator (45 s here): the
    # driver's loop that commits also reports its status, so it must not be held with it.
    committer = GroupCommitter(f"127.0.0.1:{closed_port()}", f"sluice-{uuid.uuid4().hex[:8]}")
    started = time.monotonic()
    for offset in range(1, 4):
        committer.commit({("orders", 0): offset})
    handed_over = time.monotonic() - started
    committer.close(timeout=0.5)
    closed = time.monotonic() - started

    # A wait for the coordinator is 45 s; the calls themselves, milliseconds: bounds well
    # apart from both, that a busy machine cannot stretch the calls past.
    assert handed_over < 15, f"commit() waited {handed_over:.1f} s"
    assert closed < 20, f"close() waited {closed:.1f} s past its timeout"
    assert not committer.idle()  # still trying, on its own thread


def test_the_newest_offsets_handed_over_are_those_committed(kafka_bootstrap: str) -> None:
    topic, group = f"commits-{uuid.uuid4().hex[:8]}", f"sluice-{uuid.uuid4().hex[:8]}"
    admin = AdminClient({"bootstrap.servers": kafka_bootstrap})
    admin.create_topics([NewTopic(topic, num_partitions=2, replication_factor=1)])[topic].result(
        timeout=30
    )
    committer = GroupCommitter(kafka_bootstrap, group)
    for offset in range(1, 51):
        committer.commit({(topic, 0): offset, (topic, 1): 2 * offset})
    committer.close(timeout=10)

    reader = Consumer({"bootstrap.servers": kafka_bootstrap, "group.id": group})
    try:
        found = reader.committed([TopicPartition(topic, p) for p in (0, 1)], 10)
    finally:
        reader.close()
    assert {tp.partition: tp.offset for tp in found} == {0: 50, 1: 100}


def test_the_control_loops_admin_client_is_made_once_per_process_and_cluster() -> None:
    """No handle is made and dropped every pass: dropping one whose coordinator lookup is
    under way aborts the process (librdkafka's enq_once assertion, seen in the fault suite)."""
    from runtime_adapter import kafka

    first = kafka.shared_admin("127.0.0.1:9")
    assert kafka.shared_admin("127.0.0.1:9") is first
    assert kafka.shared_admin("127.0.0.1:10") is not first


def test_an_admin_client_given_up_on_is_kept_for_a_while_and_until_its_requests_end(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from runtime_adapter import kafka

    class Future:
        def __init__(self) -> None:
            self.finished = False

        def done(self) -> bool:
            return self.finished

    now = [1000.0]
    monkeypatch.setattr(kafka.time, "monotonic", lambda: now[0])
    monkeypatch.setattr(kafka, "_PENDING", [])
    pending, later = Future(), Future()
    kafka._outlive("first", [pending])  # type: ignore[arg-type]
    now[0] += kafka.KEEP_GIVEN_UP + 1
    kafka._outlive("second", [later])  # type: ignore[arg-type]
    assert [a for a, _, _ in kafka._PENDING] == ["first", "second"]  # its request goes on
    pending.finished = True
    kafka._outlive("third", [Future()])  # type: ignore[arg-type]
    assert [a for a, _, _ in kafka._PENDING] == ["second", "third"]  # let go only now


def test_a_look_at_a_groups_members_left_unanswered_stays_asked() -> None:
    """The caller gives up waiting, librdkafka does not (a request it timed out while the
    coordinator lookup was under way aborted the process): a later call waits for the same
    question instead of asking another."""
    from runtime_adapter import kafka

    with pytest.raises(kafka.BrokerUnreachable, match=r"no answer within 0.3 s \(still asked\)"):
        kafka.group_members("127.0.0.1:9", "nobody-answers", timeout=0.3)
    key = (os.getpid(), "127.0.0.1:9", "nobody-answers")
    asked = kafka._LOOKUPS[key][1]
    with pytest.raises(kafka.BrokerUnreachable):
        kafka.group_members("127.0.0.1:9", "nobody-answers", timeout=0.3)
    assert kafka._LOOKUPS[key][1] is asked, "not asked a second time"
    assert not asked.done()


def test_the_members_of_a_group_are_asked_anew_each_time(kafka_bootstrap: str) -> None:
    from runtime_adapter import kafka

    group = topic = f"members-{uuid.uuid4().hex[:8]}"
    admin = AdminClient({"bootstrap.servers": kafka_bootstrap})
    admin.create_topics([NewTopic(topic, num_partitions=1, replication_factor=1)])[topic].result(
        timeout=30
    )
    reader = Consumer(
        {"bootstrap.servers": kafka_bootstrap, "group.id": group, "client.id": "the-reader"}
    )
    reader.subscribe([topic])
    try:
        deadline = time.monotonic() + 30
        members: set[str] = set()
        while not members and time.monotonic() < deadline:
            reader.poll(0.2)
            members = kafka.group_members(kafka_bootstrap, group, timeout=10)
        first = kafka._LOOKUPS[(os.getpid(), kafka_bootstrap, group)][1]
        assert members == {"the-reader"}
    finally:
        reader.close()
    assert kafka.group_members(kafka_bootstrap, group, timeout=10) == set(), "left: asked anew"
    assert kafka._LOOKUPS[(os.getpid(), kafka_bootstrap, group)][1] is not first


def test_offsets_left_unanswered_keep_their_handles_and_cap_new_questions(monkeypatch) -> None:
    """A group's offsets asked of brokers that do not answer: the caller gives up, the handle
    is kept until Kafka answers; past the cap, nothing new is asked."""
    from runtime_adapter import kafka

    monkeypatch.setattr(kafka, "_PENDING", [])
    monkeypatch.setattr(kafka, "MAX_UNANSWERED", 1)
    with pytest.raises(kafka.BrokerUnreachable, match="could not read the offsets"):
        kafka.group_offsets("127.0.0.1:9", "connect-orders", timeout=0.3)
    assert kafka.unanswered() == 1
    made = []
    monkeypatch.setattr(kafka, "admin_client", lambda *a, **k: made.append(a))
    with pytest.raises(kafka.BrokerUnreachable, match="1 earlier questions to Kafka are still"):
        kafka.group_offsets("127.0.0.1:9", "connect-orders", timeout=0.3)
    assert made == [], "no new handle"
