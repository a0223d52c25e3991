"""Outbound HTTP calls of stages (the ``http`` sink, the ``enrich`` transform): one call with
the retry policy, through the address guard, with write-only auth.

:class:`HttpCaller` sends one request body to the configured URL and retries it as
:class:`~pipelines.spec.configs.http_sink.HttpRetry` says. The loop is written here rather
than with urllib3's ``Retry``: ``Retry`` cannot stop at a maximum event age, its jitter is
added to the backoff rather than drawn over all of it (full jitter, which spreads the retries
of many partitions best), and it would not let a ``Retry-After`` be capped by
``backoff_max_seconds``. So urllib3 sends each attempt once (``retries=False``) and the caller
decides: connection errors, timeouts, 408, 429 and 5xx are retried after a random wait in
``[0, min(backoff_max, backoff_initial * 2^(n-1))]`` (or the server's ``Retry-After`` on
429 / 503, capped at ``backoff_max``), up to ``retry.attempts`` tries in all; any other status
is a failure at once. A call for an event older than ``max_event_age_seconds`` (by its
``time``, else its ``origin_timestamp``; no limit when it has neither) is not sent, or not
retried any more, and fails as ``EventTooOld``; so does one whose next wait would carry it
past that age. A connection to a forbidden address (:mod:`pipelines.net`) fails at once as
``ForbiddenAddress``. Redirects are not followed (a 3xx is a failure).

The static headers and the auth header are added here, in the Python workers, never put into
a Spark plan. Messages name the method and the URL without its query (which may hold a key)
and never hold the auth secrets: any echo of them in an answer is replaced by a marker.
"""

from __future__ import annotations

import base64
import email.utils
import random
import re
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from urllib.parse import urlsplit

import urllib3

from pipelines.net import AllowList, ForbiddenAddress, GuardedPoolManager
from pipelines.spec.configs.http_sink import (
    ApiKeyAuth,
    BasicAuth,
    BearerAuth,
    HttpAuthConfig,
    HttpRetry,
)
from pipelines.spec.secrets import scrub

RETRIED_STATUSES = frozenset({408, 429})
RETRY_AFTER_STATUSES = frozenset({429, 503})
_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
_SNIPPET_BYTES = 512
_SNIPPET_CHARS = 200


@dataclass(frozen=True)
class Outcome:
    """How one attempt ended: a 2xx answer (``error_class`` None, with its ``body`` when the
    caller reads answers), or an error (class, readable detail, retryable?)."""

    error_class: str | None = None
    detail: str = ""
    retryable: bool = False
    retry_after: float | None = None
    body: bytes = b""

    @property
    def ok(self) -> bool:
        return self.error_class is None


@dataclass(frozen=True)
class CallResult:
    """How a call ended after its retries: a 2xx answer's body, or why it failed.

    ``message`` (failures only) names the method and URL, the last error and the attempts,
    with the auth secrets masked.
    """

    body: bytes | None
    error_class: str | None = None
    message: str = ""

    @property
    def ok(self) -> bool:
        return self.error_class is None


