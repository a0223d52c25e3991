"""The fault suite's world (``make fault-test``, scripts/fault-test.sh): real processes only.

* a three-broker KRaft Kafka (:class:`~tests.support.kafka_cluster.KafkaCluster`), topics
  replicated 3 times with ``min.insync.replicas`` 2, on loopback and the bridge address;
* a Redis on loopback and the bridge address;
* the console's web, Celery worker and beat on this machine (``running_stack``, no runtime
  worker there), with the runtime's topics set to 3/2;
* runtime hosts, each a network namespace of its own (:mod:`tests.support.netns`) running a
  real runtime worker (``python -m runtime_adapter.host.worker``) and its Spark drivers, which
  reach Redis and Kafka through the bridge only.

Needs root (namespaces, veths, iptables). Everything is removed at the end, also when a test
fails, and whatever an earlier run left (names ``slf-…``) is swept before the start.
"""

from __future__ import annotations

import os
import shutil
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from tests.support.kafka_cluster import KafkaCluster
from tests.support.netns import BRIDGE_ADDRESS, HostNetwork, NetnsHost
from tests.support.processes import Service, start_redis
from tests.support.stack import Stack, running_stack

REPLICATION, MIN_ISR = 3, 2
HOSTS = 3
"""Runtime hosts the suite starts with (each a worker and a warm Spark driver)."""


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        if "tests/faults/" in str(item.fspath):
            item.add_marker(pytest.mark.faults)


@pytest.fixture(scope="session")
def fault_logs(artifacts_dir: Path) -> Path:
    """``test-artifacts/faults/``, emptied: the logs of this run's services only. The cluster
    and Redis log here; each world (stack and hosts) in a folder of its own (``console/``,
    ``group/``, ``stack/``), so a later world never writes over an earlier one's logs."""
    logs = artifacts_dir / "faults"
    shutil.rmtree(logs, ignore_errors=True)
    logs.mkdir(parents=True)
    return logs


@pytest.fixture(scope="session")
def host_network() -> Iterator[HostNetwork]:
    """The bridge and, as tests add them, the runtime hosts' namespaces."""
    if os.geteuid() != 0:
        raise RuntimeError("the fault suite needs root: network namespaces, veths, iptables")
    network = HostNetwork()
    try:
        yield network
    finally:
        network.close()


@pytest.fixture(scope="session")
def kafka_cluster(
    host_network: HostNetwork, tmp_path_factory: pytest.TempPathFactory, fault_logs: Path
) -> Iterator[KafkaCluster]:
    cluster = KafkaCluster(
        tmp_path_factory.mktemp("kafka-cluster"),
        fault_logs,
        replication=REPLICATION,
        min_isr=MIN_ISR,
        bridge_address=BRIDGE_ADDRESS,
    )
    try:
        cluster.start()
        yield cluster
    finally:
        cluster.stop()


@dataclass
class FaultRedis:
    service: Service
    url: str
    """For this machine's processes (loopback)."""
    bridge_url: str
    """For the runtime hosts (the bridge address)."""
    data_dir: Path
    log_dir: Path

    def start_again(self) -> None:
        """Start it again after a stop, on its port and data (what its append-only file
        holds comes back)."""
        port = int(self.url.rsplit(":", 1)[1].split("/")[0])
        self.service, _ = start_redis(
            self.data_dir, self.log_dir, port=port, extra_bind=BRIDGE_ADDRESS
        )


@pytest.fixture(scope="session")
def fault_redis(
    host_network: HostNetwork, tmp_path_factory: pytest.TempPathFactory, fault_logs: Path
) -> Iterator[FaultRedis]:
    data_dir = tmp_path_factory.mktemp("faults-redis")
    service, url = start_redis(data_dir, fault_logs, extra_bind=BRIDGE_ADDRESS)
    redis = FaultRedis(service, url, url.replace("127.0.0.1", BRIDGE_ADDRESS), data_dir, fault_logs)
    try:
        yield redis
    finally:
        redis.service.stop()


