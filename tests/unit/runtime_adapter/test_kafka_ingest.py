"""Topic and producer helpers of runtime_adapter.kafka when no broker answers."""

from __future__ import annotations

import pytest

from runtime_adapter.base import RuntimeUnavailable
from runtime_adapter.kafka import (
    BrokerUnreachable,
    DurableProducer,
    ensure_topic,
    ingest_topic,
)

NOWHERE = "127.0.0.1:1"


def test_ingest_topics_are_named_after_the_channel():
    assert ingest_topic("web-orders") == "sluice.ingest.web-orders"


def test_ensure_topic_says_the_broker_is_unreachable():
    with pytest.raises(BrokerUnreachable, match=r"127\.0\.0\.1:1 unreachable"):
        ensure_topic(NOWHERE, "t", partitions=1, replication_factor=1, timeout=2)
    assert issubclass(BrokerUnreachable, RuntimeUnavailable)  # what the console catches


def test_unconfirmed_records_are_reported_never_claimed():
    producer = DurableProducer(NOWHERE, delivery_timeout=1)
    try:
        answers = producer.produce("t", [("a", b"{}"), ("b", b"{}")])
    finally:
        producer.close(0)
    assert len(answers) == 2 and all(answer for answer in answers), answers
