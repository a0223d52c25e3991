"""HTTP ingestion: events posted to a channel with an ``http`` source go to its Kafka topic.

Every event of a request is validated on its own; then all valid events are written to the
channel's ingest topic (``sluice.ingest.<channel>``, key = event id, value = the structured
CloudEvent) and the request waits for Kafka to confirm each one. An event is reported
``accepted`` only once Kafka confirmed it, so accepted means durably written. Nothing is
written when the request as a whole is refused (too big, too many events, unreadable, over
the channel's rate limit: :mod:`console.services.ingest.rate`).

Who may post is decided before (the channel's ingestion token,
:mod:`console.services.ingest.tokens`, or a console operator): this module trusts its caller.
"""

from __future__ import annotations

import copy
import logging
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from django.conf import settings

from console.errors import RuntimeUnavailable, ServiceError
from console.models import Channel
from console.selectors.cloudevents import (
    BadRequest,
    PlainDefaults,
    UnsupportedMediaType,
    encode,
    parse_request,
)
from console.services.ingest import rate
from console.services.ingest.kafka import INGEST_UNAVAILABLE_ERRORS, get_ingest_kafka
from runtime_adapter.kafka import ingest_topic

logger = logging.getLogger(__name__)

HTTP_SOURCE = "http"
ACCEPTED = "accepted"
REJECTED = "rejected"
NOT_CONFIRMED = "not_confirmed"


class NotAnHttpChannel(ServiceError):
    """The channel's source is not ``http``: it takes no events over HTTP."""


class IngestTooLarge(ServiceError):
    """The request is over a limit (body size or events per request); nothing was written."""


class IngestBadRequest(ServiceError):
    """The request cannot be read (unreadable body, empty batch, ...); nothing was written."""

    def __init__(self, message: str, *, unsupported_media_type: bool = False) -> None:
        super().__init__(message)
        self.unsupported_media_type = unsupported_media_type


class IngestUnavailable(RuntimeUnavailable):
    """The ingest Kafka could not be reached (topic not ensured); nothing was written.

    A :class:`RuntimeUnavailable`: callers that handle an unreachable runtime (the API's 503,
    the admin's message) handle this too.
    """


@dataclass
class EventResult:
    """What became of the event at ``index`` of the request."""

    index: int
    status: str
    id: str | None = None
    errors: dict[str, list[str]] = field(default_factory=dict)

    def as_dict(self) -> dict[str, Any]:
        answer: dict[str, Any] = {"index": self.index}
        if self.id is not None:
            answer["id"] = self.id
        answer["status"] = self.status
        if self.errors:
            answer["errors"] = self.errors
        return answer


@dataclass
class IngestReport:
    """Per-event outcome of one request, in request order."""

    results: list[EventResult]

    def count(self, status: str) -> int:
        return sum(1 for result in self.results if result.status == status)

    @property
    def complete(self) -> bool:
        """Every valid event was confirmed by Kafka."""
        return self.count(NOT_CONFIRMED) == 0

    def as_dict(self) -> dict[str, Any]:
        answer: dict[str, Any] = {
            "accepted": self.count(ACCEPTED),
            "rejected": self.count(REJECTED),
        }
        if not self.complete:
            answer["not_confirmed"] = self.count(NOT_CONFIRMED)
        answer["results"] = [result.as_dict() for result in self.results]
        return answer


def http_source_config(channel: Channel) -> Mapping[str, Any]:
    """The ``http`` source config of the channel's latest revision.

    Raises :class:`NotAnHttpChannel` when the channel's source is another type.
    """
    revision = channel.latest_revision_obj()
    source = (revision.spec if revision else {}).get("source", {})
    if source.get("type") != HTTP_SOURCE:
        raise NotAnHttpChannel(
            f"channel {channel.name!r} reads from a {source.get('type')!r} source; only a "
            f"channel whose source is {HTTP_SOURCE!r} takes events over HTTP"
        )
    return source.get("config", {})


def ensure_ingest_topic(channel_name: str, spec: Mapping[str, Any] | None = None) -> str:
    """Create the channel's ingest topic unless it exists; return its name. With the
    channel's ``spec`` (an ``http`` source's), the topic's retention is set to the spec's
    archive (``archive_hours``; unset: the cluster's default).

    Raises :class:`IngestUnavailable` when Kafka cannot be reached or refuses the topic.
    """
    topic = ingest_topic(channel_name)
    try:
        kafka = get_ingest_kafka()
        kafka.ensure_topic(topic)
        if spec is not None:
            hours = (spec.get("source", {}).get("config") or {}).get("archive_hours")
            kafka.set_retention(topic, None if hours is None else int(hours) * 3_600_000)
    except INGEST_UNAVAILABLE_ERRORS as exc:
        raise IngestUnavailable(f"could not prepare the ingest topic {topic}: {exc}") from exc
    return topic


