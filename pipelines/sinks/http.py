"""HTTP sink: send each event as one HTTP request to an API (an EventBridge API destination).

Per micro-batch (``foreachBatch``), in three steps:

1. **Serialize** with native Spark SQL (:func:`events_to_requests`): each event becomes a body
   (text), its event-specific headers (``map<string,string>``), its id and JSON form, the
   time its age is measured from, and its origin columns. ``body``:

   * ``cloudevents`` - the whole event as structured CloudEvents JSON, ``Content-Type:
     application/cloudevents+json; charset=UTF-8``;
   * ``data`` - the data as JSON, ``Content-Type: application/json`` (an event without data
     is sent with an empty body and no Content-Type); a replayed or redriven event's marks,
     which the body alone would drop, as the headers ``sluicereplay`` (the run id) and
     ``sluicerun`` (``replay`` or ``redrive``), see :data:`pipelines.spec.runs.RUN_MARKERS`;
   * ``cloudevents-binary`` - CloudEvents HTTP binding, binary mode: the data as the body (a
     string under a non-JSON ``datacontenttype`` such as ``text/plain`` as the text itself,
     else JSON), ``Content-Type`` = ``datacontenttype`` (``application/json`` when it is
     unset), and one ``ce-<name>`` header per attribute and extension that is set
     (``ce-time`` as RFC 3339 UTC, non-string extensions as JSON text, values percent-encoded
     as the binding requires).

2. **Send** per Spark partition (``rdd.mapPartitions``, one urllib3 ``PoolManager`` per
   partition), one request at a time, so events of a partition arrive in order. The static
   ``headers`` and the ``auth`` header are added here, never put into the Spark plan, so
   secrets do not show up in query plans or the Spark UI. A 2xx answer delivers an event;
   redirects are not followed (a 3xx is a rejection).

   SSRF guard. Every new connection resolves the host once, is refused when any address it
   resolves to is loopback, link-local, private or otherwise not public (unless
   ``SLUICE_HTTP_SINK_ALLOW`` names it, see :mod:`pipelines.net`), and connects to the very
   addresses it checked. A refused event is rejected at once (not retried) with error class
   ``ForbiddenAddress`` and goes where every rejection goes (the dead letters, or a failed
   query). The allow-list is read on the driver and shipped to the executors with the config.

3. **Return the rejections** only: the driver collects one row per event that could not be
   delivered and builds the dead letters from them (:data:`pipelines.errors.DEAD_LETTER_SCHEMA`)
   with ``createDataFrame``, so they never recompute the events.

Retries follow the retry policy (:mod:`pipelines.http_client`, shared with the ``enrich``
transform): connection errors, timeouts, 408, 429 and 5xx are retried with exponential backoff
and full jitter (``Retry-After`` honoured on 429 / 503, capped at ``backoff_max_seconds``), up
to ``retry.attempts`` tries; any other status is rejected at once. An event older than
``max_event_age_seconds`` (by its ``time``, else its ``origin_timestamp``) is not sent, or not
retried any more, and is rejected as ``EventTooOld``.

Rate limit. ``rate_limit_per_second`` bounds the requests (retries included) of the whole sink.
Spark sends the partitions of a micro-batch in parallel and they do not talk to each other, so
each partition gets ``rate / number of partitions`` and spaces its own requests by the inverse
of that share. That is a true upper bound whatever runs at the same time; when partitions are
few or uneven the sink stays below the limit. Repartition before the sink to spread a batch.

Delivery is at-least-once: a micro-batch that fails part-way is replayed, and events of it that
were already delivered are sent again (the receiver can de-duplicate on the event id).
Messages name the method and the URL without its query (which may hold a key) and never hold
the auth secrets: any echo of them in a response is replaced by a marker.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from functools import partial
from typing import Any
from urllib.parse import quote

import urllib3
from pyspark.sql import DataFrame, Row
from pyspark.sql import functions as F
from pyspark.sql.streaming.readwriter import DataStreamWriter

from pipelines import native
from pipelines.cloudevents import (
    JSON_CONTENT_TYPE,
    STRUCTURED_CONTENT_TYPE,
    attribute_sql,
    binary_data_sql,
    event_json,
    time_text_sql,
    variant_text_sql,
)
from pipelines.errors import DEAD_LETTER_SCHEMA
from pipelines.http_client import HttpCaller, Outcome
from pipelines.http_client import display_url as display_url  # this sink's API before the move
from pipelines.net import AllowList, allow_list
from pipelines.sources.kafka import JSON_MEDIA_TYPE
from pipelines.spec.configs.http_sink import HttpSinkConfig
from pipelines.spec.reach import carried
from pipelines.spec.runs import RUN_MARKERS
from pipelines.sql import sql_string

STAGE = "sink"
USER_AGENT = "sluice-http-sink/1"
REQUEST_COLUMNS = (
    "id",
    "body",
    "headers",
    "age_from_micros",
    "event",
    "origin_topic",
    "origin_partition",
    "origin_offset",
    "origin_timestamp_micros",
    "origin_payload",
)
"""Columns of :func:`events_to_requests`; timestamps as epoch microseconds (time-zone proof)."""

_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
_HEADER_SAFE = "".join(chr(c) for c in range(0x21, 0x7F) if chr(c) not in '"%')
"""Printable ASCII but space, '"' and '%': what a ce-* header value carries unencoded."""


class HttpSinkRejected(RuntimeError):
    """Events the HTTP sink could not deliver, with no dead-letter target to take them."""

    def __init__(self, rejections: list[Rejection]) -> None:
        first = rejections[0]
        super().__init__(
            f"http sink: {len(rejections)} event(s) rejected; first: {first.message} "
            f"({first.where()})"
        )
        self.rejections = rejections


@dataclass(frozen=True)
class Rejection:
    """One event the sink gave up on: a dead letter, origin timestamp in epoch micros."""

    event_id: str | None
    event: str | None
    error_class: str
    message: str
    origin_topic: str | None
    origin_partition: int | None
    origin_offset: int | None
    origin_timestamp_micros: int | None
    origin_payload: str | None

    def where(self) -> str:
        """``event <id>``, with the Kafka record it came from when it came from one."""
        if self.origin_topic is None:
            return f"event {self.event_id}"
        return (
            f"event {self.event_id}, Kafka record topic={self.origin_topic} "
            f"partition={self.origin_partition} offset={self.origin_offset}"
        )

    def dead_letter(self) -> tuple[Any, ...]:
        """A row of :data:`DEAD_LETTER_SCHEMA`."""
        micros = self.origin_timestamp_micros
        timestamp = None if micros is None else _EPOCH + timedelta(microseconds=micros)
        return (
            self.event_id,
            self.event,
            STAGE,
            self.error_class,
            self.message,
            self.origin_topic,
            self.origin_partition,
            self.origin_offset,
            timestamp,
            self.origin_payload,
        )


# -- the public edges --------------------------------------------------------------------


def deliver_http(events: DataFrame, config: HttpSinkConfig) -> DataFrame:
    """Send every event of the batch DataFrame ``events``; return the rejected ones.

    The result has :data:`pipelines.errors.DEAD_LETTER_SCHEMA`, one row per event that was
    not delivered after the retry policy (stage ``sink``; error class ``HttpStatus<code>``,
    ``ConnectionError``, ``Timeout``, ``TLSError``, ``ForbiddenAddress`` or ``EventTooOld``),
    and is empty when all
    were delivered. It is built from collected rows: using it never recomputes ``events``.
    """
    rejections = send_events(events, config)
    spark = events.sparkSession
    return spark.createDataFrame([r.dead_letter() for r in rejections], DEAD_LETTER_SCHEMA)


def write_http_batch(events: DataFrame, config: HttpSinkConfig, batch_id: int) -> DataFrame:
    """:func:`deliver_http` with the ``(events, config, batch_id)`` signature of a batch sink."""
    return deliver_http(events, config)


def write_http(events: DataFrame, config: HttpSinkConfig) -> DataStreamWriter:
    """A streaming writer sending each micro-batch (``foreachBatch``, append mode).

    Used when the channel tolerates no errors: a micro-batch with any rejected event fails
    the query with :class:`HttpSinkRejected`, whose message starts ``http sink: N event(s)
    rejected; first: ...`` and names the first event and the Kafka record it came from.
    (It sends as :func:`deliver_http` does, without building a DataFrame of the rejections.)
    """

    def write_batch(batch: DataFrame, batch_id: int) -> None:
        rejections = send_events(batch, config)
        if rejections:
            raise HttpSinkRejected(rejections)

    return events.writeStream.foreachBatch(carried(write_batch)).outputMode("append")


def send_events(events: DataFrame, config: HttpSinkConfig) -> list[Rejection]:
    """Send every event of a batch DataFrame; return the rejections (collected to the driver)."""
    requests = events_to_requests(events, config).rdd
    partitions = requests.getNumPartitions()
    if partitions == 0:
        return []
    rate = config.rate_limit_per_second
    share = None if rate is None else rate / partitions
    send = partial(_send_partition, config, share, allow_list())
    return requests.mapPartitions(send).collect()


# -- serialization (Spark SQL) -----------------------------------------------------------


def events_to_requests(events: DataFrame, config: HttpSinkConfig) -> DataFrame:
    """One row per event with :data:`REQUEST_COLUMNS`: what the sender needs, as plain values.

    ``body`` is the request body text (NULL: an empty body), ``headers`` the event-specific
    headers (Content-Type and, in binary mode, ``ce-*`` not yet percent-encoded), and
    ``age_from_micros`` the epoch microseconds of ``time``, else ``origin_timestamp``.
    """
    with_event = events.withColumn("_event", event_json(native.json_zone(events)))
    if config.body == "cloudevents":
        body = F.col("_event")
        headers = F.expr(f"map('Content-Type', {sql_string(STRUCTURED_CONTENT_TYPE)})")
    elif config.body == "data":
        body = native.to_json(events, "data")
        headers = F.expr(
            f"CASE WHEN data IS NULL THEN CAST(map() AS map<string,string>) "
            f"ELSE map('Content-Type', {sql_string(JSON_CONTENT_TYPE)}) END"
        )
        headers = F.when(F.size("extensions") == 0, headers).otherwise(
            F.map_concat(headers, F.expr(_RUN_MARKS_SQL))
        )
    else:
        body, headers = F.expr(_BINARY_BODY_SQL), F.expr(_binary_headers_sql())
    return with_event.select(
        "id",
        body.alias("body"),
        headers.alias("headers"),
        F.expr("unix_micros(coalesce(`time`, origin_timestamp))").alias("age_from_micros"),
        F.col("_event").alias("event"),
        "origin_topic",
        "origin_partition",
        "origin_offset",
        F.expr("unix_micros(origin_timestamp)").alias("origin_timestamp_micros"),
        "origin_payload",
    )


_BINARY_BODY_SQL = binary_data_sql(JSON_MEDIA_TYPE)
_RUN_MARKS_SQL = (
    "map_from_entries(filter(array("
    + ", ".join(
        f"named_struct('key', {sql_string(name)}, 'value', {variant_text_sql(attribute_sql(name))})"
        for name in RUN_MARKERS
    )
    + "), h -> h.value IS NOT NULL))"
)
"""A run's marks the event carries, as headers (the ``data`` body drops its extensions)."""


