"""HTTP sink against a real HTTP server on 127.0.0.1: bodies, auth, retries, rate limit, errors.

Each test scripts the server's answers (tests/support/http_server.py) and checks what the
server received and what the sink rejected. Backoffs are kept tiny so the file runs quickly.
"""

from __future__ import annotations

import base64
import json
import math
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from pydantic import ValidationError
from pyspark.errors import StreamingQueryException
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from pipelines.cloudevents import EVENT_COLUMNS, FAILURE_TYPE
from pipelines.errors import DEAD_LETTER_COLUMNS, DEAD_LETTER_SCHEMA
from pipelines.sinks import SINKS
from pipelines.sinks.http import (
    HttpSinkRejected,
    Rejection,
    deliver_http,
    display_url,
    write_http,
    write_http_batch,
)
from pipelines.spec.configs import HttpSinkConfig
from pipelines.spec.plugins import get_plugin
from pipelines.spec.secrets import SECRET_MARKER, redact, secret_paths
from tests.support.http_server import Answer, RecordingServer, Request, refused_url

spark_test = pytest.mark.spark


@pytest.fixture(autouse=True)
def allow_the_local_server(monkeypatch: pytest.MonkeyPatch) -> None:
    """The test server listens on 127.0.0.1, which the SSRF guard refuses unless allowed."""
    monkeypatch.setenv("SLUICE_HTTP_SINK_ALLOW", "127.0.0.1")


ROW_SCHEMA = (
    "id string, source string, type string, subject string, time timestamp, "
    "datacontenttype string, extensions_json string, data_json string, origin_topic string, "
    "origin_partition int, origin_offset bigint, origin_timestamp timestamp, "
    "origin_payload string"
)
READ_AT = datetime(2026, 1, 2, 3, 4, 5, 678000, tzinfo=UTC)
_NO_DATA = object()


def as_events(rows: DataFrame) -> DataFrame:
    """Event columns (pipelines.cloudevents.EVENT_COLUMNS) from rows of ``ROW_SCHEMA``."""
    return rows.select(
        "id",
        "source",
        F.lit("1.0").alias("specversion"),
        "type",
        "subject",
        "time",
        "datacontenttype",
        F.lit(None).cast("string").alias("dataschema"),
        F.expr(
            "transform_values(from_json(extensions_json, 'map<string,string>'), "
            "(k, v) -> parse_json(v))"
        ).alias("extensions"),
        F.expr("parse_json(data_json)").alias("data"),
        "origin_topic",
        "origin_partition",
        "origin_offset",
        "origin_timestamp",
        "origin_payload",
        F.lit(None).cast(FAILURE_TYPE).alias("failure"),
    )


def event_row(n: int, **fields: Any) -> dict[str, Any]:
    """Event n, read from Kafka record orders/0/n, timed now (so never too old)."""
    data = fields.pop("data", {"n": n})
    extensions = fields.pop("extensions", {})
    row = {
        "id": f"orders/0/{n}",
        "source": "kafka://orders",
        "type": "com.example.order",
        "subject": None,
        "time": datetime.now(UTC),
        "datacontenttype": "application/json",
        "extensions_json": json.dumps({k: json.dumps(v) for k, v in extensions.items()}),
        "data_json": None if data is _NO_DATA else json.dumps(data),
        "origin_topic": "orders",
        "origin_partition": 0,
        "origin_offset": n,
        "origin_timestamp": READ_AT,
        "origin_payload": json.dumps(data) if data is not _NO_DATA else None,
    }
    return {**row, **fields}


def events(spark: SparkSession, *rows: dict[str, Any]) -> DataFrame:
    names = [part.split()[0] for part in ROW_SCHEMA.split(", ")]
    frame = spark.createDataFrame([tuple(row[name] for name in names) for row in rows], ROW_SCHEMA)
    return as_events(frame)


