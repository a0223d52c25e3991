"""CloudEvents 1.0 over HTTP: parse a request into events and validate each one.

Pure functions, no Django and no Kafka. A request is one of (the HTTP protocol binding of
CloudEvents 1.0 and plain JSON):

* ``application/cloudevents+json`` - structured mode, the body is one event;
* ``application/cloudevents-batch+json`` - batched mode, the body is a JSON array of events;
* binary mode - any other content type with ``ce-*`` headers: the attributes are the
  headers (percent-decoded), ``Content-Type`` is ``datacontenttype``, the body is ``data``;
* ``application/json`` (or any ``*/*+json``) without ``ce-*`` headers - plain JSON: an object
  is one event, an array of objects a batch; each is wrapped with a fresh id, the channel's
  source, the configured type and the current time.

Each event comes out in its structured JSON form, ready to be written as is, or with its
errors keyed by attribute (``{"time": ["..."]}``; ``event`` for the event as a whole).
Events are normalized only where the channel's reader needs it: ``time`` is rewritten in UTC
(``2024-06-01T08:00:00Z``), and null-valued attributes are dropped (JSON format: absent).
"""

from __future__ import annotations

import json
import re
import uuid
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any
from urllib.parse import unquote, urlsplit

from pipelines.timestamps import rfc3339_utc

SPECVERSION = "1.0"
STRUCTURED = "application/cloudevents+json"
BATCH = "application/cloudevents-batch+json"
JSON = "application/json"
REQUIRED = ("id", "source", "specversion", "type")
OPTIONAL = ("subject", "time", "datacontenttype", "dataschema")
ATTRIBUTE_NAME = re.compile(r"[a-z0-9]{1,}")
JSON_MEDIA_TYPE = re.compile(r"[a-z0-9.+-]+/([a-z0-9.-]*\+)?json")

Errors = dict[str, list[str]]


class BadRequest(ValueError):
    """The request as a whole cannot be read (no event in it can be judged)."""


class UnsupportedMediaType(BadRequest):
    """The content type is none of those accepted."""


@dataclass
class Candidate:
    """One event of a request: its JSON form when valid, else the reasons it is not."""

    event: dict[str, Any] | None
    errors: Errors = field(default_factory=dict)

    @property
    def valid(self) -> bool:
        return not self.errors


@dataclass(frozen=True)
class PlainDefaults:
    """How plain JSON is wrapped into events."""

    source: str
    type: str


def media_type(content_type: str) -> str:
    """``application/json; charset=utf-8`` -> ``application/json``."""
    return content_type.split(";", 1)[0].strip().lower()


def is_json_media_type(content_type: str | None) -> bool:
    return content_type is not None and bool(JSON_MEDIA_TYPE.fullmatch(media_type(content_type)))


def parse_request(
    content_type: str,
    headers: Mapping[str, str],
    body: bytes,
    defaults: PlainDefaults,
) -> list[Candidate]:
    """The events of one request, each validated; raises :class:`BadRequest` for the rest.

    ``headers`` are the HTTP headers by name (any case). Never raises for one bad event:
    it becomes a :class:`Candidate` with errors.
    """
    kind = media_type(content_type)
    ce_headers = {k.lower(): v for k, v in headers.items() if k.lower().startswith("ce-")}
    if kind == STRUCTURED:
        return [validate_event(_json_body(body))]
    if kind == BATCH:
        items = _json_body(body)
        if not isinstance(items, list):
            raise BadRequest(f"a {BATCH} body must be a JSON array of events")
        return [validate_event(item) for item in _non_empty(items)]
    if ce_headers:
        return [binary_event(ce_headers, content_type or None, body)]
    if is_json_media_type(content_type):
        document = _json_body(body)
        if isinstance(document, list):
            return [wrap_plain(item, defaults) for item in _non_empty(document)]
        if isinstance(document, dict):
            return [wrap_plain(document, defaults)]
        raise BadRequest("a plain JSON body must be an object or an array of objects")
    raise UnsupportedMediaType(
        f"unsupported content type {content_type!r}: send {STRUCTURED}, {BATCH}, a "
        f"binary-mode CloudEvent (ce-* headers) or {JSON}"
    )


