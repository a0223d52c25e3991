"""The runtime's Kafka clients, all built by runtime_adapter/kafka.py's factory, on a real broker:
a redrive written and read back, MirrorMaker 2's offsets topic created (replicated as the
settings say, compacted) and read back."""

from __future__ import annotations

import uuid

from confluent_kafka.admin import AdminClient, ConfigResource, ResourceType

from runtime_adapter.dead_letters import (
    OutgoingRecord,
    ensure_redrive_topic,
    produce_confirmed,
    read_kafka_tail,
)
from runtime_adapter.kafka import TopicReplication
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