def _binary_headers_sql() -> str:
    """Binary mode's headers: Content-Type, then ce-* for each attribute or extension set."""

    def entry(name: str, text: str) -> str:
        return f"named_struct('key', {sql_string(name)}, 'value', {text})"

    content_type = (
        f"CASE WHEN data IS NOT NULL THEN coalesce(datacontenttype, "
        f"{sql_string(JSON_CONTENT_TYPE)}) END"
    )
    attributes = [
        entry("Content-Type", content_type),
        *(
            entry(f"ce-{name}", f"`{name}`")
            for name in ("specversion", "id", "source", "type", "subject", "dataschema")
        ),
        entry("ce-time", time_text_sql("`time`")),
    ]
    extensions = (
        "transform(map_entries(extensions), e -> named_struct('key', concat('ce-', e.key), "
        f"'value', {variant_text_sql('e.value')}))"
    )
    entries = f"concat(array({', '.join(attributes)}), {extensions})"
    return f"map_from_entries(filter({entries}, h -> h.value IS NOT NULL))"


# -- sending (Python, on the executors) --------------------------------------------------


def _send_partition(
    config: HttpSinkConfig, per_second: float | None, allowed: AllowList, rows: Iterator[Row]
) -> Iterator[Rejection]:
    sender = _Sender(config, per_second, allowed)
    try:
        for row in rows:
            rejection = sender.deliver(row)
            if rejection is not None:
                yield rejection
    finally:
        sender.close()