def sink(url: str, **config: Any) -> HttpSinkConfig:
    """A sink config with tiny backoffs (overridable through ``retry``)."""
    retry = {"backoff_initial_seconds": 0.01, "backoff_max_seconds": 0.05}
    return HttpSinkConfig.model_validate(
        {"url": url, **config, "retry": {**retry, **config.get("retry", {})}}
    )


def rejected(dead_letters: DataFrame) -> list[dict[str, Any]]:
    return [row.asDict() for row in dead_letters.orderBy("event_id").collect()]


def answers(*statuses: int, then: int = 200) -> Any:
    """A script answering ``statuses`` in order, then ``then`` for every later request."""

    def script(request: Request) -> Answer:
        n = request.number - 1
        return Answer(statuses[n] if n < len(statuses) else then, b'{"error": "busy"}')

    return script


# -- catalogue and config ------------------------------------------------------------------


def test_the_plugin_is_registered() -> None:
    assert SINKS["http"] is write_http
    plugin = get_plugin("sink", "http")
    assert plugin.config_model is HttpSinkConfig
    assert plugin.json_schema["properties"]["retry"]["title"] == "Retry policy"


def test_defaults() -> None:
    config = HttpSinkConfig(url="https://api.example.com/events")
    assert (config.method, config.body, config.timeout_seconds) == ("POST", "cloudevents", 10)
    assert config.auth.type == "none" and config.headers == {}
    assert config.rate_limit_per_second is None
    retry = config.retry
    assert (retry.attempts, retry.backoff_initial_seconds, retry.backoff_max_seconds) == (
        5,
        0.5,
        30,
    )
    assert retry.max_event_age_seconds == 86_400
    api_key = HttpSinkConfig.model_validate(
        {"url": "https://h", "auth": {"type": "api_key", "value": "k"}}
    )
    assert api_key.auth.header == "X-API-Key"  # type: ignore[union-attr]


def test_secrets_are_write_only_in_the_schema_and_redacted() -> None:
    schema = get_plugin("sink", "http").json_schema
    defs = schema["$defs"]
    for model, field in [
        ("BasicAuth", "password"),
        ("BearerAuth", "token"),
        ("ApiKeyAuth", "value"),
    ]:
        secret = defs[model]["properties"][field]
        assert (secret["writeOnly"], secret["format"]) == (True, "password"), model
        assert "default" not in secret and "examples" not in secret
    assert "writeOnly" not in defs["BasicAuth"]["properties"]["username"]
    assert schema["properties"]["auth"]["default"] == {"type": "none"}

    spec = {
        "source": {"type": "generator", "config": {}},
        "transforms": [],
        "sink": {
            "type": "http",
            "config": {"url": "https://h/", "auth": {"type": "bearer", "token": "s3cr3t"}},
        },
    }
    assert secret_paths(spec) == ["sink.config.auth.token"]
    assert redact(spec)["sink"]["config"]["auth"] == {"type": "bearer", "token": SECRET_MARKER}


