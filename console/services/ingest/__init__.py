"""HTTP ingestion, in one place: events posted to a channel with an ``http`` source go to its
Kafka topic.

* :mod:`.events` - :func:`ingest_events` (validate each event, write the valid ones, wait for
  Kafka's confirmation) and the ``http`` source's topic and spec fields;
* :mod:`.cloudevents` - CloudEvents 1.0 over HTTP: a request parsed into events (pure);
* :mod:`.rate` - the per-channel rate limit, a token bucket in Redis;
* :mod:`.tokens` - the per-channel ingestion tokens producers send;
* :mod:`.kafka` - the one accessor for the Kafka events are written to.

Who may post (the token check) and the HTTP answers live in :mod:`console.api.ingest`.
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
