"""Config model of the HTTP sink: an EventBridge-style API destination.

Each event becomes one HTTP request to ``url``; how it is authenticated, what the body holds,
how fast requests go and how failures are retried are set here. Secrets (the basic-auth
password, the bearer token, the API key) are :data:`~pipelines.spec.configs.base.Secret`:
write-only in the catalogue and redacted by the console.
"""

from __future__ import annotations

import ipaddress
import re
from collections.abc import Mapping
from typing import Annotated, Any, ClassVar, Literal
from urllib.parse import urlsplit

from pydantic import ConfigDict, Field, field_validator, model_validator

from pipelines.net import ALLOW_ENV, ENRICH_ALLOW_ENV, HTTP_SINK, Outbound, check_url_host
from pipelines.spec.configs.base import Secret, StageConfig

HttpMethod = Literal["POST", "PUT", "PATCH"]
BodyMode = Literal["cloudevents", "data", "cloudevents-binary"]

_TOKEN = re.compile(r"[!#$%&'*+.^_`|~0-9A-Za-z-]+")
"""An HTTP field name (RFC 9110 token)."""
_FIELD_VALUE = re.compile(r"[\x20-\x7e\t]*")
"""A header value this sink accepts: printable ASCII, spaces and tabs (no CR/LF)."""
_CONNECTION_HEADERS = frozenset(
    {
        "connection",
        "keep-alive",
        "proxy-authenticate",
        "proxy-authorization",
        "proxy-connection",
        "te",
        "trailer",
        "transfer-encoding",
        "upgrade",
        "content-length",
        "host",
    }
)
"""Hop-by-hop and framing headers: the HTTP client sets them, per connection and request."""
_BODY_HEADERS = frozenset({"content-type"})
_SECRET_HEADER = re.compile(r"authorization|cookie|api[-_]?key|token|secret|passw", re.IGNORECASE)


DEFAULT_PORTS = {"http": 80, "https": 443}


def canonical_host(host: str) -> str:
    """``host`` as a secret binding compares it: lower case, no trailing dot, an address
    literal in its canonical form (``[0:0::1]`` and ``[::1]`` are one host).

    Two spellings of one address that are not literals (``2130706433``, a name that resolves
    to it) stay different: a binding that changes for no reason only asks for the secret
    again, never sends it elsewhere."""
    host = host.strip("[]").lower().rstrip(".")
    try:
        return str(ipaddress.ip_address(host))
    except ValueError:
        return host


def url_origin(url: str) -> dict[str, Any]:
    """The origin of an ``http(s)`` URL, as a secret binding: ``url scheme``, ``url host``
    (:func:`canonical_host`) and ``url port`` (the scheme's default filled in).

    The path and query are left out: a secret sent to an origin may go to any path of it,
    as a browser's origin and an EventBridge connection to an API destination's endpoint
    have it. Raises ``ValueError`` (or ``TypeError``) for what is not a URL.
    """
    parts = urlsplit(url)
    scheme = parts.scheme.lower()
    return {
        "url scheme": scheme,
        "url host": canonical_host(parts.hostname or ""),
        "url port": parts.port or DEFAULT_PORTS.get(scheme),
    }


def check_header_name(name: str) -> str:
    """Return ``name`` if the sink may send a header of that name, else raise ``ValueError``."""
    if not _TOKEN.fullmatch(name):
        raise ValueError(
            f"{name!r} is not an HTTP header name (letters, digits, '-' and !#$%&'*+.^_`|~)"
        )
    lowered = name.lower()
    if lowered in _CONNECTION_HEADERS:
        raise ValueError(f"{name!r} is managed by the HTTP client (hop-by-hop or framing header)")
    if lowered in _BODY_HEADERS or lowered.startswith("ce-"):
        raise ValueError(f"{name!r} is set from the event (see body)")
    return name


def _check_header_value(name: str, value: str) -> None:
    if not _FIELD_VALUE.fullmatch(value):
        raise ValueError(f"header {name!r}: the value must be printable ASCII (no line breaks)")


class NoAuth(StageConfig):
    """Send no credentials."""

    model_config = ConfigDict(title="None")

    type: Literal["none"] = Field(title="Type", description="No authentication.")


class BasicAuth(StageConfig):
    """HTTP basic authentication (``Authorization: Basic ...``)."""

    model_config = ConfigDict(title="Basic")

    type: Literal["basic"] = Field(title="Type", description="HTTP basic authentication.")
    username: str = Field(
        title="Username", description="The user name (no ':').", examples=["sluice"]
    )
    password: Secret = Field(title="Password", description="The password (write-only).")

    @field_validator("username")
    @classmethod
    def _check_username(cls, value: str) -> str:
        if not value or ":" in value:
            raise ValueError("must be non-empty and must not contain ':'")
        _check_header_value("Authorization", value)
        return value

    @field_validator("password")
    @classmethod
    def _check_password(cls, value: str) -> str:
        if "\r" in value or "\n" in value:
            raise ValueError("must not contain line breaks")
        return value


