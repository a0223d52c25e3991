"""An unreachable Redis or Kafka surfaces from the client side as the protocol's
:class:`RuntimeUnavailable` (the client library's error chained), never as ``redis`` or
confluent-kafka exceptions: the console catches only the runtime's errors."""

from __future__ import annotations

import socket
import time
from pathlib import Path

import pytest
import redis
from confluent_kafka import KafkaException

from runtime_adapter.base import (
    Deployment,
    OffsetChange,
    OffsetsError,
    Restoration,
    RuntimeAdapter,
    RuntimeUnavailable,
    SourceOffset,
)
from runtime_adapter.kafka import BrokerUnreachable, ensure_topic
from runtime_adapter.spark import SparkRuntime
from runtime_adapter.states import TargetState
from tests.support.processes import start_redis


def nobody_listens() -> str:
    """A loopback address where nothing listens (connections are refused at once)."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return f"127.0.0.1:{probe.getsockname()[1]}"


def kafka_spec(bootstrap_servers: str) -> dict:
    return {
        "source": {
            "type": "kafka",
            "config": {"bootstrap_servers": bootstrap_servers, "topics": ["orders"]},
        },
        "transforms": [],
        "sink": {"type": "preview", "config": {}},
    }


@pytest.fixture
def redis_down(tmp_path: Path) -> SparkRuntime:
    """The Spark runtime of a console whose Redis is down."""
    return SparkRuntime(f"redis://{nobody_listens()}/0", "t", checkpoint_root=tmp_path)


DEPLOYMENT = Deployment("orders", "orders", 1, {}, TargetState.RUNNING)
EVERY_CALL = {
    "deploy": (DEPLOYMENT,),
    "assign": ("orders", "w1"),
    "set_target_state": ("orders", TargetState.STOPPED),
    "restart": ("orders",),
    "delete": ("orders",),
    "deploy_many": ([DEPLOYMENT],),
    "set_target_states": (["orders"], TargetState.STOPPED),
    "restart_many": (["orders"],),
    "delete_many": (["orders"],),
    "status": (["orders"],),
    "workers": (),
    "drivers": (),
    "forget_worker": ("w1",),
    "preview": ("orders",),
    "offsets": ("orders", "orders"),
    "alter_offsets": ("orders", OffsetChange("offsets", (SourceOffset("orders", 0, 5),))),
    "desired_summary": (),
    "desired_connectors": (),
    "restore": ([Restoration(DEPLOYMENT, dead_letters=3)],),
    "set_epoch": ("token",),
}


def test_the_spark_runtime_is_a_runtime_adapter(redis_down: SparkRuntime):
    assert isinstance(redis_down, RuntimeAdapter)


@pytest.mark.parametrize("call", sorted(EVERY_CALL))
def test_a_redis_outage_is_runtime_unavailable_from_every_call(redis_down, call):
    with pytest.raises(RuntimeUnavailable) as raised:
        getattr(redis_down, call)(*EVERY_CALL[call])
    cause = raised.value.__cause__
    assert isinstance(cause, redis.RedisError), cause
    assert str(raised.value) == str(cause)  # the console's 503 quotes it as before


@pytest.mark.redis  # it starts a Redis of its own, to stop it
def test_a_redis_that_goes_down_is_runtime_unavailable(tmp_path: Path, artifacts_dir: Path):
    """A store that answered and then stops (its client's connections already open)."""
    service, url = start_redis(tmp_path / "redis", artifacts_dir)
    try:
        runtime = SparkRuntime(url, "t", checkpoint_root=tmp_path)
        runtime.deploy(DEPLOYMENT)
        assert runtime.status(["orders"]) == {}
    finally:
        service.stop()
    with pytest.raises(RuntimeUnavailable) as raised:
        runtime.set_target_state("orders", TargetState.STOPPED)
    assert isinstance(raised.value.__cause__, redis.ConnectionError)


def test_a_kafka_outage_is_runtime_unavailable(redis_down: SparkRuntime):
    """Reading a consumer group (the console's offsets copy) from brokers that do not answer."""
    started = time.monotonic()
    with pytest.raises(RuntimeUnavailable, match="could not read the offsets of consumer group"):
        redis_down.consumer_group_offsets(kafka_spec(nobody_listens()), "connect-orders")
    assert time.monotonic() - started < 30


def test_a_kafka_client_error_is_runtime_unavailable(redis_down, monkeypatch):
    """confluent-kafka's own exception, wherever it escapes a helper, is translated too."""

    def refused(*args, **kwargs):
        raise KafkaException("_TRANSPORT: all brokers down")

    monkeypatch.setattr("runtime_adapter.spark.group_offsets", refused)
    with pytest.raises(RuntimeUnavailable) as raised:
        redis_down.consumer_group_offsets(kafka_spec("127.0.0.1:9092"), "connect-orders")
    assert isinstance(raised.value.__cause__, KafkaException)


def test_kafka_helpers_raise_runtime_unavailable():
    with pytest.raises(RuntimeUnavailable) as raised:
        ensure_topic(nobody_listens(), "t", partitions=1, replication_factor=1, timeout=2)
    assert isinstance(raised.value, BrokerUnreachable)


def test_a_topic_kafka_refuses_is_runtime_unavailable_with_kafkas_reason(kafka_bootstrap: str):
    with pytest.raises(RuntimeUnavailable) as raised:  # one broker: no replication factor 3
        ensure_topic(kafka_bootstrap, "refused-topic", partitions=1, replication_factor=3)
    assert isinstance(raised.value.__cause__, KafkaException)
    assert "replication" in str(raised.value).lower()


def test_a_request_the_runtime_cannot_serve_stays_an_offsets_error(redis_down: SparkRuntime):
    generated = kafka_spec("127.0.0.1:9092") | {"source": {"type": "generator", "config": {}}}
    with pytest.raises(OffsetsError, match="does not read Kafka") as raised:
        redis_down.consumer_group_offsets(generated, "connect-orders")
    assert not isinstance(raised.value, RuntimeUnavailable)