@pytest.mark.parametrize(
    ("config", "loc", "message"),
    [
        ({"url": "ftp://h/x"}, ("url",), "must start with http:// or https://"),
        ({"url": "https:///path"}, ("url",), "must name a host"),
        ({"url": "https://u:p@h/x"}, ("url",), "must not contain credentials"),
        ({"url": "https://h:99999/"}, ("url",), "is not a URL"),
        ({"url": "https://h/a b"}, ("url",), "must not contain spaces"),
        ({"method": "GET"}, ("method",), "'POST', 'PUT' or 'PATCH'"),
        ({"body": "xml"}, ("body",), "'cloudevents', 'data' or 'cloudevents-binary'"),
        ({"timeout_seconds": 0}, ("timeout_seconds",), "greater than 0"),
        ({"rate_limit_per_second": 0}, ("rate_limit_per_second",), "greater than 0"),
        ({"headers": {"Transfer-Encoding": "chunked"}}, ("headers",), "hop-by-hop"),
        ({"headers": {"content-length": "3"}}, ("headers",), "managed by the HTTP client"),
        ({"headers": {"Content-Type": "text/plain"}}, ("headers",), "set from the event"),
        ({"headers": {"ce-id": "x"}}, ("headers",), "set from the event"),
        ({"headers": {"Authorization": "Bearer x"}}, ("headers",), "looks like a secret"),
        ({"headers": {"X-Api-Key": "x"}}, ("headers",), "looks like a secret"),
        ({"headers": {"bad name": "x"}}, ("headers",), "is not an HTTP header name"),
        ({"headers": {"X-A": "line\r\nbreak"}}, ("headers",), "printable ASCII"),
        ({"headers": {"X-A": "1", "x-a": "2"}}, ("headers",), "given twice"),
        ({"auth": {"type": "oauth"}}, ("auth",), "does not match any of the expected tags"),
        ({"auth": {"type": "bearer"}}, ("auth", "bearer", "token"), "Field required"),
        ({"auth": {"type": "bearer", "token": ""}}, ("auth", "bearer", "token"), "at least 1"),
        (
            {"auth": {"type": "basic", "username": "a:b", "password": "p"}},
            ("auth", "basic", "username"),
            "must not contain ':'",
        ),
        (
            {"auth": {"type": "api_key", "header": "Host", "value": "k"}},
            ("auth", "api_key", "header"),
            "managed by the HTTP client",
        ),
        (
            {"auth": {"type": "none", "token": "t"}},
            ("auth", "none", "token"),
            "Extra inputs are not permitted",
        ),
        ({"retry": {"attempts": 0}}, ("retry", "attempts"), "greater than or equal to 1"),
        ({"retry": {"attempts": 51}}, ("retry", "attempts"), "less than or equal to 50"),
        ({"retry": {"backoff_initial_seconds": 0}}, ("retry", "backoff_initial_seconds"), "> 0"),
        (
            {"retry": {"backoff_initial_seconds": 5, "backoff_max_seconds": 1}},
            ("retry",),
            "backoff_max_seconds must be >= backoff_initial_seconds",
        ),
        ({"retry": {"max_event_age_seconds": 0}}, ("retry", "max_event_age_seconds"), ">= 1"),
        ({"retry": {"jitter": True}}, ("retry", "jitter"), "Extra inputs are not permitted"),
        ({"verify": False}, ("verify",), "Extra inputs are not permitted"),
    ],
)
def test_invalid_configs_name_the_field(
    config: dict[str, Any], loc: tuple[Any, ...], message: str
) -> None:
    with pytest.raises(ValidationError) as raised:
        HttpSinkConfig.model_validate({"url": "https://api.example.com/e", **config})
    errors = raised.value.errors()
    assert [error["loc"] for error in errors] == [loc]
    text = errors[0]["msg"]
    shorthand = {"> 0": "greater than 0", ">= 1": "greater than or equal to 1"}
    assert shorthand.get(message, message) in text


def test_the_url_is_required() -> None:
    with pytest.raises(ValidationError) as raised:
        HttpSinkConfig.model_validate({})
    assert [(e["loc"], e["msg"]) for e in raised.value.errors()] == [(("url",), "Field required")]


def test_the_api_key_header_cannot_also_be_a_static_header() -> None:
    with pytest.raises(ValidationError, match="headers must not set 'X-Key'"):
        HttpSinkConfig.model_validate(
            {
                "url": "https://h",
                "headers": {"x-key": "1"},
                "auth": {"type": "api_key", "header": "X-Key", "value": "k"},
            }
        )


def test_messages_show_the_url_without_its_query() -> None:
    assert display_url("https://h:8443/hook?key=abc") == "https://h:8443/hook?…"
    assert display_url("http://h/hook") == "http://h/hook"


# -- bodies, headers, auth -----------------------------------------------------------------