class BearerAuth(StageConfig):
    """A bearer token (``Authorization: Bearer <token>``), e.g. an OAuth access token."""

    model_config = ConfigDict(title="Bearer token")

    type: Literal["bearer"] = Field(title="Type", description="Bearer token authentication.")
    token: Secret = Field(title="Token", description="The token (write-only).", min_length=1)

    @field_validator("token")
    @classmethod
    def _check_token(cls, value: str) -> str:
        if not _FIELD_VALUE.fullmatch(value):
            raise ValueError("must be printable ASCII (no line breaks)")
        return value


class ApiKeyAuth(StageConfig):
    """An API key sent in a header of its own."""

    model_config = ConfigDict(title="API key")

    type: Literal["api_key"] = Field(title="Type", description="API key in a header.")
    header: str = Field(
        "X-API-Key",
        title="Header",
        description="The header that carries the key (Authorization is allowed).",
        examples=["X-API-Key", "Authorization"],
    )
    value: Secret = Field(title="Key", description="The API key (write-only).", min_length=1)

    @field_validator("header")
    @classmethod
    def _check_header(cls, value: str) -> str:
        return check_header_name(value)

    @field_validator("value")
    @classmethod
    def _check_value(cls, value: str) -> str:
        if not _FIELD_VALUE.fullmatch(value):
            raise ValueError("must be printable ASCII (no line breaks)")
        return value


HttpAuthConfig = NoAuth | BasicAuth | BearerAuth | ApiKeyAuth
HttpAuth = Annotated[HttpAuthConfig, Field(discriminator="type")]


class HttpRetry(StageConfig):
    """How failed requests are retried (exponential backoff with full jitter)."""

    model_config = ConfigDict(title="Retry policy")

    attempts: int = Field(
        5,
        ge=1,
        le=50,
        title="Attempts",
        description=(
            "Tries per event, the first included. Connection errors, timeouts, 408, 429 and "
            "5xx are retried; other 4xx are rejected at once."
        ),
    )
    backoff_initial_seconds: float = Field(
        0.5,
        gt=0,
        le=3600,
        title="Initial backoff (s)",
        description=(
            "The wait before the 2nd attempt is a random time up to this; the bound doubles "
            "with each further attempt (full jitter)."
        ),
    )
    backoff_max_seconds: float = Field(
        30,
        gt=0,
        le=3600,
        title="Max backoff (s)",
        description="Upper bound of one wait, also of a server's Retry-After (429, 503).",
    )
    max_event_age_seconds: float | None = Field(
        86_400,
        ge=1,
        title="Max event age (s)",
        description=(
            "An event older than this (by its time, else the time it was read) is not sent, "
            "or no longer retried, and is rejected as EventTooOld. Empty: no limit."
        ),
    )
    backoff_ms: int | None = Field(
        None,
        ge=1,
        le=3_600_000,
        title="Initial backoff (ms)",
        description=(
            "The initial backoff in milliseconds, as every sink's retry policy spells it; "
            "when set, it stands for backoff_initial_seconds."
        ),
    )
    max_backoff_ms: int | None = Field(
        None,
        ge=1,
        le=3_600_000,
        title="Max backoff (ms)",
        description=(
            "The max backoff in milliseconds, as every sink's retry policy spells it; when "
            "set, it stands for backoff_max_seconds."
        ),
    )

    @model_validator(mode="after")
    def _check_backoff(self) -> HttpRetry:
        # The spelling every sink shares (milliseconds) stands for the seconds fields; both
        # given with different values is a contradiction, not a choice.
        for millis, seconds in (
            ("backoff_ms", "backoff_initial_seconds"),
            ("max_backoff_ms", "backoff_max_seconds"),
        ):
            value = getattr(self, millis)
            if value is None:
                continue
            if seconds in self.model_fields_set and getattr(self, seconds) != value / 1000:
                raise ValueError(f"{millis} and {seconds} disagree: give one of them")
            object.__setattr__(self, seconds, value / 1000)
        if self.backoff_max_seconds < self.backoff_initial_seconds:
            raise ValueError("backoff_max_seconds must be >= backoff_initial_seconds")
        return self


def _title_retry(schema: dict[str, Any]) -> None:
    """Give the ``retry`` property a title (pydantic leaves it off a field that is a $ref)."""
    schema["properties"]["retry"]["title"] = "Retry policy"