def validate_event(document: Any) -> Candidate:
    """Validate a structured-mode event (parsed JSON) against CloudEvents 1.0."""
    if not isinstance(document, dict):
        return Candidate(None, {"event": ["must be a JSON object (a structured CloudEvent)"]})
    event = {name: value for name, value in document.items() if value is not None}
    errors: Errors = {}
    for name in REQUIRED:
        value = event.get(name)
        if name not in event:
            _add(errors, name, "required attribute is missing")
        elif not isinstance(value, str) or not value:
            _add(errors, name, "must be a non-empty string")
    if "specversion" not in errors and event["specversion"] != SPECVERSION:
        _add(errors, "specversion", f"must be {SPECVERSION!r}, got {event['specversion']!r}")
    for name in ("subject", "datacontenttype", "dataschema"):
        if name in event and (not isinstance(event[name], str) or not event[name]):
            _add(errors, name, "must be a non-empty string")
    if isinstance(event.get("datacontenttype"), str) and "/" not in event["datacontenttype"]:
        _add(errors, "datacontenttype", "must be a media type such as application/json")
    if isinstance(event.get("dataschema"), str) and not urlsplit(event["dataschema"]).scheme:
        _add(errors, "dataschema", "must be an absolute URI")
    if "time" in event:
        try:
            event["time"] = rfc3339_utc(event["time"])
        except ValueError as exc:
            _add(errors, "time", str(exc))
    if "data_base64" in event:
        _add(errors, "data_base64", "binary data is not supported; send data as JSON or text")
    for name, value in event.items():
        if name in (*REQUIRED, *OPTIONAL, "data", "data_base64"):
            continue
        if not ATTRIBUTE_NAME.fullmatch(name):
            _add(errors, name, "extension names use only lower-case letters a-z and digits 0-9")
        elif isinstance(value, (dict, list)):
            _add(errors, name, "an extension's value must be a string, number or boolean")
    return Candidate(None if errors else event, errors)


def binary_event(ce_headers: Mapping[str, str], content_type: str | None, body: bytes) -> Candidate:
    """A binary-mode event: attributes from ``ce-*`` headers, data from the body."""
    document: dict[str, Any] = {
        name[3:]: unquote(value) for name, value in ce_headers.items() if name != "ce-"
    }
    document.pop("datacontenttype", None)  # Content-Type carries it in binary mode
    reserved = [name for name in ("data", "data_base64") if name in document]
    if reserved:
        return Candidate(
            None, {name: ["is not an attribute: send the data as the body"] for name in reserved}
        )
    if content_type:
        document["datacontenttype"] = content_type
    if body:
        if content_type is None or is_json_media_type(content_type):
            try:
                document["data"] = json.loads(body)
            except (UnicodeDecodeError, ValueError):
                found = content_type or "absent, taken as JSON"
                return Candidate(None, {"data": [f"is not valid JSON (Content-Type {found})"]})
        else:
            try:
                document["data"] = body.decode("utf-8")
            except UnicodeDecodeError:
                return Candidate(None, {"data": ["binary (non UTF-8) data is not supported"]})
    return validate_event(document)


def wrap_plain(document: Any, defaults: PlainDefaults) -> Candidate:
    """A plain JSON object as the data of a new event (fresh id, the channel's source)."""
    if not isinstance(document, dict):
        return Candidate(None, {"event": ["must be a JSON object"]})
    return Candidate(
        {
            "specversion": SPECVERSION,
            "id": str(uuid.uuid4()),
            "source": defaults.source,
            "type": defaults.type,
            "time": rfc3339_utc(datetime.now(UTC)),
            "datacontenttype": JSON,
            "data": document,
        }
    )


def encode(event: Mapping[str, Any]) -> bytes:
    """An event's structured-mode JSON as written to Kafka (compact UTF-8).

    Raises ``ValueError`` for what strict JSON cannot carry (NaN, infinities, lone
    surrogates), which the channel's reader would refuse.
    """
    return json.dumps(event, ensure_ascii=False, allow_nan=False, separators=(",", ":")).encode()


def _json_body(body: bytes) -> Any:
    try:
        return json.loads(body)
    except (UnicodeDecodeError, ValueError) as exc:
        raise BadRequest(f"the body is not valid JSON: {exc}") from None


def _non_empty(items: list[Any]) -> list[Any]:
    if not items:
        raise BadRequest("the batch is empty")
    return items


def _add(errors: Errors, name: str, message: str) -> None:
    errors.setdefault(name, []).append(message)
