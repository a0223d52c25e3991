"""The fault suite's own tools, checked on real processes: a namespace reaches only what it
should and a partition cuts it off, a skewed process sees the skewed clock, and the cluster
replicates as configured and keeps serving with a broker killed."""

from __future__ import annotations

import subprocess
import sys
import time
import uuid

import pytest

from runtime_adapter.kafka import TopicReplication, create_topic
from tests.faults.conftest import MIN_ISR, REPLICATION
from tests.support.faketime import skewed_env
from tests.support.kafka_cluster import KafkaCluster
from tests.support.netns import BRIDGE_ADDRESS, HostNetwork, NetnsHost
from tests.support.processes import wait_until

REACH = """
import socket, sys
host, port = sys.argv[1], int(sys.argv[2])
try:
    socket.create_connection((host, port), timeout=2).close()
    print("reached")
except OSError as exc:
    print(f"cut: {exc}")
"""


def reach(host: NetnsHost, address: str, port: int) -> str:
    """Whether a process inside ``host`` opens a TCP connection to ``address:port``."""
    found = subprocess.run(
        host.command([sys.executable, "-c", REACH, address, str(port)]),
        capture_output=True,
        text=True,
        timeout=30,
        check=True,
    )
    return found.stdout.strip()


@pytest.fixture(scope="module")
def probe_host(host_network: HostNetwork) -> NetnsHost:
    return host_network.add_host()


def test_a_namespace_reaches_the_bridge_and_a_partition_cuts_it_off(
    kafka_cluster: KafkaCluster, probe_host: NetnsHost
) -> None:
    broker = kafka_cluster.nodes[0]
    assert reach(probe_host, BRIDGE_ADDRESS, broker.bridge_port) == "reached"
    # Loopback inside the namespace is its own: the brokers' loopback listener is not there.
    assert reach(probe_host, "127.0.0.1", broker.port).startswith("cut")
    probe_host.partition()
    try:
        assert reach(probe_host, BRIDGE_ADDRESS, broker.bridge_port).startswith("cut")
    finally:
        probe_host.heal()
    assert reach(probe_host, BRIDGE_ADDRESS, broker.bridge_port) == "reached"


@pytest.mark.parametrize("offset, seconds", [("+30s", 30), ("-30s", -30)])
def test_a_skewed_process_sees_the_skewed_clock(offset: str, seconds: int) -> None:
    code = "import time; print(time.time(), time.monotonic())"
    before = time.time()
    out = subprocess.run(
        [sys.executable, "-c", code],
        env={**skewed_env(offset), "PATH": "/usr/bin:/bin"},
        capture_output=True,
        text=True,
        timeout=30,
        check=True,
    ).stdout.split()
    after = time.time()
    skewed = float(out[0])
    assert before + seconds - 1 <= skewed <= after + seconds + 1, (before, skewed, after)
    # The monotonic clock is not skewed: a timeout in the process lasts its real length.
    assert abs(float(out[1]) - time.monotonic()) < 5


def test_the_cluster_replicates_and_serves_with_a_broker_killed(
    kafka_cluster: KafkaCluster,
) -> None:
    topic = f"faults-harness-{uuid.uuid4().hex[:6]}"
    replication = TopicReplication(REPLICATION, MIN_ISR)
    assert create_topic(kafka_cluster.bootstrap, topic, partitions=3, replication=replication)
    isr = wait_until(
        lambda: (
            (found := kafka_cluster.in_sync_replicas(topic))
            and all(len(r) == REPLICATION for r in found.values())
            and found
        ),
        30,
        what="every partition fully in sync",
    )
    assert isinstance(isr, dict) and len(isr) == 3

    started = time.monotonic()
    kafka_cluster.kill(2)
    try:
        from confluent_kafka import Producer

        producer = Producer({"bootstrap.servers": kafka_cluster.bootstrap, "acks": "all"})
        for seq in range(100):
            producer.produce(topic, str(seq).encode())
        assert producer.flush(60) == 0, "a write with min.insync.replicas 2 of 3 failed"
        shrunk = wait_until(
            lambda: all(2 not in r for r in kafka_cluster.in_sync_replicas(topic).values()),
            60,
            what="broker 2 out of every ISR",
        )
        assert shrunk
    finally:
        kafka_cluster.restart(2)
    wait_until(
        lambda: all(len(r) == REPLICATION for r in kafka_cluster.in_sync_replicas(topic).values()),
        120,
        what="broker 2 back in every ISR",
    )
    print(f"\nbroker 2 killed, written through, back in sync in {time.monotonic() - started:.1f} s")