@spark_test
def test_cloudevents_body_is_the_structured_event(spark: SparkSession) -> None:
    batch = events(spark, event_row(0, subject="s-0", extensions={"tenant": "eu"}), event_row(1))
    with RecordingServer() as server:
        dead = deliver_http(batch, sink(f"{server.url}/hook?v=1"))

    assert dead.count() == 0 and dead.schema == DEAD_LETTER_SCHEMA
    by_id = {json.loads(r.body)["id"]: r for r in server.requests}
    assert set(by_id) == {"orders/0/0", "orders/0/1"}
    first = by_id["orders/0/0"]
    assert (first.method, first.path) == ("POST", "/hook?v=1")
    assert first.header("Content-Type") == "application/cloudevents+json; charset=UTF-8"
    assert first.header("User-Agent").startswith("sluice")
    event = json.loads(first.body)
    assert event["data"] == {"n": 0} and event["tenant"] == "eu" and event["subject"] == "s-0"
    assert (event["specversion"], event["type"]) == ("1.0", "com.example.order")
    assert first.header("Authorization") is None


@spark_test
def test_data_body_is_the_data_only(spark: SparkSession) -> None:
    batch = events(
        spark, event_row(0, data={"amount": 12.5, "été": [1]}), event_row(1, data=_NO_DATA)
    )
    with RecordingServer() as server:
        assert deliver_http(batch, sink(server.url, body="data", method="PUT")).count() == 0

    by_body = {r.body: r for r in server.requests}
    with_data = by_body['{"amount":12.5,"été":[1]}'.encode()]
    assert with_data.method == "PUT"
    assert with_data.header("Content-Type") == "application/json"
    no_data = by_body[b""]
    assert no_data.header("Content-Type") is None and no_data.header("Content-Length") == "0"


@spark_test
def test_a_data_body_carries_a_runs_marks_as_headers(spark: SparkSession) -> None:
    # The body is the data alone: a replayed or redriven event's marks would be lost with
    # its extensions, so they go as headers; a live event gets none.
    marks = {"sluicereplay": "run-7", "sluicerun": "replay"}
    batch = events(spark, event_row(0, extensions=marks), event_row(1))
    with RecordingServer() as server:
        assert deliver_http(batch, sink(server.url, body="data")).count() == 0

    by_body = {json.loads(r.body)["n"]: r for r in server.requests}
    assert by_body[0].header("sluicereplay") == "run-7"
    assert by_body[0].header("sluicerun") == "replay"
    assert by_body[0].header("Content-Type") == "application/json"
    assert by_body[1].header("sluicereplay") is None


@spark_test
def test_binary_body_puts_attributes_into_ce_headers(spark: SparkSession) -> None:
    json_event = event_row(
        0,
        subject="Zürich 100%",
        time=datetime(2026, 6, 1, 8, 15, 30, 120000, tzinfo=UTC),
        extensions={"tenant": "eu", "priority": 3},
        datacontenttype=None,
    )
    text_event = event_row(1, data="hello", datacontenttype="text/plain")
    with RecordingServer() as server:
        config = sink(server.url, body="cloudevents-binary", retry={"max_event_age_seconds": 1e12})
        assert deliver_http(events(spark, json_event, text_event), config).count() == 0

    by_id = {r.header("ce-id"): r for r in server.requests}
    first = by_id["orders/0/0"]
    assert first.body == b'{"n":0}'
    assert first.header("Content-Type") == "application/json"
    assert first.header("ce-specversion") == "1.0"
    assert first.header("ce-source") == "kafka://orders"
    assert first.header("ce-type") == "com.example.order"
    assert first.header("ce-time") == "2026-06-01T08:15:30.120Z"
    assert first.header("ce-subject") == "Z%C3%BCrich%20100%25"  # percent-encoded
    assert (first.header("ce-tenant"), first.header("ce-priority")) == ("eu", "3")
    assert first.header("ce-dataschema") is None
    second = by_id["orders/0/1"]
    assert second.body == b"hello" and second.header("Content-Type") == "text/plain"


