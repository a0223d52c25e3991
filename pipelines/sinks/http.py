"""HTTP sink: send each event as one HTTP request to an API (an EventBridge API destination).

Per micro-batch (``foreachBatch``), in three steps:

1. **Serialize** with native Spark SQL (:func:`events_to_requests`): each event becomes a body
   (text), its event-specific headers (``map<string,string>``), its id and JSON form, the
   time its age is measured from, and its origin columns. ``body``:

   * ``cloudevents`` - the whole event as structured CloudEvents JSON, ``Content-Type:
     application/cloudevents+json; charset=UTF-8``;
   * ``data`` - the data as JSON, ``Content-Type: application/json`` (an event without data
     is sent with an empty body and no Content-Type);
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

Retries. The loop is written here rather than with urllib3's ``Retry``: ``Retry`` cannot stop
at a maximum event age, its jitter is added to the backoff rather than drawn over all of it
(full jitter, which spreads the retries of many partitions best), and it would not let a
``Retry-After`` be capped by ``backoff_max_seconds``. So urllib3 sends each attempt once
(``retries=False``) and :class:`_Sender` decides: connection errors, timeouts, 408, 429 and
5xx are retried after a random wait in ``[0, min(backoff_max, backoff_initial * 2^(n-1))]``
(or the server's ``Retry-After`` on 429 / 503, capped at ``backoff_max``), up to
``retry.attempts`` tries in all; any other status is rejected at once. An event older than
``max_event_age_seconds`` (by its ``time``, else its ``origin_timestamp``; no limit when it
has neither) is not sent, or not retried any more, and is rejected as ``EventTooOld``; so is
an event whose next wait would carry it past that age.

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

import base64
import email.utils
import random
import re
import time
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from functools import partial
from typing import Any
from urllib.parse import quote, urlsplit

import urllib3
from pyspark.sql import DataFrame, Row
from pyspark.sql import functions as F
from pyspark.sql.streaming.readwriter import DataStreamWriter

from pipelines import native
from pipelines.cloudevents import (
    JSON_CONTENT_TYPE,
    STRUCTURED_CONTENT_TYPE,
    binary_data_sql,
    event_json,
    time_text_sql,
    variant_text_sql,
)
from pipelines.errors import DEAD_LETTER_SCHEMA
from pipelines.net import AllowList, ForbiddenAddress, GuardedPoolManager, allow_list
from pipelines.sources.kafka import JSON_MEDIA_TYPE
from pipelines.spec.configs.http_sink import (
    ApiKeyAuth,
    BasicAuth,
    BearerAuth,
    HttpSinkConfig,
)
from pipelines.spec.secrets import scrub
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
RETRIED_STATUSES = frozenset({408, 429})
RETRY_AFTER_STATUSES = frozenset({429, 503})
_SNIPPET_BYTES = 512
_SNIPPET_CHARS = 200
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

    return events.writeStream.foreachBatch(write_batch).outputMode("append")


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


@dataclass(frozen=True)
class _Outcome:
    """How one attempt ended: delivered, or an error (class, readable detail, retryable?)."""

    error_class: str | None = None
    detail: str = ""
    retryable: bool = False
    retry_after: float | None = None


_DELIVERED = _Outcome()


class _RateLimiter:
    """Spaces calls at least ``1 / per_second`` apart (no burst); no limit when ``None``."""

    def __init__(self, per_second: float | None) -> None:
        self._interval = 0.0 if per_second is None else 1.0 / per_second
        self._next = time.monotonic()

    def wait(self) -> None:
        if not self._interval:
            return
        now = time.monotonic()
        if self._next > now:
            time.sleep(self._next - now)
            now = self._next
        self._next = now + self._interval


class _Sender:
    """Delivers events one by one to the configured URL, with the retry policy."""

    def __init__(
        self, config: HttpSinkConfig, per_second: float | None, allowed: AllowList | None = None
    ) -> None:
        self._config = config
        self._retry = config.retry
        self._pool = GuardedPoolManager(
            allow_list() if allowed is None else allowed, num_pools=1, maxsize=1, retries=False
        )
        self._timeout = urllib3.Timeout(total=config.timeout_seconds)
        self._limiter = _RateLimiter(per_second)
        self._headers = {"User-Agent": USER_AGENT, **config.headers, **_auth_headers(config)}
        self._secrets = _secret_values(config)
        self._target = f"{config.method} {display_url(config.url)}"

    def close(self) -> None:
        self._pool.clear()

    def deliver(self, row: Row) -> Rejection | None:
        """Send one event with retries; ``None`` once delivered, else why it was rejected."""
        deadline = None
        if row.age_from_micros is not None:
            deadline = row.age_from_micros / 1e6 + self._retry.max_event_age_seconds
        attempts = 0
        outcome: _Outcome | None = None
        while True:
            if deadline is not None and time.time() > deadline:
                return self._too_old(row, attempts, outcome, "")
            self._limiter.wait()
            attempts += 1
            outcome = self._attempt(row)
            if outcome is _DELIVERED:
                return None
            if not outcome.retryable or attempts >= self._retry.attempts:
                return self._reject(row, outcome.error_class or "", self._failed(outcome, attempts))
            delay = self._delay(attempts, outcome)
            if deadline is not None and time.time() + delay > deadline:
                return self._too_old(row, attempts, outcome, " before the next attempt")
            time.sleep(delay)

    def _attempt(self, row: Row) -> _Outcome:
        headers = {**self._headers, **_encoded(row.headers or {})}
        body = b"" if row.body is None else row.body.encode("utf-8")
        try:
            response = self._pool.request(
                self._config.method,
                self._config.url,
                body=body,
                headers=headers,
                timeout=self._timeout,
                retries=False,
                redirect=False,
                preload_content=False,
            )
        except ForbiddenAddress as error:
            return _Outcome("ForbiddenAddress", f"refused: {error}")
        except urllib3.exceptions.NewConnectionError as error:
            return _Outcome("ConnectionError", f"connection failed: {_reason(error)}", True)
        except urllib3.exceptions.TimeoutError:
            return _Outcome("Timeout", f"no answer within {self._config.timeout_seconds:g} s", True)
        except urllib3.exceptions.SSLError as error:
            return _Outcome("TLSError", f"TLS failed: {_reason(error)}", True)
        except (urllib3.exceptions.HTTPError, OSError) as error:
            return _Outcome("ConnectionError", f"connection failed: {_reason(error)}", True)
        return _answer(response)

    def _delay(self, attempts: int, outcome: _Outcome) -> float:
        if outcome.retry_after is not None:
            return min(outcome.retry_after, self._retry.backoff_max_seconds)
        bound = self._retry.backoff_initial_seconds * 2.0 ** min(attempts - 1, 60)
        return random.uniform(0.0, min(bound, self._retry.backoff_max_seconds))

    def _failed(self, outcome: _Outcome, attempts: int) -> str:
        return f"{self._target}: {outcome.detail} (after {attempts} attempt(s))"

    def _too_old(self, row: Row, attempts: int, outcome: _Outcome | None, when: str) -> Rejection:
        event_time = _EPOCH + timedelta(microseconds=row.age_from_micros)
        message = (
            f"{self._target}: event time {event_time.isoformat()} is older than "
            f"max_event_age_seconds={self._retry.max_event_age_seconds:g}{when}"
        )
        if outcome is None:
            message += "; not sent"
        else:
            message += f"; gave up after {attempts} attempt(s), last: {outcome.detail}"
        return self._reject(row, "EventTooOld", message)

    def _reject(self, row: Row, error_class: str, message: str) -> Rejection:
        return Rejection(
            event_id=row.id,
            event=row.event,
            error_class=error_class,
            message=scrub(message, self._secrets),
            origin_topic=row.origin_topic,
            origin_partition=row.origin_partition,
            origin_offset=row.origin_offset,
            origin_timestamp_micros=row.origin_timestamp_micros,
            origin_payload=row.origin_payload,
        )


def _answer(response: urllib3.BaseHTTPResponse) -> _Outcome:
    """The outcome of an answer; reads a snippet of a failure's body, then frees the connection."""
    status = response.status
    snippet = b""
    try:
        if not 200 <= status < 300:
            snippet = response.read(_SNIPPET_BYTES)
    except (urllib3.exceptions.HTTPError, OSError):
        pass  # the status is what counts; the rest of the body is lost
    finally:
        response.drain_conn()
        response.release_conn()
    if 200 <= status < 300:
        return _DELIVERED
    detail = f"HTTP {status} {response.reason or ''}".rstrip()
    text = _snippet(snippet)
    if text:
        detail += f", response: {text}"
    retryable = status in RETRIED_STATUSES or 500 <= status < 600
    retry_after = None
    if status in RETRY_AFTER_STATUSES:
        retry_after = _retry_after(response.headers.get("Retry-After"))
    return _Outcome(f"HttpStatus{status}", detail, retryable, retry_after)


