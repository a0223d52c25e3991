"""CloudEvents 1.0 validation of the HTTP ingestion, attribute by attribute."""

from __future__ import annotations

import pytest

from console.selectors.cloudevents import (
    BadRequest,
    PlainDefaults,
    UnsupportedMediaType,
    parse_request,
    rfc3339_utc,
    validate_event,
)

DEFAULTS = PlainDefaults(source="/s", type="t")
VALID = {"specversion": "1.0", "id": "1", "source": "/s", "type": "t"}


@pytest.mark.parametrize(
    ("text", "utc"),
    [
        ("2024-06-01T08:00:00Z", "2024-06-01T08:00:00Z"),
        ("2024-06-01t10:30:00+02:30", "2024-06-01T08:00:00Z"),
        ("2024-06-01T08:00:00.5z", "2024-06-01T08:00:00.5Z"),
        ("2024-06-01T08:00:00.123456789-00:00", "2024-06-01T08:00:00.123456Z"),
        ("2024-12-31T23:30:00-01:00", "2025-01-01T00:30:00Z"),
    ],
)
def test_times_are_rfc3339_rewritten_in_utc(text, utc):
    assert rfc3339_utc(text) == utc


@pytest.mark.parametrize(
    "text",
    ["2024-06-01T08:00:00", "2024-06-01", "2024-13-01T08:00:00Z", "20240601T080000Z", 1717228800],
)
def test_times_that_are_not_rfc3339_are_refused(text):
    candidate = validate_event({**VALID, "time": text})
    assert list(candidate.errors) == ["time"]


@pytest.mark.parametrize(
    ("extra", "bad"),
    [
        ({"specversion": "0.3"}, "specversion"),
        ({"type": 3}, "type"),
        ({"source": ""}, "source"),
        ({"subject": ""}, "subject"),
        ({"dataschema": "relative/path"}, "dataschema"),
        ({"datacontenttype": "json"}, "datacontenttype"),
        ({"traceParent": "x"}, "traceParent"),
        ({"my_ext": "x"}, "my_ext"),
        ({"nested": {"a": 1}}, "nested"),
    ],
)
def test_each_bad_attribute_is_named(extra, bad):
    assert list(validate_event({**VALID, **extra}).errors) == [bad]


def test_valid_events_keep_their_extensions_and_drop_null_attributes():
    candidate = validate_event({**VALID, "subject": None, "seq": 4, "ok": True, "data": None})
    assert candidate.valid
    assert candidate.event == {**VALID, "seq": 4, "ok": True}


def test_structured_mode_wins_over_ce_headers_and_batches_must_be_arrays():
    body = b'{"specversion": "1.0", "id": "1", "source": "/s", "type": "t"}'
    [candidate] = parse_request("application/cloudevents+json", {"ce-id": "2"}, body, DEFAULTS)
    assert candidate.event["id"] == "1"
    with pytest.raises(BadRequest, match="JSON array"):
        parse_request("application/cloudevents-batch+json", {}, body, DEFAULTS)
    with pytest.raises(UnsupportedMediaType):
        parse_request("application/xml", {}, b"<a/>", DEFAULTS)


def test_binary_mode_refuses_bad_json_and_non_utf8_data():
    headers = {"ce-specversion": "1.0", "ce-id": "1", "ce-source": "/s", "ce-type": "t"}
    [bad_json] = parse_request("application/json", headers, b"{nope", DEFAULTS)
    [binary] = parse_request("application/octet-stream", headers, b"\xff\xfe", DEFAULTS)
    [empty] = parse_request("", headers, b"", DEFAULTS)
    assert list(bad_json.errors) == ["data"]
    assert list(binary.errors) == ["data"]
    assert empty.valid and "data" not in empty.event and "datacontenttype" not in empty.event
    [header_data] = parse_request("text/plain", {**headers, "ce-data": "x"}, b"y", DEFAULTS)
    assert list(header_data.errors) == ["data"]