@spark_test
@pytest.mark.parametrize(
    ("auth", "header", "value"),
    [
        (
            {"type": "basic", "username": "sluice", "password": "pa:ss"},
            "Authorization",
            "Basic " + base64.b64encode(b"sluice:pa:ss").decode(),
        ),
        ({"type": "bearer", "token": "tok-123"}, "Authorization", "Bearer tok-123"),
        ({"type": "api_key", "value": "key-9"}, "X-API-Key", "key-9"),
        (
            {"type": "api_key", "header": "Authorization", "value": "ApiKey k"},
            "Authorization",
            "ApiKey k",
        ),
    ],
    ids=["basic", "bearer", "api_key", "api_key_in_authorization"],
)
def test_auth_and_static_headers_are_sent(
    spark: SparkSession, auth: dict[str, str], header: str, value: str
) -> None:
    with RecordingServer() as server:
        config = sink(server.url, auth=auth, method="PATCH", headers={"X-Team": "payments"})
        assert deliver_http(events(spark, event_row(0)), config).count() == 0

    [request] = server.requests
    assert request.method == "PATCH"
    assert request.header(header) == value
    assert request.header("X-Team") == "payments"


# -- retries and rejections ----------------------------------------------------------------


@spark_test
def test_retries_until_success(spark: SparkSession) -> None:
    with RecordingServer(answers(503, 500)) as server:
        dead = deliver_http(events(spark, event_row(0)), sink(server.url))

    assert dead.count() == 0
    assert len(server.requests) == 3
    assert len({r.body for r in server.requests}) == 1  # the same event each time


@spark_test
def test_a_4xx_is_rejected_at_once_with_its_context(spark: SparkSession) -> None:
    def script(request: Request) -> Answer:
        return Answer(400, b'{"error":\n  "amount must be positive"}')

    with RecordingServer(script) as server:
        batch = events(spark, event_row(7))
        dead = deliver_http(batch, sink(f"{server.url}/orders?key=abc"))
        [row] = rejected(dead)

    assert len(server.requests) == 1
    assert row["event_id"] == "orders/0/7"
    assert json.loads(row["event"])["data"] == {"n": 7}
    assert (row["stage"], row["error_class"]) == ("sink", "HttpStatus400")
    assert row["message"] == (
        f"POST {server.url}/orders?…: HTTP 400 Bad Request, response: "
        '{"error": "amount must be positive"} (after 1 attempt(s))'
    )
    assert "abc" not in row["message"]
    assert (row["origin_topic"], row["origin_partition"], row["origin_offset"]) == ("orders", 0, 7)
    assert row["origin_payload"] == '{"n": 7}'
    [micros] = dead.select(F.unix_micros("origin_timestamp")).first()
    assert micros == int(READ_AT.timestamp() * 1_000_000)
    assert tuple(dead.columns) == DEAD_LETTER_COLUMNS


@spark_test
def test_5xx_until_the_attempts_run_out(spark: SparkSession) -> None:
    with RecordingServer(answers(then=503)) as server:
        dead = deliver_http(events(spark, event_row(0)), sink(server.url, retry={"attempts": 3}))
        [row] = rejected(dead)

    assert len(server.requests) == 3
    assert row["error_class"] == "HttpStatus503"
    assert "HTTP 503 Service Unavailable" in row["message"]
    assert row["message"].endswith("(after 3 attempt(s))")


@spark_test
def test_408_and_429_are_retried(spark: SparkSession) -> None:
    with RecordingServer(answers(408, 429)) as server:
        dead = write_http_batch(events(spark, event_row(0)), sink(server.url), batch_id=4)
        assert dead.count() == 0 and dead.schema == DEAD_LETTER_SCHEMA
    assert len(server.requests) == 3