class _Sender:
    """Delivers events one by one to the configured URL, with the retry policy."""

    def __init__(
        self, config: HttpSinkConfig, per_second: float | None, allowed: AllowList | None = None
    ) -> None:
        self._caller = HttpCaller(
            method=config.method,
            url=config.url,
            headers=config.headers,
            auth=config.auth,
            timeout=urllib3.Timeout(total=config.timeout_seconds),
            timeout_text=f"no answer within {config.timeout_seconds:g} s",
            retry=config.retry,
            allowed=allow_list() if allowed is None else allowed,
            user_agent=USER_AGENT,
            per_second=per_second,
        )

    def close(self) -> None:
        self._caller.close()

    def deliver(self, row: Row) -> Rejection | None:
        """Send one event with retries; ``None`` once delivered, else why it was rejected."""
        result = self._caller.call(_body(row), _encoded(row.headers or {}), row.age_from_micros)
        if result.ok:
            return None
        return Rejection(
            event_id=row.id,
            event=row.event,
            error_class=result.error_class or "",
            message=result.message,
            origin_topic=row.origin_topic,
            origin_partition=row.origin_partition,
            origin_offset=row.origin_offset,
            origin_timestamp_micros=row.origin_timestamp_micros,
            origin_payload=row.origin_payload,
        )

    def _attempt(self, row: Row) -> Outcome:
        return self._caller.attempt(_body(row), _encoded(row.headers or {}))


def _body(row: Row) -> bytes:
    return b"" if row.body is None else row.body.encode("utf-8")


def _encoded(headers: dict[str, str]) -> dict[str, str]:
    """Event headers ready to send: ce-* values percent-encoded (CloudEvents HTTP binding)."""
    return {
        name: quote(value, safe=_HEADER_SAFE) if name.startswith("ce-") else value
        for name, value in headers.items()
    }