def _snippet(body: bytes) -> str:
    text = " ".join(body.decode("utf-8", errors="replace").split())
    return text if len(text) <= _SNIPPET_CHARS else text[: _SNIPPET_CHARS - 1] + "…"


def _retry_after(value: str | None) -> float | None:
    """Seconds to wait from a Retry-After value (delay-seconds or an HTTP date), else None."""
    if not value:
        return None
    value = value.strip()
    if value.isdigit():
        return float(value)
    try:
        moment = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError, IndexError):
        return None
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=UTC)
    return max(0.0, moment.timestamp() - time.time())


_OBJECT_REPR = re.compile(r"<[\w.]+ object at 0x[0-9a-f]+>:?\s*")


def _reason(error: BaseException) -> str:
    """An exception's text without urllib3's ``<... object at 0x...>`` noise."""
    return _OBJECT_REPR.sub("", str(error)).strip() or type(error).__name__


def _encoded(headers: dict[str, str]) -> dict[str, str]:
    """Event headers ready to send: ce-* values percent-encoded (CloudEvents HTTP binding)."""
    return {
        name: quote(value, safe=_HEADER_SAFE) if name.startswith("ce-") else value
        for name, value in headers.items()
    }


def _auth_headers(config: HttpSinkConfig) -> dict[str, str]:
    auth = config.auth
    if isinstance(auth, BasicAuth):
        return {"Authorization": f"Basic {_basic_credentials(auth)}"}
    if isinstance(auth, BearerAuth):
        return {"Authorization": f"Bearer {auth.token}"}
    if isinstance(auth, ApiKeyAuth):
        return {auth.header: auth.value}
    return {}


def _basic_credentials(auth: BasicAuth) -> str:
    return base64.b64encode(f"{auth.username}:{auth.password}".encode()).decode("ascii")


def _secret_values(config: HttpSinkConfig) -> list[str]:
    """Every form in which an auth secret could show up in a message."""
    auth = config.auth
    if isinstance(auth, BasicAuth):
        return [auth.password, _basic_credentials(auth)]
    if isinstance(auth, BearerAuth):
        return [auth.token]
    if isinstance(auth, ApiKeyAuth):
        return [auth.value]
    return []


def display_url(url: str) -> str:
    """``url`` fit for messages: scheme, host, port and path; no query (it may hold a key)."""
    parts = urlsplit(url)
    return f"{parts.scheme}://{parts.netloc}{parts.path}" + ("?…" if parts.query else "")