@spark_test
def test_connection_refused(spark: SparkSession) -> None:
    url = refused_url()
    dead = deliver_http(events(spark, event_row(0)), sink(url, retry={"attempts": 2}))
    [row] = rejected(dead)

    assert row["error_class"] == "ConnectionError"
    assert row["message"].startswith(f"POST {url}: connection failed: ")
    assert "refused" in row["message"].lower()
    assert row["message"].endswith("(after 2 attempt(s))")
    assert " object at 0x" not in row["message"]


@spark_test
def test_timeout(spark: SparkSession) -> None:
    with RecordingServer(lambda request: Answer(delay=1.5)) as server:
        config = sink(server.url, timeout_seconds=0.3, retry={"attempts": 2})
        [row] = rejected(deliver_http(events(spark, event_row(0)), config))

    assert len(server.requests) == 2
    assert row["error_class"] == "Timeout"
    assert row["message"] == f"POST {server.url}: no answer within 0.3 s (after 2 attempt(s))"


@spark_test
def test_retry_after_is_honoured(spark: SparkSession) -> None:
    def script(request: Request) -> Answer:
        if request.number == 1:
            return Answer(429, headers={"Retry-After": "1"})
        return Answer(200)

    with RecordingServer(script) as server:
        config = sink(server.url, retry={"backoff_max_seconds": 5})
        assert deliver_http(events(spark, event_row(0)), config).count() == 0

    first, second = server.requests
    assert second.at - first.at >= 0.9


@spark_test
def test_retry_after_is_capped_by_the_max_backoff(spark: SparkSession) -> None:
    def script(request: Request) -> Answer:
        if request.number == 1:
            return Answer(503, headers={"Retry-After": "3600"})
        return Answer(200)

    with RecordingServer(script) as server:
        assert deliver_http(events(spark, event_row(0)), sink(server.url)).count() == 0
    assert len(server.requests) == 2


@spark_test
def test_too_old_events_are_not_sent(spark: SparkSession) -> None:
    two_days_ago = datetime.now(UTC) - timedelta(days=2)
    by_time = event_row(0, time=two_days_ago)
    by_read_time = event_row(1, time=None, origin_timestamp=two_days_ago)
    with RecordingServer() as server:
        dead = deliver_http(events(spark, by_time, by_read_time), sink(server.url))
        rows = rejected(dead)

    assert server.requests == []
    assert [row["error_class"] for row in rows] == ["EventTooOld", "EventTooOld"]
    assert "older than max_event_age_seconds=86400; not sent" in rows[0]["message"]


@spark_test
def test_an_event_is_not_retried_past_its_max_age(spark: SparkSession) -> None:
    def script(request: Request) -> Answer:
        return Answer(503, b"down", headers={"Retry-After": "3"})

    with RecordingServer(script) as server:
        config = sink(server.url, retry={"backoff_max_seconds": 5, "max_event_age_seconds": 2})
        [row] = rejected(deliver_http(events(spark, event_row(0)), config))

    assert len(server.requests) == 1
    assert row["error_class"] == "EventTooOld"
    assert "before the next attempt; gave up after 1 attempt(s), last: HTTP 503" in row["message"]


@spark_test
def test_secrets_never_reach_messages(spark: SparkSession) -> None:
    def echo(request: Request) -> Answer:
        return Answer(401, f"bad credentials: {request.header('Authorization')}".encode())

    basic = {"type": "basic", "username": "u", "password": "hunter2"}
    for auth, secret in [({"type": "bearer", "token": "tok-XYZ"}, "tok-XYZ"), (basic, "hunter2")]:
        with RecordingServer(echo) as server:
            [row] = rejected(deliver_http(events(spark, event_row(0)), sink(server.url, auth=auth)))
        assert row["error_class"] == "HttpStatus401"
        assert secret not in row["message"]
        assert base64.b64encode(b"u:hunter2").decode() not in row["message"]
        assert SECRET_MARKER in row["message"]


