"""Config model of the HTTP source: events posted to the console's ingestion endpoint.

The console accepts CloudEvents (and plain JSON) on ``POST /api/v1/channels/{name}/events``
and writes each accepted event to the channel's own Kafka topic; the channel's query reads
that topic. ``ingest_topic`` and ``bootstrap_servers`` say where that topic lives: Sluice
fills them in when it deploys the channel, so users leave them out.
"""

from __future__ import annotations

from pydantic import ConfigDict, Field, field_validator

from pipelines.spec.configs.base import StageConfig, check_bootstrap_servers, check_topic

MAX_EVENT_BYTES_LIMIT = 1_000_000
"""Upper bound of ``max_event_bytes``: an event must fit in one Kafka record (1 MB default)."""
MAX_ARCHIVE_HOURS = 24 * 365
"""The longest archive an http channel can ask of its ingest topic: a year."""


class HttpSourceConfig(StageConfig):
    """Receive events over HTTP (CloudEvents or plain JSON) on the channel's events endpoint."""

    model_config = ConfigDict(title="HTTP source")

    max_event_bytes: int = Field(
        262_144,
        ge=1,
        le=MAX_EVENT_BYTES_LIMIT,
        title="Max event size (bytes)",
        description=(
            "Largest accepted event, measured as its structured CloudEvents JSON; larger "
            "events are rejected one by one."
        ),
    )
    default_type: str = Field(
        "sluice.http.event",
        min_length=1,
        title="Type of plain JSON events",
        description=(
            "The CloudEvents type given to plain JSON posted with Content-Type "
            "application/json (CloudEvents carry their own)."
        ),
        examples=["com.example.order.received"],
    )
    archive_hours: int | None = Field(
        None,
        ge=1,
        le=MAX_ARCHIVE_HOURS,
        title="Archive (hours)",
        description=(
            "How long accepted events stay in the channel's ingest topic, where a replay can "
            "read them again (the topic's retention). Unset: the Kafka cluster's default "
            "(7 days unless its operators changed it)."
        ),
        examples=[168],
    )
    ingest_topic: str | None = Field(
        None,
        title="Ingest topic (set by Sluice)",
        description=(
            "The Kafka topic accepted events are written to; Sluice sets it when the channel "
            "starts (sluice.ingest.<channel>). Leave it out."
        ),
    )
    bootstrap_servers: str | None = Field(
        None,
        title="Ingest Kafka (set by Sluice)",
        description=(
            "Brokers of the ingest topic; Sluice sets it from SLUICE_KAFKA_BOOTSTRAP when the "
            "channel starts. Leave it out."
        ),
    )

    @field_validator("ingest_topic")
    @classmethod
    def _check_topic(cls, value: str | None) -> str | None:
        return None if value is None else check_topic(value)

    @field_validator("bootstrap_servers")
    @classmethod
    def _check_servers(cls, value: str | None) -> str | None:
        return None if value is None else check_bootstrap_servers(value)
