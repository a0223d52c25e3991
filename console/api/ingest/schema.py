"""OpenAPI description of ``POST /api/v1/channels/{name}/events`` (HTTP ingestion) and of
the channel's ingestion token (``/api/v1/channels/{name}/ingest-token``)."""

from __future__ import annotations

from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiExample, OpenApiResponse
from rest_framework import serializers

INGEST_DESCRIPTION = """\
Sends events to a channel whose source is `http`.

**Authentication.** Producers send the channel's ingestion token (issue one with
`POST /api/v1/channels/{name}/ingest-token`) as `Authorization: Bearer slk_…` or
`X-Sluice-Token: slk_…`; no session, no CSRF token. A console user with the operator role
(`console.operate_channel`) may post too, with a session (and its CSRF token) or a DRF token.
No credentials: 401 with `WWW-Authenticate: Bearer`. A token that is not this channel's
(wrong, rotated, revoked, another channel's), a channel with no token issued, or a console
user without the operator role: 403 with the reason.

**Rate limit.** A channel accepts `ingest_rate_limit` events per second (default
`SLUICE_INGEST_RATE_LIMIT`, 1000) in bursts of `SLUICE_INGEST_BURST_SECONDS` (2) seconds' worth;
every event of a request counts, valid or not. Over it: 429 with `Retry-After` (seconds) and
nothing written; a request with more events than the burst: 413.

The body is one of:

* `application/cloudevents+json` - one structured-mode CloudEvent;
* `application/cloudevents-batch+json` - a JSON array of structured-mode CloudEvents;
* binary mode - `ce-specversion`, `ce-id`, `ce-source`, `ce-type` (optional `ce-subject`,
  `ce-time`, `ce-dataschema`, any other `ce-*` is an extension) with the data as the body and
  its `Content-Type` as `datacontenttype`;
* `application/json` - plain JSON: an object is one event, an array of objects a batch; each
  is wrapped in a CloudEvent with a fresh id, source `/sluice/channels/{name}/events`, the
  source's `default_type` and the current time.

Each event is validated on its own (CloudEvents 1.0: required attributes, specversion 1.0,
extension names, RFC 3339 time) and against its size limit: `SLUICE_INGEST_MAX_EVENT_BYTES`
(256 KiB), or the source's lower `max_event_bytes`; an event over it is rejected alone. The
valid ones are written to the channel's Kafka topic `sluice.ingest.{name}` and the answer
waits until Kafka confirmed every one: `accepted` means durably written. The channel need not
be running; it reads what was accepted when it starts.

The whole request is refused, and nothing written, when the body is over
`SLUICE_INGEST_MAX_REQUEST_BYTES` or holds more than `SLUICE_INGEST_MAX_BATCH` events (413),
cannot be read (400) or has another content type (415).
"""


class IngestEventResultSerializer(serializers.Serializer):
    index = serializers.IntegerField(help_text="Position of the event in the request.")
    id = serializers.CharField(required=False, help_text="The event id, when it has one.")
    status = serializers.ChoiceField(["accepted", "rejected", "not_confirmed"])
    # The answer's "errors" shadows Serializer.errors: this serializer only documents the schema.
    errors = serializers.DictField(  # type: ignore[assignment]
        child=serializers.ListField(child=serializers.CharField()),
        required=False,
        help_text="Why, keyed by attribute (`event`: the event as a whole; `kafka`).",
    )


class IngestReportSerializer(serializers.Serializer):
    accepted = serializers.IntegerField(help_text="Events Kafka confirmed.")
    rejected = serializers.IntegerField(help_text="Invalid events (not written).")
    not_confirmed = serializers.IntegerField(
        required=False,
        help_text="Valid events Kafka did not confirm (503 only): they may not be written.",
    )
    results = IngestEventResultSerializer(many=True)


_REPORT = IngestReportSerializer
_EVENT = {
    "specversion": "1.0",
    "id": "order-1042",
    "source": "/shop/checkout",
    "type": "com.example.order.placed",
    "time": "2024-06-01T08:00:00Z",
    "datacontenttype": "application/json",
    "data": {"order": 1042, "total": 120.5},
}

INGEST_REQUEST = {
    "application/cloudevents+json": OpenApiTypes.OBJECT,
    "application/cloudevents-batch+json": {"type": "array", "items": {"type": "object"}},
    "application/json": OpenApiTypes.ANY,
    "*/*": OpenApiTypes.BINARY,
}
INGEST_RESPONSES = {
    202: OpenApiResponse(_REPORT, description="Every event was accepted (written to Kafka)."),
    207: OpenApiResponse(_REPORT, description="Some events were rejected; the rest accepted."),
    400: OpenApiResponse(
        _REPORT,
        description="No event was valid (per-event results), or the body cannot be read "
        '(`{"detail": ...}`). Nothing was written.',
    ),
    401: OpenApiResponse(
        description="No credentials: send the channel's token (`WWW-Authenticate: Bearer`)."
    ),
    403: OpenApiResponse(
        description="Not this channel's token, no token issued, or a console user without "
        "the operator role."
    ),
    404: OpenApiResponse(description="No channel has this name."),
    409: OpenApiResponse(description="The channel's source is not `http`."),
    413: OpenApiResponse(description="Body, batch or burst over the limit; nothing was written."),
    415: OpenApiResponse(description="Unsupported content type; nothing was written."),
    429: OpenApiResponse(
        description="Over the channel's rate limit (`Retry-After` says when to retry); "
        "nothing was written."
    ),
    503: OpenApiResponse(
        _REPORT,
        description="Kafka did not confirm some events (`not_confirmed`): they may not have "
        'been written; send them again (same ids). Or Kafka is unreachable (`{"detail": ...}`).',
    ),
}
INGEST_EXAMPLES = [
    OpenApiExample(
        "One structured event",
        value=_EVENT,
        request_only=True,
        media_type="application/cloudevents+json",
    ),
    OpenApiExample(
        "A batch",
        value=[_EVENT, {**_EVENT, "id": "order-1043", "time": "yesterday"}],
        request_only=True,
        media_type="application/cloudevents-batch+json",
    ),
    OpenApiExample(
        "Plain JSON",
        value={"order": 1042, "total": 120.5},
        request_only=True,
        media_type="application/json",
    ),
    OpenApiExample(
        "Some rejected",
        value={
            "accepted": 1,
            "rejected": 1,
            "results": [
                {"index": 0, "id": "order-1042", "status": "accepted"},
                {
                    "index": 1,
                    "id": "order-1043",
                    "status": "rejected",
                    "errors": {
                        "time": [
                            "must be an RFC 3339 timestamp such as 2024-06-01T08:00:00Z, "
                            "got 'yesterday'"
                        ]
                    },
                },
            ],
        },
        response_only=True,
        status_codes=["207"],
    ),
]

INGEST_TOKEN_DESCRIPTION = """\
Issues the channel's ingestion token, or rotates it (the old token stops working at once).
The answer holds the token **this once**: the console keeps only its SHA-256 hash and its
prefix. Producers send it to `POST /api/v1/channels/{name}/events` as
`Authorization: Bearer <token>`. Needs the editor role (`console.change_channel`).
201: the channel had no token; 200: a token was replaced.
"""
