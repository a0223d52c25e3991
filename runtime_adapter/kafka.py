"""Kafka access for the runtime: client config, reachability checks, consumer groups.

Every confluent-kafka client the runtime makes is created here, so client
settings and naming live in one place.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from confluent_kafka import Consumer, KafkaException, TopicPartition
from confluent_kafka.admin import AdminClient


class BrokerUnreachable(RuntimeError):
    """The brokers named in a stage config did not answer."""


@dataclass(frozen=True)
class PartitionInfo:
    topic: str
    partition: int


def consumer_group(channel: str) -> str:
    """The consumer group a channel's driver commits its processed offsets to."""
    return f"sluice-{channel}"


def _client_config(bootstrap_servers: str) -> dict[str, object]:
    return {"bootstrap.servers": bootstrap_servers, "socket.connection.setup.timeout.ms": 5000}


def list_partitions(
    bootstrap_servers: str, topics: Iterable[str], timeout: float = 10.0
) -> list[PartitionInfo]:
    """The partitions of ``topics`` that exist now.

    Raises :class:`BrokerUnreachable` with the brokers' names when no broker
    answers within ``timeout`` seconds. Topics that do not exist yet are left out.
    """
    admin = AdminClient(_client_config(bootstrap_servers))
    try:
        metadata = admin.list_topics(timeout=timeout)
    except KafkaException as exc:
        raise BrokerUnreachable(
            f"Kafka broker(s) {bootstrap_servers} unreachable after {timeout:.0f}s: {exc}"
        ) from exc
    found: list[PartitionInfo] = []
    for topic in topics:
        meta = metadata.topics.get(topic)
        if meta is None or meta.error is not None:
            continue
        found.extend(PartitionInfo(topic, p) for p in sorted(meta.partitions))
    return found


def check_reachable(bootstrap_servers: str, timeout: float = 10.0) -> None:
    """Raise :class:`BrokerUnreachable` unless a broker of ``bootstrap_servers`` answers."""
    list_partitions(bootstrap_servers, [], timeout)


class GroupCommitter:
    """Commits a channel's processed offsets to its consumer group, so Kafka tools show lag.

    It never joins the group: it commits as a standalone (non-member) consumer,
    which Kafka allows while the group has no active members.
    """

    def __init__(self, bootstrap_servers: str, group: str) -> None:
        self._consumer = Consumer(
            {
                **_client_config(bootstrap_servers),
                "group.id": group,
                "enable.auto.commit": False,
            }
        )

    def commit(self, offsets: Mapping[tuple[str, int], int]) -> None:
        """Commit ``{(topic, partition): next offset to read}``."""
        if not offsets:
            return
        self._consumer.commit(
            offsets=[TopicPartition(t, p, o) for (t, p), o in offsets.items()],
            asynchronous=False,
        )

    def close(self) -> None:
        self._consumer.close()
