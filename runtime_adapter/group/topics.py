"""The runtime's two topics: desired state (config) and observed status, one partition a slot."""

from __future__ import annotations

import logging
import time

from confluent_kafka import KafkaException

from runtime_adapter.base import RuntimeUnavailable
from runtime_adapter.group.fence import slow_failover
from runtime_adapter.group.settings import GroupConfig
from runtime_adapter.kafka import admin_client, describe_topic, ensure_topic, failover_wait

log = logging.getLogger("sluice.group")


class RuntimeTopicMismatch(RuntimeUnavailable):
    """A runtime topic exists but cannot serve as one: another number of partitions than
    slots (every channel's slot would change) or a cleanup policy that is not ``compact``."""


def topic_settings(config: GroupConfig) -> dict[str, str]:
    """The settings the runtime's topics are created with."""
    settings = {"cleanup.policy": "compact"}
    if config.min_insync_replicas is not None:
        settings["min.insync.replicas"] = str(config.min_insync_replicas)
    return settings


def ensure_runtime_topics(config: GroupConfig, *, timeout: float = 10.0) -> list[str]:
    """Create the config and status topics unless they exist, then check both; the names of
    those this call created.

    Each is compacted with one partition per slot, the replication factor and
    ``min.insync.replicas`` of ``config`` (unset: the brokers' defaults). Raises
    :class:`RuntimeTopicMismatch` for an existing topic that does not fit, and
    :class:`~runtime_adapter.kafka.BrokerUnreachable` when the brokers do not answer.
    """
    created = []
    for topic in (config.config_topic, config.status_topic):
        if ensure_topic(
            config.bootstrap,
            topic,
            partitions=config.slots,
            replication_factor=config.replication_factor or -1,
            config=topic_settings(config),
            timeout=timeout,
        ):
            created.append(topic)
        verify_runtime_topic(config, topic, timeout=timeout)
    return created


def verify_runtime_topic(config: GroupConfig, topic: str, *, timeout: float = 10.0) -> None:
    """Raise :class:`RuntimeTopicMismatch` unless ``topic`` exists, compacted, with
    ``config.slots`` partitions."""
    deadline = time.monotonic() + timeout
    found = describe_topic(config.bootstrap, topic, timeout=timeout)
    while found is None and time.monotonic() < deadline:  # a topic just created
        time.sleep(0.2)
        found = describe_topic(config.bootstrap, topic, timeout=timeout)
    if found is None:
        raise RuntimeTopicMismatch(f"runtime topic {topic!r} does not exist")
    if found.partitions != config.slots:
        raise RuntimeTopicMismatch(
            f"runtime topic {topic!r} has {found.partitions} partitions but "
            f"SLUICE_RUNTIME_SLOTS is {config.slots}: every channel's slot is its id's hash "
            "modulo the slots, so they must match (set SLUICE_RUNTIME_SLOTS to "
            f"{found.partitions}, or use new topics)"
        )
    policy = found.config.get("cleanup.policy", "")
    if "compact" not in policy.split(","):
        raise RuntimeTopicMismatch(
            f"runtime topic {topic!r} has cleanup.policy={policy!r}; it must be compacted "
            "(it holds the latest record of every connector)"
        )


def warn_of_slow_broker_failover(config: GroupConfig) -> str | None:
    """Log (and return) a warning when the brokers' waits for a dead broker
    (:func:`~runtime_adapter.kafka.failover_wait`) leave the group's session no room for a
    coordinator's move (:func:`~runtime_adapter.group.fence.
    slow_failover`); nothing when the brokers do not tell, or there is only one (no other
    takes its partitions over)."""
    admin = admin_client(config.bootstrap, auto_create_topics=False)
    try:
        brokers = len(admin.list_topics(timeout=5.0).brokers)
    except KafkaException:
        return None
    if brokers < 2:
        return None  # one broker: no other takes its partitions over
    warning = slow_failover(config.session_timeout, failover_wait(admin))
    if warning is not None:
        log.warning("runtime group %s: %s", config.group_id, warning)
    return warning
