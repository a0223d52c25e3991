"""An in-memory ingest Kafka for console unit tests: topics and records kept in dicts."""

from __future__ import annotations

from dataclasses import dataclass, field

from runtime_adapter.kafka import BrokerUnreachable


@dataclass
class FakeIngestKafka:
    bootstrap_servers: str = "ingest-kafka:9092"
    topics: set[str] = field(default_factory=set)
    records: dict[str, list[tuple[str, bytes]]] = field(default_factory=dict)
    unreachable: bool = False
    retention: dict[str, int | None] = field(default_factory=dict)
    """``retention.ms`` set per topic (``None``: the cluster's default)."""
    refuse: set[str] = field(default_factory=set)
    """Keys whose records Kafka does not confirm."""

    def ensure_topic(self, topic: str) -> None:
        if self.unreachable:
            raise BrokerUnreachable(f"Kafka broker(s) {self.bootstrap_servers} unreachable")
        self.topics.add(topic)

    def set_retention(self, topic: str, retention_ms: int | None) -> None:
        if self.unreachable:
            raise BrokerUnreachable(f"Kafka broker(s) {self.bootstrap_servers} unreachable")
        self.retention[topic] = retention_ms

    def delete_topic(self, topic: str) -> bool:
        if self.unreachable:
            raise BrokerUnreachable(f"Kafka broker(s) {self.bootstrap_servers} unreachable")
        self.records.pop(topic, None)
        existed = topic in self.topics
        self.topics.discard(topic)
        return existed

    def produce(self, topic: str, records: list[tuple[str, bytes]]) -> list[str | None]:
        answers: list[str | None] = []
        for key, value in records:
            if key in self.refuse:
                answers.append("Kafka refused it: Local: Message timed out")
            else:
                self.records.setdefault(topic, []).append((key, value))
                answers.append(None)
        return answers
