"""A three-broker KRaft Kafka cluster from the project's own jars (scripts/kafka.sh per node).

Each node is broker and controller (static voters), listens on loopback and, when given a
bridge address, on that address too (what the fault suite's network namespaces reach); topics
are replicated ``replication`` times with ``min.insync.replicas`` ``min_isr`` by default, the
internal ones (consumer offsets, transactions) as well. :meth:`KafkaCluster.kill` is a
``kill -9`` of one node; :meth:`KafkaCluster.restart` starts it again on the same data.
"""

from __future__ import annotations

import os
import re
import signal
import subprocess
import time
import uuid
from dataclasses import dataclass
from pathlib import Path

from tests.support.processes import (
    REPO_ROOT,
    Service,
    free_port,
    start_kafka_node,
    wait_kafka_ready,
    wait_until,
)


@dataclass
class KafkaNode:
    node_id: int
    port: int
    controller_port: int
    bridge_port: int
    data_dir: Path
    service: Service | None = None


class KafkaCluster:
    """``size`` KRaft nodes; :attr:`bootstrap` for loopback clients, :attr:`bridge_bootstrap`
    for clients inside the network namespaces (None without a bridge address)."""

    def __init__(
        self,
        data_dir: Path,
        log_dir: Path,
        *,
        size: int = 3,
        replication: int = 3,
        min_isr: int = 2,
        bridge_address: str | None = None,
    ) -> None:
        self.log_dir, self.bridge_address = log_dir, bridge_address
        self.replication, self.min_isr = replication, min_isr
        self.cluster_id = _kafka_uuid()
        self.nodes = [
            KafkaNode(i, free_port(), free_port(), free_port(), data_dir / f"node-{i}")
            for i in range(1, size + 1)
        ]
        self.voters = ",".join(f"{n.node_id}@127.0.0.1:{n.controller_port}" for n in self.nodes)

    @property
    def bootstrap(self) -> str:
        return ",".join(f"127.0.0.1:{node.port}" for node in self.nodes)

    @property
    def bridge_bootstrap(self) -> str | None:
        if self.bridge_address is None:
            return None
        return ",".join(f"{self.bridge_address}:{node.bridge_port}" for node in self.nodes)

    def start(self, timeout: float = 180) -> None:
        """Start every node, then wait until each answers and the cluster has all its brokers
        (a quorum must form before any node serves clients)."""
        for node in self.nodes:
            self._start_node(node)
        for node in self.nodes:
            assert node.service is not None
            wait_kafka_ready(node.service, node.port, timeout)
        wait_until(self.all_brokers_up, timeout, interval=1, what="every broker in the cluster")

    def _start_node(self, node: KafkaNode) -> None:
        env = {
            "KAFKA_NODE_ID": str(node.node_id),
            "KAFKA_PORT": str(node.port),
            "KAFKA_CONTROLLER_PORT": str(node.controller_port),
            "KAFKA_QUORUM_VOTERS": self.voters,
            "KAFKA_CLUSTER_ID": self.cluster_id,
            "KAFKA_REPLICATION": str(self.replication),
            "KAFKA_MIN_ISR": str(self.min_isr),
            "KAFKA_NUM_PARTITIONS": "3",
            # One per node: each leads one, so a group can be given the coordinator a test
            # wants by its id (group_id_coordinated_by).
            "KAFKA_OFFSETS_PARTITIONS": str(len(self.nodes)),
            "KAFKA_HEAP": "-Xmx384m -Xms128m",
        }
        if self.bridge_address:
            env["KAFKA_EXTRA_LISTENER"] = f"{self.bridge_address}:{node.bridge_port}"
        node.service = start_kafka_node(f"kafka-{node.node_id}", node.data_dir, self.log_dir, env)

    def brokers_up(self) -> set[int]:
        """The node ids the cluster's metadata lists as brokers now."""
        from confluent_kafka.admin import AdminClient

        live = [n for n in self.nodes if n.service is not None and n.service.alive()]
        admin = AdminClient({"bootstrap.servers": ",".join(f"127.0.0.1:{n.port}" for n in live)})
        return set(admin.list_topics(timeout=5).brokers)

    def all_brokers_up(self) -> bool:
        return self.brokers_up() == {node.node_id for node in self.nodes}

    def kill(self, node_id: int) -> None:
        """``kill -9`` of node ``node_id`` (its JVM, no clean shutdown); returns once it is gone."""
        node = self.nodes[node_id - 1]
        assert node.service is not None
        os.killpg(node.service.process.pid, signal.SIGKILL)
        node.service.process.wait(timeout=10)

    def restart(self, node_id: int, timeout: float = 120) -> None:
        """Start node ``node_id`` again on the same data; returns once every broker is back."""
        node = self.nodes[node_id - 1]
        self._start_node(node)
        assert node.service is not None
        wait_kafka_ready(node.service, node.port, timeout)
        wait_until(self.all_brokers_up, timeout, interval=1, what=f"broker {node_id} back")

    def stop(self) -> None:
        """Stop every node (SIGTERM, then SIGKILL)."""
        for node in self.nodes:
            if node.service is not None:
                node.service.stop(timeout=15)

    def active_controller(self) -> int:
        """The node leading the KRaft metadata quorum now, as the quorum says (Kafka's
        ``MetadataQuorumCommand describe --status``, asked of the live controllers)."""
        live = [n for n in self.nodes if n.service is not None and n.service.alive()]
        controllers = ",".join(f"127.0.0.1:{n.controller_port}" for n in live)
        answer = subprocess.run(
            [
                str(REPO_ROOT / "scripts/kafka-run-class.sh"),
                "org.apache.kafka.tools.MetadataQuorumCommand",
                "--bootstrap-controller",
                controllers,
                "describe",
                "--status",
            ],
            capture_output=True,
            text=True,
            timeout=120,
            check=True,
        )
        found = re.search(r"^LeaderId:\s*(\d+)", answer.stdout, re.MULTILINE)
        assert found is not None, f"no LeaderId in {answer.stdout!r} ({answer.stderr[-500:]})"
        return int(found.group(1))

    def group_id_coordinated_by(self, node_id: int, prefix: str, timeout: float = 60) -> str:
        """A consumer group id starting with ``prefix`` whose coordinator is node ``node_id``:
        the group's partition of ``__consumer_offsets`` (Kafka's hash of the id) is led by
        it. Makes Kafka create ``__consumer_offsets`` first when it has not yet."""
        from confluent_kafka import Consumer
        from confluent_kafka.admin import AdminClient

        from runtime_adapter.kafka import OFFSETS_TOPIC, group_partition

        admin = AdminClient({"bootstrap.servers": self.bootstrap})
        # A group's first coordinator lookup makes the brokers create the topic: a consumer
        # of a group of its own asks (an admin request's lookup is not used here: a handle
        # dropped while one is under way can take the process down, see runtime_adapter.kafka).
        asker = Consumer({"bootstrap.servers": self.bootstrap, "group.id": f"{prefix}-probe"})
        asker.subscribe([OFFSETS_TOPIC])
        deadline = time.monotonic() + timeout
        try:
            while True:
                topic = admin.list_topics(OFFSETS_TOPIC, timeout=10).topics[OFFSETS_TOPIC]
                leaders = {p: info.leader for p, info in topic.partitions.items()}
                if topic.error is None and leaders and all(x >= 0 for x in leaders.values()):
                    break
                assert time.monotonic() < deadline, f"{OFFSETS_TOPIC} not created: {topic.error}"
                asker.poll(1.0)
        finally:
            asker.close()
        for n in range(100_000):
            group_id = f"{prefix}-{n}"
            if leaders[group_partition(group_id, len(leaders))] == node_id:
                return group_id
        raise AssertionError(f"no group id coordinated by node {node_id}")

    def in_sync_replicas(self, topic: str) -> dict[int, list[int]]:
        """Each partition of ``topic`` with its in-sync replicas now."""
        from confluent_kafka.admin import AdminClient

        admin = AdminClient({"bootstrap.servers": self.bootstrap})
        meta = admin.list_topics(topic, timeout=10).topics[topic]
        return {p: list(info.isrs) for p, info in meta.partitions.items()}


def _kafka_uuid() -> str:
    """A Kafka cluster id: 16 random bytes, URL-safe base64 without padding, no leading '-'."""
    import base64

    while True:
        text = base64.urlsafe_b64encode(uuid.uuid4().bytes).decode().rstrip("=")
        if not text.startswith("-"):
            return text
