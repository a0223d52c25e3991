"""An ingest topic's retention (an http channel's archive) set and removed on a real broker."""

from __future__ import annotations

import uuid

import pytest
from confluent_kafka.admin import AdminClient, ConfigResource, ResourceType

from runtime_adapter.kafka import BrokerUnreachable, ensure_topic, set_topic_retention


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
