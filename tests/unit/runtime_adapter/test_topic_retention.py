"""An ingest topic's retention (an http channel's archive) set and removed on a real broker."""

from __future__ import annotations

import uuid

import pytest
from confluent_kafka.admin import AdminClient, ConfigResource, ResourceType

from runtime_adapter.base import RuntimeUnavailable
from runtime_adapter.kafka import (
    BrokerUnreachable,
    TopicReplication,
    create_topic,
    ensure_topic,
    set_topic_retention,
)


def retention(bootstrap: str, topic: str) -> tuple[str, bool]:
    """The topic's ``retention.ms`` and whether it is the broker's default."""
    admin = AdminClient({"bootstrap.servers": bootstrap})
    resource = ConfigResource(ResourceType.TOPIC, topic)
    entries = admin.describe_configs([resource])[resource].result(timeout=10)
    entry = entries["retention.ms"]
    return entry.value, entry.is_default


def test_retention_is_set_changed_and_given_back_to_the_default(kafka_bootstrap: str) -> None:
    topic = f"sluice.ingest.archive-{uuid.uuid4().hex[:8]}"
    ensure_topic(kafka_bootstrap, topic, partitions=1, replication_factor=1)
    default = retention(kafka_bootstrap, topic)
    assert default[1]

    set_topic_retention(kafka_bootstrap, topic, 48 * 3_600_000)
    assert retention(kafka_bootstrap, topic) == (str(48 * 3_600_000), False)
    set_topic_retention(kafka_bootstrap, topic, 3_600_000)
    assert retention(kafka_bootstrap, topic) == ("3600000", False)

    set_topic_retention(kafka_bootstrap, topic, None)
    assert retention(kafka_bootstrap, topic) == default


def test_an_unreachable_broker_is_said_so() -> None:
    with pytest.raises(BrokerUnreachable, match=r"127\.0\.0\.1:1 unreachable"):
        set_topic_retention("127.0.0.1:1", "t", 1000, timeout=2)


def test_a_created_topic_takes_its_replication_from_the_settings(kafka_bootstrap: str) -> None:
    topic = f"sluice.redrive.replicated-{uuid.uuid4().hex[:8]}"
    replication = TopicReplication(factor=1, min_insync=1)
    assert create_topic(kafka_bootstrap, topic, partitions=2, replication=replication)
    assert not create_topic(kafka_bootstrap, topic, partitions=2, replication=replication)

    admin = AdminClient({"bootstrap.servers": kafka_bootstrap})
    resource = ConfigResource(ResourceType.TOPIC, topic)
    entry = admin.describe_configs([resource])[resource].result(timeout=10)["min.insync.replicas"]
    assert (entry.value, entry.is_default) == ("1", False)  # the topic's own, not the broker's
    meta = admin.list_topics(topic, timeout=10).topics[topic]
    assert sorted(meta.partitions) == [0, 1]
    assert all(len(p.replicas) == 1 for p in meta.partitions.values())


def test_more_replicas_than_brokers_is_refused_by_name(kafka_bootstrap: str) -> None:
    with pytest.raises(RuntimeUnavailable, match=r"[Rr]eplication factor"):
        create_topic(
            kafka_bootstrap, "never-made", partitions=1, replication=TopicReplication(3, 2)
        )
