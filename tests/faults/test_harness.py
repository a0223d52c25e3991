"""The fault suite's own tools, checked on real processes: a namespace reaches only what it
should and a partition cuts it off, and a skewed process sees the skewed clock. (The cluster's
``kill`` and ``restart`` are checked by test_runtime_faults.py's broker test.)"""

from __future__ import annotations

import subprocess
import sys
import time

import pytest

from tests.support.faketime import skewed_env
from tests.support.kafka_cluster import KafkaCluster
from tests.support.netns import BRIDGE_ADDRESS, HostNetwork, NetnsHost

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