class HttpEndpointConfig(StageConfig):
    """What every stage that calls an HTTP endpoint has (the ``http`` sink, ``enrich``): its
    URL (through the address guard of :attr:`outbound`), method, static headers and auth."""

    outbound: ClassVar[Outbound] = HTTP_SINK
    """Whose allow-list the URL's host is checked against."""

    url: str = Field(
        title="URL",
        description=(
            "The endpoint, http:// or https://. Put no credentials in it (use auth); use "
            "https when auth is set. Loopback, link-local, private and other non-public "
            f"addresses are refused unless the stage's allow-list names them ({ALLOW_ENV} "
            f"for the http sink, {ENRICH_ALLOW_ENV} for enrich)."
        ),
        examples=["https://api.example.com/events"],
    )
    method: HttpMethod = Field("POST", title="Method", description="POST, PUT or PATCH.")
    headers: dict[str, str] = Field(
        default_factory=dict,
        title="Headers",
        description=(
            "Extra static headers sent with every request. Not: hop-by-hop headers, "
            "Content-Length, Host, Content-Type or ce-* (set by the stage), nor secrets "
            "such as Authorization (use auth)."
        ),
        examples=[{"X-Team": "payments"}],
    )
    auth: HttpAuth = Field(
        NoAuth(type="none"),
        title="Authentication",
        description="none, basic (username and password), bearer (token) or api_key.",
    )

    @field_validator("url")
    @classmethod
    def _check_url(cls, value: str) -> str:
        return check_http_url(value, cls.outbound)

    @field_validator("headers")
    @classmethod
    def _check_headers(cls, value: dict[str, str]) -> dict[str, str]:
        return check_static_headers(value)

    @model_validator(mode="after")
    def _check_api_key_header(self) -> HttpEndpointConfig:
        if isinstance(self.auth, ApiKeyAuth):
            header = self.auth.header.lower()
            if any(name.lower() == header for name in self.headers):
                raise ValueError(f"headers must not set {self.auth.header!r}: auth sets it")
        return self

    @classmethod
    def secret_binding(cls, config: Mapping[str, Any]) -> dict[str, Any]:
        """What the auth secret authenticates to (:mod:`pipelines.spec.secrets`): the URL's
        origin (:func:`url_origin`; another path on it keeps the secret), the auth type and
        the basic-auth user name (another user with the old password is another login)."""
        auth = config.get("auth") or {}
        return {
            **url_origin(config["url"]),
            "auth.type": auth.get("type", "none"),
            "auth.username": auth.get("username"),
        }


class HttpSinkConfig(HttpEndpointConfig):
    """Send each event as an HTTP request to an API (an EventBridge-style API destination)."""

    model_config = ConfigDict(title="HTTP sink", json_schema_extra=_title_retry)

    body: BodyMode = Field(
        "cloudevents",
        title="Body",
        description=(
            "cloudevents: the whole event as structured CloudEvents JSON (Content-Type "
            "application/cloudevents+json; charset=UTF-8). data: only the event's data as "
            "JSON (application/json). cloudevents-binary: the data as the body, with "
            "Content-Type from datacontenttype and the attributes and extensions in ce-* "
            "headers (CloudEvents HTTP binding, binary mode)."
        ),
    )
    timeout_seconds: float = Field(
        10,
        gt=0,
        le=300,
        title="Timeout (s)",
        description="Upper bound of one request: connecting, sending and reading the answer.",
    )
    rate_limit_per_second: float | None = Field(
        None,
        gt=0,
        title="Rate limit (requests/s)",
        description=(
            "Upper bound on requests per second for the whole sink, retries included; empty "
            "means unlimited. Spark sends the partitions of a micro-batch in parallel, so each "
            "partition gets an equal share of this rate."
        ),
        examples=[50],
    )
    retry: HttpRetry = Field(
        HttpRetry(),
        title="Retry policy",
        description="Attempts, backoff and the maximum age of an event.",
    )


# -- shared checks -------------------------------------------------------------------------


def check_http_url(value: str, outbound: Outbound = HTTP_SINK) -> str:
    """Return ``value`` if it is an ``http(s)`` URL a stage may call, else raise ``ValueError``:
    a host, no credentials, no fragment, no spaces, and no host that ``outbound``'s address
    guard refuses without DNS (:func:`pipelines.net.check_url_host`)."""
    try:
        parts = urlsplit(value)
        parts.port  # noqa: B018 - raises ValueError for a port out of range
    except ValueError as error:
        raise ValueError(f"is not a URL: {error}") from None
    if parts.scheme not in ("http", "https"):
        raise ValueError("must start with http:// or https://")
    if not parts.hostname:
        raise ValueError("must name a host: https://host[:port]/path")
    if parts.username is not None or parts.password is not None:
        raise ValueError("must not contain credentials: use auth")
    if parts.fragment or "#" in value:
        raise ValueError("must not contain a #fragment")
    if any(character.isspace() for character in value):
        raise ValueError("must not contain spaces (percent-encode them)")
    check_url_host(parts.hostname, outbound=outbound)
    return value


def check_static_headers(value: dict[str, str]) -> dict[str, str]:
    """Return ``value`` if every header may be sent as a static header, else raise
    ``ValueError``: a legal name not managed by the client or the body, no secret-looking
    name (secrets go in ``auth``), no name twice, printable values."""
    seen: set[str] = set()
    for name, header_value in value.items():
        check_header_name(name)
        if _SECRET_HEADER.search(name):
            raise ValueError(f"{name!r} looks like a secret: use auth (api_key)")
        if name.lower() in seen:
            raise ValueError(f"{name!r} is given twice (header names ignore case)")
        seen.add(name.lower())
        _check_header_value(name, header_value)
    return value
