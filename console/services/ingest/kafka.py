"""The one accessor for the Kafka the console writes HTTP-ingested events to.

``get_ingest_kafka()`` builds a :class:`KafkaIngest` on ``settings.SLUICE_KAFKA_BOOTSTRAP``
once per process and caches it (its producer is shared by every thread). Tests swap in a
fake with ``set_ingest_kafka(fake)`` and restore the configured one with
``set_ingest_kafka(None)``; ``override_settings`` of a setting the client is built from
(bootstrap servers, topic partitions and replication, delivery timeout) drops the cache too.
"""

from __future__ import annotations

import threading
from typing import Protocol

from django.conf import settings
from django.core.signals import setting_changed
from django.dispatch import receiver

from runtime_adapter.base import RuntimeUnavailable
from runtime_adapter.kafka import DurableProducer, delete_topic, ensure_topic, set_topic_retention


class IngestKafka(Protocol):
    """What ingestion needs from Kafka."""

    bootstrap_servers: str

    def ensure_topic(self, topic: str) -> None:
        """Create ``topic`` unless it exists; raise one of ``INGEST_UNAVAILABLE_ERRORS``."""

    def set_retention(self, topic: str, retention_ms: int | None) -> None:
        """Set the topic's ``retention.ms`` (``None``: the cluster's default again)."""

    def delete_topic(self, topic: str) -> bool:
        """Delete ``topic`` with its records; True when it existed."""

    def produce(self, topic: str, records: list[tuple[str, bytes]]) -> list[str | None]:
        """Write records, wait for Kafka's reports: ``None`` per confirmed record, else why not."""


class KafkaIngest:
    """:class:`IngestKafka` on a real cluster; topics it made sure of are remembered."""

    def __init__(
        self,
        bootstrap_servers: str,
        *,
        partitions: int,
        replication_factor: int,
        delivery_timeout: float,
        min_insync_replicas: int = 1,
    ) -> None:
        self.bootstrap_servers = bootstrap_servers
        self._partitions = partitions
        self._replication_factor = replication_factor
        self._min_insync_replicas = min_insync_replicas
        self._delivery_timeout = delivery_timeout
        self._known_topics: set[str] = set()
        self._retention: dict[str, int | None] = {}
        """The retention this process last set per topic (not set again unchanged)."""
        self._producer: DurableProducer | None = None
        self._lock = threading.Lock()

    def ensure_topic(self, topic: str) -> None:
        if topic in self._known_topics:
            return
        ensure_topic(
            self.bootstrap_servers,
            topic,
            partitions=self._partitions,
            replication_factor=self._replication_factor,
            min_insync_replicas=self._min_insync_replicas,
        )
        self._known_topics.add(topic)

    def delete_topic(self, topic: str) -> bool:
        self._known_topics.discard(topic)
        self._retention.pop(topic, None)
        return delete_topic(self.bootstrap_servers, topic)

    def set_retention(self, topic: str, retention_ms: int | None) -> None:
        if self._retention.get(topic, "unknown") == retention_ms:
            return
        set_topic_retention(self.bootstrap_servers, topic, retention_ms)
        self._retention[topic] = retention_ms

    def produce(self, topic: str, records: list[tuple[str, bytes]]) -> list[str | None]:
        with self._lock:
            if self._producer is None:
                self._producer = DurableProducer(self.bootstrap_servers, self._delivery_timeout)
        return self._producer.produce(topic, records)


INGEST_UNAVAILABLE_ERRORS: tuple[type[BaseException], ...] = (RuntimeUnavailable,)
"""Errors meaning the ingest Kafka is down or refused a topic (worth a retry)."""

_lock = threading.Lock()
_ingest: IngestKafka | None = None


def get_ingest_kafka() -> IngestKafka:
    """The process-wide ingest Kafka (built on first use)."""
    global _ingest
    if _ingest is None:
        with _lock:
            if _ingest is None:
                _ingest = KafkaIngest(
                    settings.SLUICE_KAFKA_BOOTSTRAP,
                    partitions=settings.SLUICE_INGEST_TOPIC_PARTITIONS,
                    replication_factor=settings.SLUICE_INGEST_REPLICATION_FACTOR,
                    min_insync_replicas=min(
                        settings.SLUICE_TOPIC_MIN_INSYNC_REPLICAS,
                        settings.SLUICE_INGEST_REPLICATION_FACTOR,
                    ),
                    delivery_timeout=settings.SLUICE_INGEST_DELIVERY_TIMEOUT,
                )
    return _ingest


def set_ingest_kafka(ingest: IngestKafka | None) -> None:
    """Use ``ingest`` from now on; ``None`` rebuilds the configured one on next use."""
    global _ingest
    with _lock:
        _ingest = ingest


_CLIENT_SETTINGS = frozenset(
    {
        "SLUICE_KAFKA_BOOTSTRAP",
        "SLUICE_INGEST_TOPIC_PARTITIONS",
        "SLUICE_INGEST_REPLICATION_FACTOR",
        "SLUICE_INGEST_DELIVERY_TIMEOUT",
    }
)
"""The settings the client is built from (limits such as SLUICE_INGEST_MAX_BATCH are not)."""


@receiver(setting_changed)
def _forget_on_setting_change(setting: str, **kwargs) -> None:
    if setting in _CLIENT_SETTINGS:
        set_ingest_kafka(None)