@spark_test
def test_rejections_do_not_recompute_the_events(spark: SparkSession) -> None:
    with RecordingServer(answers(then=400)) as server:
        dead = deliver_http(events(spark, event_row(0), event_row(1)), sink(server.url))
        sent = len(server.requests)
        assert dead.count() == 2 and dead.count() == 2
        assert rejected(dead)[0]["event_id"] == "orders/0/0"
        assert len(server.requests) == sent == 2


@spark_test
def test_the_rate_limit_spaces_requests(spark: SparkSession) -> None:
    """10/s split over 2 partitions: each partition's limiter starts a request every 0.2 s at
    most (its exact spacing, on a clock moved by hand: test_http_rate_limit.py). Measured
    where load cannot blur it: a request arrives after its limiter let it go, a partition's
    k-th request went at least (k - 1) * 0.2 s after the sink began, and among the first j
    arrivals one partition sent at least ⌈j / 2⌉. The limiter's clock and the server's are
    the machine's one monotonic clock; a busy machine only makes requests later."""
    batch = events(spark, *(event_row(n) for n in range(20))).repartition(2)
    with RecordingServer() as server:
        began = time.monotonic()
        assert deliver_http(batch, sink(server.url, rate_limit_per_second=10)).count() == 0

    arrivals = sorted(request.at - began for request in server.requests)
    assert len(arrivals) == 20
    earliest = [(math.ceil(j / 2) - 1) * 0.2 - 1e-6 for j in range(1, 21)]
    assert all(at >= bound for at, bound in zip(arrivals, earliest, strict=True)), arrivals


# -- the streaming writer ------------------------------------------------------------------


def _write_event_files(directory: Path, rows: list[dict[str, Any]]) -> None:
    directory.mkdir(parents=True)
    lines = []
    for row in rows:
        line = dict(row)
        for name in ("time", "origin_timestamp"):
            line[name] = line[name].isoformat() if line[name] is not None else None
        lines.append(json.dumps(line))
    (directory / "events.json").write_text("\n".join(lines) + "\n")


def _run(spark: SparkSession, tmp_path: Path, config: HttpSinkConfig, name: str) -> None:
    stream = spark.readStream.schema(ROW_SCHEMA).json(str(tmp_path / "in"))
    writer = write_http(as_events(stream), config)
    query = writer.option("checkpointLocation", str(tmp_path / name)).trigger(availableNow=True)
    started = query.start()
    try:
        started.awaitTermination(60)
    finally:
        started.stop()


@spark_test
def test_write_http_delivers_a_stream(spark: SparkSession, tmp_path: Path) -> None:
    _write_event_files(tmp_path / "in", [event_row(0), event_row(1)])
    with RecordingServer() as server:
        _run(spark, tmp_path, sink(server.url, body="data"), "ok")

    assert sorted(r.body for r in server.requests) == [b'{"n":0}', b'{"n":1}']


@spark_test
def test_write_http_fails_the_query_naming_the_first_rejected_event(
    spark: SparkSession, tmp_path: Path
) -> None:
    _write_event_files(tmp_path / "in", [event_row(3)])
    with (
        RecordingServer(answers(then=400)) as server,
        pytest.raises(StreamingQueryException) as raised,
    ):
        _run(spark, tmp_path, sink(server.url), "failing")

    expected = (
        f"http sink: 1 event(s) rejected; first: POST {server.url}: HTTP 400 Bad Request, "
        'response: {"error": "busy"} (after 1 attempt(s)) '
        "(event orders/0/3, Kafka record topic=orders partition=0 offset=3)"
    )
    assert expected in str(raised.value)


def test_the_rejection_error_without_a_kafka_origin() -> None:
    rejection = Rejection("e-1", "{}", "Timeout", "POST http://h: no answer", *([None] * 5))
    error = HttpSinkRejected([rejection, rejection])
    assert (
        str(error) == "http sink: 2 event(s) rejected; first: POST http://h: no answer (event e-1)"
    )


@spark_test
def test_event_columns_match_the_event_schema(spark: SparkSession) -> None:
    assert tuple(events(spark, event_row(0)).columns) == EVENT_COLUMNS
