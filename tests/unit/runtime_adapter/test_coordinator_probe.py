"""What a runtime member asks the cluster about its group's coordinator, on a real broker:
who leads the group's partition of ``__consumer_offsets`` (the probe of the self-fence's
ride-out), and how long the controller waits for a dead broker (the failover warning)."""

from __future__ import annotations

import socket
import uuid
from typing import Any

from confluent_kafka import KafkaException
from confluent_kafka.admin import AdminClient

from runtime_adapter.group import GroupConfig, warn_of_slow_broker_failover
from runtime_adapter.group.fence import slow_failover
from runtime_adapter.kafka import (
    CoordinatorProbe,
    FailoverWait,
    failover_wait,
    probe_group_coordinator,
)
from tests.support.processes import wait_until


def test_the_probe_names_the_coordinator_the_group_has(kafka_bootstrap: str) -> None:
    """The broker FindCoordinator names (through DescribeGroups) is the one the probe finds
    from the metadata of the group's partition of ``__consumer_offsets``."""
    group = f"probe-{uuid.uuid4().hex[:8]}"
    admin = AdminClient({"bootstrap.servers": kafka_bootstrap})
    described: list[Any] = []

    def coordinator_known() -> bool:
        # NOT_COORDINATOR while a fresh broker creates and loads __consumer_offsets
        try:
            described.append(admin.describe_consumer_groups([group])[group].result(timeout=10))
        except KafkaException:
            return False
        return True

    wait_until(coordinator_known, 60, 0.5, "the group's coordinator")
    coordinator = described[-1].coordinator
    probed = probe_group_coordinator(admin, group, timeout=5)
    assert probed == CoordinatorProbe(
        coordinator.id, f"{coordinator.host}:{coordinator.port}", refused=False
    )
    assert not probed.vacant  # a live broker listens there


def test_the_probe_knows_nothing_without_a_broker() -> None:
    with socket.socket() as unused:
        unused.bind(("127.0.0.1", 0))
        port = unused.getsockname()[1]
    admin = AdminClient({"bootstrap.servers": f"127.0.0.1:{port}"})
    assert probe_group_coordinator(admin, "g", timeout=0.5) is None  # not a vacancy


def test_the_projects_brokers_move_a_dead_brokers_partitions_within_the_session(
    kafka_bootstrap: str,
) -> None:
    """scripts/kafka.sh: a 4 s broker session, and a controller elected within 2 s (its nodes
    are brokers and controllers): room for a 10 s session."""
    waited = failover_wait(AdminClient({"bootstrap.servers": kafka_bootstrap}))
    assert waited == FailoverWait(4.0, 2.0)
    assert slow_failover(10.0, waited) is None
    warning = slow_failover(10.0, FailoverWait(9.0, 3.0))  # Kafka's defaults, combined mode
    assert warning is not None and "broker.session.timeout.ms = 9000 ms" in warning
    assert "electing a new controller" in warning and "above 14 s" in warning
    dedicated = slow_failover(10.0, FailoverWait(9.0))  # controllers of their own
    assert dedicated is not None and "controller" not in dedicated.split(";")[0]
    assert "above 11 s" in dedicated
    assert slow_failover(10.0, None) is None  # the brokers did not say
    # One broker: no other takes its partitions over, whatever the session (no warning).
    single = GroupConfig(kafka_bootstrap, session_timeout=6.0, fence_margin=2.0)
    assert warn_of_slow_broker_failover(single) is None