def drop_ingest_topic(channel_name: str) -> bool:
    """Delete the channel's ingest topic and the events in it (its channel is deleted, or a
    new channel takes the name: the events are not the new one's); True when it existed.

    Raises :class:`IngestUnavailable` when Kafka cannot be reached or refuses.
    """
    topic = ingest_topic(channel_name)
    try:
        return get_ingest_kafka().delete_topic(topic)
    except INGEST_UNAVAILABLE_ERRORS as exc:
        raise IngestUnavailable(f"could not delete the ingest topic {topic}: {exc}") from exc


def with_ingest_fields(spec: Mapping[str, Any], channel_name: str) -> dict[str, Any]:
    """A copy of ``spec`` whose ``http`` source names its ingest topic and Kafka.

    Specs of other sources come back as an unchanged copy. The saved revision is never
    changed: only the deployed copy carries these physical fields.
    """
    deployed = copy.deepcopy(dict(spec))
    source = deployed.get("source") or {}
    if source.get("type") == HTTP_SOURCE:
        config = source.setdefault("config", {})
        config["ingest_topic"] = ingest_topic(channel_name)
        config["bootstrap_servers"] = get_ingest_kafka().bootstrap_servers
    return deployed


def ingest_events(
    channel: Channel, *, content_type: str, headers: Mapping[str, str], body: bytes
) -> IngestReport:
    """Validate the request's events and write the valid ones to the channel's topic.

    Raises :class:`NotAnHttpChannel`, :class:`IngestTooLarge` (more events than
    ``SLUICE_INGEST_MAX_BATCH``, or than the channel's rate-limit burst),
    :class:`IngestBadRequest`, :class:`IngestRateLimited` (every event, valid or not, costs
    one token of the channel's rate limit; a request takes all it needs or none) or
    :class:`IngestUnavailable`; in each case nothing was written. Otherwise every event has
    a result: ``accepted`` (Kafka confirmed it), ``rejected`` (invalid, with errors per
    attribute) or ``not_confirmed`` (valid, but Kafka did not confirm it: it may or may not
    be written).
    """
    config = http_source_config(channel)
    defaults = PlainDefaults(
        source=f"/sluice/channels/{channel.name}/events",
        type=config.get("default_type") or "sluice.http.event",
    )
    try:
        candidates = parse_request(content_type, headers, body, defaults)
    except BadRequest as exc:
        unsupported = isinstance(exc, UnsupportedMediaType)
        raise IngestBadRequest(str(exc), unsupported_media_type=unsupported) from None
    limit = settings.SLUICE_INGEST_MAX_BATCH
    if len(candidates) > limit:
        raise IngestTooLarge(f"{len(candidates)} events in one request; the limit is {limit}")
    try:
        rate.take(channel, len(candidates))
    except rate.IngestOverBurst as exc:
        raise IngestTooLarge(str(exc)) from None
    # The site-wide cap bounds every channel; a channel's http source may set a lower one.
    max_bytes = settings.SLUICE_INGEST_MAX_EVENT_BYTES
    if config.get("max_event_bytes"):
        max_bytes = min(max_bytes, int(config["max_event_bytes"]))
    results: list[EventResult] = []
    records: list[tuple[int, str, bytes]] = []
    for index, candidate in enumerate(candidates):
        if candidate.event is None:
            results.append(EventResult(index, REJECTED, errors=candidate.errors))
            continue
        event_id = str(candidate.event["id"])
        try:
            value = encode(candidate.event)
        except ValueError:
            # NaN / Infinity or a lone surrogate: not JSON the channel's reader can parse.
            message = "holds a value JSON cannot carry (NaN, Infinity or a lone surrogate)"
            results.append(EventResult(index, REJECTED, event_id, {"event": [message]}))
            continue
        if len(value) > max_bytes:
            message = f"is {len(value)} bytes as CloudEvents JSON; the limit is {max_bytes}"
            results.append(EventResult(index, REJECTED, event_id, {"event": [message]}))
            continue
        results.append(EventResult(index, ACCEPTED, event_id))
        records.append((index, event_id, value))
    if records:
        _write(channel.name, records, results)
    return IngestReport(results)


def _write(
    channel_name: str, records: list[tuple[int, str, bytes]], results: list[EventResult]
) -> None:
    """Produce ``records`` and downgrade every one Kafka did not confirm."""
    topic = ensure_ingest_topic(channel_name)
    answers = get_ingest_kafka().produce(topic, [(key, value) for _, key, value in records])
    unconfirmed = 0
    for (index, _, _), problem in zip(records, answers, strict=True):
        if problem is not None:
            results[index].status = NOT_CONFIRMED
            results[index].errors = {"kafka": [problem]}
            unconfirmed += 1
    if unconfirmed:
        logger.warning(
            "channel %s: Kafka did not confirm %d of %d events",
            channel_name,
            unconfirmed,
            len(records),
        )
