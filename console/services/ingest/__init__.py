"""HTTP ingestion, in one place: events posted to a channel with an ``http`` source go to its
Kafka topic.

* :mod:`.events` - :func:`ingest_events` (validate each event, write the valid ones, wait for
  Kafka's confirmation) and the ``http`` source's topic and spec fields;
* :mod:`.rate` - the per-channel rate limit, a token bucket in Redis;
* :mod:`.tokens` - the per-channel ingestion tokens producers send;
* :mod:`.kafka` - the one accessor for the Kafka events are written to.

A request is parsed into events by :mod:`console.selectors.cloudevents` (pure, it reads
only). Who may post (the token check) and the HTTP answers live in :mod:`console.api.ingest`.
"""

from console.services.ingest.events import (
    ACCEPTED,
    HTTP_SOURCE,
    NOT_CONFIRMED,
    REJECTED,
    EventResult,
    IngestBadRequest,
    IngestReport,
    IngestTooLarge,
    IngestUnavailable,
    NotAnHttpChannel,
    drop_ingest_topic,
    ensure_ingest_topic,
    http_source_config,
    ingest_events,
    with_ingest_fields,
)

__all__ = [
    "ACCEPTED",
    "HTTP_SOURCE",
    "NOT_CONFIRMED",
    "REJECTED",
    "EventResult",
    "IngestBadRequest",
    "IngestReport",
    "IngestTooLarge",
    "IngestUnavailable",
    "NotAnHttpChannel",
    "drop_ingest_topic",
    "ensure_ingest_topic",
    "http_source_config",
    "ingest_events",
    "with_ingest_fields",
]