class RateLimiter:
    """Spaces calls at least ``1 / per_second`` apart (no burst); no limit when ``None``.
    Thread-safe. ``clock`` and ``sleep`` are the limiter's time (a monotonic clock and a
    sleep on it): a test gives one it moves by hand, to check the spacing exactly."""

    def __init__(
        self,
        per_second: float | None,
        *,
        clock: Callable[[], float] = time.monotonic,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        self._interval = 0.0 if per_second is None else 1.0 / per_second
        self._clock = clock
        self._sleep = sleep
        self._next = clock()
        self._lock = threading.Lock()

    def wait(self) -> None:
        if not self._interval:
            return
        with self._lock:
            now = self._clock()
            start = max(now, self._next)
            self._next = start + self._interval
        if start > now:
            self._sleep(start - now)


class HttpCaller:
    """Calls ``method url`` with a body, as the retry policy says. Thread-safe: its pool keeps
    up to ``connections`` connections, and a thread waits for a free one beyond that.

    ``answer_bytes``: read a 2xx answer's body, up to that many bytes (a larger one fails as
    ``AnswerTooLarge``); ``None`` (a sink) drops it unread.
    """

    def __init__(
        self,
        *,
        method: str,
        url: str,
        headers: Mapping[str, str],
        auth: HttpAuthConfig,
        timeout: urllib3.Timeout,
        timeout_text: str,
        retry: HttpRetry,
        allowed: AllowList,
        user_agent: str,
        per_second: float | None = None,
        connections: int = 1,
        answer_bytes: int | None = None,
    ) -> None:
        self._method = method
        self._retry = retry
        self._timeout = timeout
        self._timeout_text = timeout_text
        self._answer_bytes = answer_bytes
        self._pool = GuardedPoolManager(
            allowed, num_pools=1, maxsize=connections, block=True, retries=False
        )
        # the one pool of this URL's origin, and the path to ask it for (parsed once)
        self._origin = self._pool.connection_from_url(url)
        self._path = urllib3.util.parse_url(url).request_uri
        self._limiter = RateLimiter(per_second)
        self._headers = {"User-Agent": user_agent, **headers, **auth_headers(auth)}
        self._secrets = secret_values(auth)
        self.target = f"{method} {display_url(url)}"

    def close(self) -> None:
        self._pool.clear()

    def scrub(self, text: str) -> str:
        """``text`` with every form of the auth secrets replaced by a marker."""
        return scrub(text, self._secrets)

    def call(
        self, body: bytes, headers: Mapping[str, str], age_from_micros: int | None
    ) -> CallResult:
        """Send ``body`` with retries; the answer's body once a 2xx arrives, else why not.

        ``age_from_micros`` (epoch microseconds) is when the event's age is measured from.
        """
        deadline = None
        max_age = self._retry.max_event_age_seconds
        if age_from_micros is not None and max_age is not None:
            deadline = age_from_micros / 1e6 + max_age
        attempts = 0
        outcome: Outcome | None = None
        while True:
            if deadline is not None and time.time() > deadline:
                return self._too_old(age_from_micros, attempts, outcome, "")
            self._limiter.wait()
            attempts += 1
            outcome = self.attempt(body, headers)
            if outcome.ok:
                return CallResult(outcome.body)
            if not outcome.retryable or attempts >= self._retry.attempts:
                message = f"{self.target}: {outcome.detail} (after {attempts} attempt(s))"
                return self._failed(outcome.error_class or "", message)
            delay = self._delay(attempts, outcome)
            if deadline is not None and time.time() + delay > deadline:
                return self._too_old(age_from_micros, attempts, outcome, " before the next attempt")
            time.sleep(delay)

    def attempt(self, body: bytes, headers: Mapping[str, str]) -> Outcome:
        """Send once; how it ended."""
        try:
            response = self._origin.urlopen(
                self._method,
                self._path,
                body=body,
                headers={**self._headers, **headers},
                timeout=self._timeout,
                retries=False,
                redirect=False,
                assert_same_host=False,
                preload_content=False,
            )
        except ForbiddenAddress as error:
            return Outcome("ForbiddenAddress", f"refused: {error}")
        except urllib3.exceptions.NewConnectionError as error:
            return Outcome("ConnectionError", f"connection failed: {_reason(error)}", True)
        except urllib3.exceptions.TimeoutError:
            return Outcome("Timeout", self._timeout_text, True)
        except urllib3.exceptions.SSLError as error:
            return Outcome("TLSError", f"TLS failed: {_reason(error)}", True)
        except (urllib3.exceptions.HTTPError, OSError) as error:
            return Outcome("ConnectionError", f"connection failed: {_reason(error)}", True)
        return self._answer(response)

    def _answer(self, response: urllib3.BaseHTTPResponse) -> Outcome:
        """The outcome of an answer: reads what it needs of the body, frees the connection."""
        status = response.status
        success = 200 <= status < 300
        limit = self._answer_bytes if success else _SNIPPET_BYTES
        body = b""
        try:
            if limit is not None:
                body = response.read(limit + 1 if success else limit)
        except urllib3.exceptions.TimeoutError:
            if success:
                return Outcome("Timeout", self._timeout_text, True)
        except (urllib3.exceptions.HTTPError, OSError) as error:
            if success:
                return Outcome("ConnectionError", f"answer cut off: {_reason(error)}", True)
            # a failure's status is what counts; the rest of its body is lost
        finally:
            response.drain_conn()
            response.release_conn()
        if success:
            if limit is not None and len(body) > limit:
                return Outcome("AnswerTooLarge", f"the answer is larger than {limit} bytes")
            return Outcome(body=body)
        detail = f"HTTP {status} {response.reason or ''}".rstrip()
        text = _snippet(body)
        if text:
            detail += f", response: {text}"
        retryable = status in RETRIED_STATUSES or 500 <= status < 600
        retry_after = None
        if status in RETRY_AFTER_STATUSES:
            retry_after = _retry_after(response.headers.get("Retry-After"))
        return Outcome(f"HttpStatus{status}", detail, retryable, retry_after)

    def _delay(self, attempts: int, outcome: Outcome) -> float:
        if outcome.retry_after is not None:
            return min(outcome.retry_after, self._retry.backoff_max_seconds)
        bound = self._retry.backoff_initial_seconds * 2.0 ** min(attempts - 1, 60)
        return random.uniform(0.0, min(bound, self._retry.backoff_max_seconds))

    def _too_old(
        self, age_from_micros: int | None, attempts: int, outcome: Outcome | None, when: str
    ) -> CallResult:
        event_time = _EPOCH + timedelta(microseconds=age_from_micros or 0)
        message = (
            f"{self.target}: event time {event_time.isoformat()} is older than "
            f"max_event_age_seconds={self._retry.max_event_age_seconds or 0:g}{when}"
        )
        if outcome is None:
            message += "; not sent"
        else:
            message += f"; gave up after {attempts} attempt(s), last: {outcome.detail}"
        return self._failed("EventTooOld", message)

    def _failed(self, error_class: str, message: str) -> CallResult:
        return CallResult(None, error_class, self.scrub(message))


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


def auth_headers(auth: HttpAuthConfig) -> dict[str, str]:
    """The header(s) that carry ``auth``'s credentials."""
    if isinstance(auth, BasicAuth):
        return {"Authorization": f"Basic {_basic_credentials(auth)}"}
    if isinstance(auth, BearerAuth):
        return {"Authorization": f"Bearer {auth.token}"}
    if isinstance(auth, ApiKeyAuth):
        return {auth.header: auth.value}
    return {}


def _basic_credentials(auth: BasicAuth) -> str:
    return base64.b64encode(f"{auth.username}:{auth.password}".encode()).decode("ascii")


def secret_values(auth: HttpAuthConfig) -> list[str]:
    """Every form in which an auth secret could show up in a message."""
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