@dataclass
class FaultWorld:
    """The console's stack, the cluster and the runtime hosts (by worker id)."""

    stack: Stack
    cluster: KafkaCluster
    network: HostNetwork
    redis: FaultRedis
    log_dir: Path
    hosts: dict[str, NetnsHost] = field(default_factory=dict)
    host_env: dict[str, dict[str, str]] = field(default_factory=dict)

    @property
    def bridge_bootstrap(self) -> str:
        """The brokers as a runtime host (and a channel's spec) names them."""
        assert self.cluster.bridge_bootstrap is not None
        return self.cluster.bridge_bootstrap

    def add_host(self, extra_env: dict[str, str] | None = None) -> str:
        """A new runtime host (namespace) running a runtime worker, with ``extra_env`` added
        to its environment for good (a skewed clock, …); its worker id."""
        host = self.network.add_host()
        worker_id = f"fault-host-{host.index}"
        self.hosts[worker_id] = host
        self.host_env[worker_id] = extra_env or {}
        self.start_worker(worker_id)
        return worker_id

    def start_worker(self, worker_id: str) -> Service:
        """(Re)start the runtime worker of host ``worker_id`` inside its namespace."""
        env = {
            **self.stack.env,
            "REDIS_URL": self.redis.bridge_url,
            "SLUICE_KAFKA_BOOTSTRAP": self.bridge_bootstrap,
            "SLUICE_WORKER_ID": worker_id,
            "SPARK_LOCAL_IP": "127.0.0.1",  # the namespace's own loopback
            **self.host_env[worker_id],
        }
        argv = [sys.executable, "-m", "runtime_adapter.host.worker"]
        return self.hosts[worker_id].start(worker_id, argv, self.log_dir, env)

    def logs(self) -> str:
        hosts = "\n".join(
            f"--- {worker_id} ---\n{host.services[-1].log_tail(40)}"
            for worker_id, host in self.hosts.items()
            if host.services
        )
        return f"{self.stack.logs()}\n{hosts}"


@contextmanager
def fault_world(
    cluster: KafkaCluster,
    redis: FaultRedis,
    network: HostNetwork,
    var: Path,
    log_dir: Path,
    extra_env: dict[str, str] | None = None,
) -> Iterator[FaultWorld]:
    """The console on this machine and :data:`HOSTS` runtime hosts in namespaces of their
    own; ``extra_env`` for every process of it (the console's and the hosts')."""
    with running_stack(
        redis_url=redis.url,
        kafka=cluster.bootstrap,
        var=var,
        log_dir=log_dir,
        runtime_workers=0,
        extra_env={
            "SLUICE_TOPIC_REPLICATION_FACTOR": str(REPLICATION),
            "SLUICE_TOPIC_MIN_INSYNC_REPLICAS": str(MIN_ISR),
            "SLUICE_DRIVER_MEMORY": "640m",
            "SLUICE_SHARED_DRIVER_MEMORY": "768m",
            "SPARK_MASTER": "local[1]",
            # No spare JVM beside each host's busy driver: three idle JVMs would cost this
            # suite's two cores (a spare's recovery is measured in tests/integration).
            "SLUICE_SPARE_DRIVERS": "0",
            **(extra_env or {}),
        },
    ) as stack:
        world = FaultWorld(stack, cluster, network, redis, log_dir)
        for _ in range(HOSTS):
            world.add_host()
        try:
            yield world
        finally:
            for host in world.hosts.values():
                host.kill()


@pytest.fixture(scope="module")
def world(
    kafka_cluster: KafkaCluster,
    fault_redis: FaultRedis,
    host_network: HostNetwork,
    tmp_path_factory: pytest.TempPathFactory,
    fault_logs: Path,
) -> Iterator[FaultWorld]:
    """The console places channels (``SLUICE_RUNTIME_PLACEMENT=console``): the tests of
    this world also run hosts without membership (a skewed clock breaks librdkafka), which
    only console placement allows. The group's own placement: test_group_failover.py."""
    var = tmp_path_factory.mktemp("faults-var")
    env = {"SLUICE_RUNTIME_PLACEMENT": "console"}
    logs = fault_logs / "console"
    with fault_world(kafka_cluster, fault_redis, host_network, var, logs, env) as made:
        yield made
