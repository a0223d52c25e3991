"""The enrich transform without Spark: its config (located errors, catalogue, secrets, modes)
and its calls (:class:`pipelines.transforms.enrich.Enricher`) against a real HTTP server on
127.0.0.1: per event, per batch, cache, concurrency, timeouts, retries, address guard, auth.
"""

from __future__ import annotations

import json
import threading
import time
from typing import Any

import pytest

from pipelines.net import ENRICH_ALLOW_ENV, HTTP_ENRICH, AllowList, allow_list
from pipelines.spec import SpecError, validate_spec
from pipelines.spec.configs.enrich import EnrichConfig
from pipelines.spec.plugins import get_plugin
from pipelines.spec.secrets import SECRET_MARKER, redact, secret_binding, secret_paths
from pipelines.transforms import TRANSFORMS
from pipelines.transforms.enrich import AnswerCache, Enricher, Enrichment, enrich_events
from tests.support.http_server import Answer, RecordingServer, Request, refused_url

TOKEN = "tok-3c1e9f"


@pytest.fixture(autouse=True)
def allow_the_local_server(monkeypatch: pytest.MonkeyPatch) -> None:
    """The test server listens on 127.0.0.1, which the address guard refuses unless allowed."""
    monkeypatch.setenv(ENRICH_ALLOW_ENV, "127.0.0.1")


def config(url: str, **fields: Any) -> EnrichConfig:
    """A config with tiny backoffs (overridable through ``retry``)."""
    retry = {"backoff_initial_seconds": 0.01, "backoff_max_seconds": 0.05}
    return EnrichConfig.model_validate(
        {"url": url, **fields, "retry": {**retry, **fields.get("retry", {})}}
    )


def enricher(url: str, **fields: Any) -> Enricher:
    return Enricher(config(url, **fields), allow_list(HTTP_ENRICH))


def customers(request: Request) -> Answer:
    """Answers a customer id (a JSON string) with a customer, or an array of ids with an
    array of customers."""
    asked = json.loads(request.body)
    if isinstance(asked, list):
        return Answer(200, json.dumps([{"name": f"N-{i}"} for i in asked]).encode())
    return Answer(200, json.dumps({"name": f"N-{asked}"}).encode())


def run(enrich: Enricher, inputs: list[str | None]) -> list[Enrichment | None]:
    try:
        return enrich.enrich(inputs, [None] * len(inputs), [f"e-{i}" for i in range(len(inputs))])
    finally:
        enrich.close()


# -- config -----------------------------------------------------------------------------


def spec_with(stage_config: dict[str, Any], **spec: Any) -> dict[str, Any]:
    return {
        "source": {"type": "kafka", "config": {"bootstrap_servers": "h:1", "topics": ["in"]}},
        "transforms": [{"type": "enrich", "config": stage_config}],
        "sink": {"type": "kafka", "config": {"bootstrap_servers": "h:1", "topic": "out"}},
        **spec,
    }


def spec_errors(data: dict[str, Any]) -> dict[str, list[str]]:
    with pytest.raises(SpecError) as raised:
        validate_spec(data)
    return raised.value.errors


def test_the_plugin_is_registered() -> None:
    assert TRANSFORMS["enrich"] is enrich_events
    plugin = get_plugin("transform", "enrich")
    assert plugin.config_model is EnrichConfig
    properties = plugin.json_schema["properties"]
    assert properties["cache"]["title"] == "Cache"
    assert properties["retry"]["title"] == "Retry policy"


def test_defaults() -> None:
    parsed = EnrichConfig(url="http://127.0.0.1:9/x")
    assert (parsed.input, parsed.into, parsed.batch_size, parsed.method) == (
        "$.data",
        "data",
        1,
        "POST",
    )
    assert parsed.cache.ttl_seconds == 0 and parsed.retry.attempts == 5  # the http sink's


@pytest.mark.parametrize(
    ("field", "value", "location", "message"),
    [
        ("into", "customer", "into", "must be data (merge the answer into it) or a path"),
        ("into", "subject", "into", "must be data"),
        ("input", "data.id", "input", "is not a JSONPath"),
        ("input", "$.data[", "input", "not a supported JSONPath"),
        ("batch_size", 0, "batch_size", "greater than or equal to 1"),
        ("batch_size", 501, "batch_size", "less than or equal to 500"),
        ("max_concurrency", 65, "max_concurrency", "less than or equal to 64"),
        ("read_timeout_seconds", 0, "read_timeout_seconds", "greater than 0"),
        ("cache", {"ttl_seconds": -1}, "cache.ttl_seconds", "greater than or equal to 0"),
        ("cache", {"max_entries": 0}, "cache.max_entries", "greater than or equal to 1"),
        ("retry", {"attempts": 0}, "retry.attempts", "greater than or equal to 1"),
        ("method", "DELETE", "method", "'POST', 'PUT' or 'PATCH'"),
        ("headers", {"Authorization": "x"}, "headers", "looks like a secret: use auth"),
        ("headers", {"Content-Type": "text/plain"}, "headers", "is set from the event"),
        ("url", "ftp://example.com/x", "url", "must start with http:// or https://"),
        ("url", "https://u:p@example.com/x", "url", "must not contain credentials"),
        ("unknown", 1, "unknown", "unknown field; expected one of: url"),
    ],
)
def test_invalid_configs_are_answered_at_the_field(
    field: str, value: Any, location: str, message: str
) -> None:
    stage = {"url": "https://api.example.com/lookup", field: value}
    errors = spec_errors(spec_with(stage))
    [messages] = errors.values()
    assert list(errors) == [f"transforms[0].config.{location}"]
    assert message in " ".join(messages), messages


def test_a_forbidden_address_is_refused_when_the_spec_is_saved(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delenv(ENRICH_ALLOW_ENV)
    monkeypatch.setenv("SLUICE_HTTP_SINK_ALLOW", "127.0.0.1")  # the sink's list is not ours
    for url in ("http://127.0.0.1:8080/x", "http://169.254.169.254/latest/", "http://localhost/"):
        errors = spec_errors(spec_with({"url": url}))
        [message] = errors["transforms[0].config.url"]
        assert "the enrich transform refuses it unless SLUICE_HTTP_ENRICH_ALLOW" in message


def test_errors_in_a_rule_s_enrich_stage_are_located_in_the_rule() -> None:
    data = spec_with({"url": "https://api.example.com/x"})
    del data["sink"]
    data["rules"] = [
        {
            "name": "vip",
            "transforms": [{"type": "enrich", "config": {"url": "x", "into": "nowhere"}}],
            "sinks": [{"type": "kafka", "config": {"bootstrap_servers": "h:1", "topic": "vip"}}],
        }
    ]
    errors = spec_errors(data)
    stage = "rules[0].transforms[0].config"
    assert set(errors) == {f"{stage}.url", f"{stage}.into"}


def test_real_time_mode_refuses_enrich_with_the_reason() -> None:
    data = spec_with({"url": "https://api.example.com/x"}, runtime={"mode": "real-time"})
    errors = spec_errors(data)
    assert list(errors) == ["transforms[0].type"]
    [message] = errors["transforms[0].type"]
    assert "enrich waits on an HTTP endpoint" in message and "use micro-batch" in message


def test_the_auth_secret_is_write_only_and_bound_to_the_origin() -> None:
    schema = get_plugin("transform", "enrich").json_schema
    assert "writeOnly" in json.dumps(schema)
    stage = {"url": "https://api.example.com/x", "auth": {"type": "bearer", "token": TOKEN}}
    spec = validate_spec(spec_with(stage)).model_dump(mode="json")
    assert secret_paths(spec) == ["transforms[0].config.auth.token"]
    assert redact(spec)["transforms"][0]["config"]["auth"]["token"] == SECRET_MARKER
    moved = dict(stage, url="https://elsewhere.example.com/x")
    assert secret_binding(EnrichConfig, stage) != secret_binding(EnrichConfig, moved)
    other_path = dict(stage, url="https://api.example.com/other")
    assert secret_binding(EnrichConfig, stage) == secret_binding(EnrichConfig, other_path)


# -- calls against a real server -------------------------------------------------------


def test_each_event_is_sent_alone_and_answered_in_order() -> None:
    with RecordingServer(customers) as server:
        results = run(enricher(server.url + "/lookup"), ['"c1"', None, '"c2"'])
    answers = [r.answer if r else None for r in results]
    assert answers == ['{"name":"N-c1"}', None, '{"name":"N-c2"}']
    assert sorted(r.body for r in server.requests) == [b'"c1"', b'"c2"']
    first = server.requests[0]
    assert first.method == "POST" and first.path == "/lookup"
    assert first.header("Content-Type") == "application/json"
    assert first.header("User-Agent") == "sluice-enrich/1"


def test_a_batch_is_one_array_and_its_answer_an_array_in_the_same_order() -> None:
    with RecordingServer(customers) as server:
        inputs = [f'"c{i}"' for i in range(7)]
        results = run(enricher(server.url, batch_size=3), inputs)
    assert [json.loads(r.answer)["name"] for r in results if r and r.answer] == [
        f"N-c{i}" for i in range(7)
    ]
    assert sorted(json.loads(r.body) for r in server.requests) == [
        ["c0", "c1", "c2"],
        ["c3", "c4", "c5"],
        ["c6"],
    ]


def test_a_batch_answer_of_the_wrong_length_fails_every_event_of_it() -> None:
    with RecordingServer(lambda request: Answer(200, b'[{"a": 1}]')) as server:
        results = run(enricher(server.url, batch_size=2), ['"x"', '"y"'])
    assert {(r.error_class, r.answer) for r in results if r} == {("InvalidAnswer", None)}
    assert "expected a JSON array of 2 answers, got an array of 1" in (results[0].message or "")
    assert results[1].message.endswith("(event e-1)")  # type: ignore[union-attr]


def test_the_cache_answers_equal_inputs_once_until_its_ttl_ends() -> None:
    with RecordingServer(customers) as server:
        enrich = enricher(server.url, cache={"ttl_seconds": 1.0, "max_entries": 100})
        try:
            first = enrich.enrich(['"a"', '"b"', '"a"', '"a"'], [None] * 4, ["1", "2", "3", "4"])
            assert len(server.requests) == 2  # a and b, once each
            again = enrich.enrich(['"b"', '"a"'], [None] * 2, ["5", "6"])
            assert len(server.requests) == 2  # both from the cache
            time.sleep(1.1)
            enrich.enrich(['"a"'], [None], ["7"])
            assert len(server.requests) == 3  # expired: asked again
        finally:
            enrich.close()
    assert [r.answer for r in first if r] == [
        '{"name":"N-a"}',
        '{"name":"N-b"}',
        '{"name":"N-a"}',
        '{"name":"N-a"}',
    ]
    assert [r.answer for r in again if r] == ['{"name":"N-b"}', '{"name":"N-a"}']


def test_without_a_cache_every_event_is_sent() -> None:
    with RecordingServer(customers) as server:
        run(enricher(server.url), ['"a"', '"a"', '"a"'])
    assert len(server.requests) == 3


def test_the_cache_is_bounded_least_recently_used_first() -> None:
    cache = AnswerCache(ttl=60, max_entries=2, max_bytes=100)
    cache.put("a", "1")
    cache.put("b", "2")
    assert cache.get("a") == "1"  # a is now the most recently used
    cache.put("c", "3")
    assert (cache.get("a"), cache.get("b"), cache.get("c")) == ("1", None, "3")
    cache.put("big", "x" * 96)  # 99 characters: the others go to make room
    assert len(cache) == 1 and cache.get("big") is not None
    cache.put("huge", "x" * 200)  # larger than the whole cache: not kept
    assert cache.get("huge") is None


def test_all_the_caches_of_a_process_hold_together_to_one_budget(monkeypatch) -> None:
    """Issue 29 (finding 12): 64 configs of 64 MiB could keep about 4 GiB in one Python
    worker, shared by every channel of the driver. Past TOTAL_CACHE_BYTES the least recently
    used cache gives up its oldest answers first."""
    from pipelines.transforms import enrich

    monkeypatch.setattr(enrich, "_caches", enrich.OrderedDict())
    monkeypatch.setattr(enrich, "TOTAL_CACHE_BYTES", 10_000)
    configs = [
        config(f"http://127.0.0.1:9/{n}", cache={"ttl_seconds": 60, "max_entries": 10_000})
        for n in range(8)
    ]
    caches = [enrich.shared_cache(c) for c in configs]
    for n in range(400):  # 8 caches, 50 answers of 100 characters each: 40,000 asked
        caches[n % 8].put(f"k{n:04d}", "x" * 95)
        assert enrich.cached_bytes() <= 10_000
    older, newer = caches[0], caches[1]
    older.put("a-0", "x" * 97)
    for n in range(100):  # newer fills the whole budget: older (and the rest) give way first
        newer.put(f"b-{n:03d}", "x" * 95)
    assert enrich.cached_bytes() <= 10_000
    assert len(newer) == 100 and all(len(c) == 0 for c in caches if c is not newer)
    older.put("a-1", "x" * 97)  # used again: now newer is the least recently used
    assert older.get("a-1") is not None and newer.get("b-000") is None
    assert newer.get("b-099") is not None, "it gave up its oldest answer, not its newest"


def test_requests_in_flight_stay_within_max_concurrency() -> None:
    lock, in_flight, peak = threading.Lock(), [0], [0]

    def slow(request: Request) -> Answer:
        with lock:
            in_flight[0] += 1
            peak[0] = max(peak[0], in_flight[0])
        time.sleep(0.5)
        with lock:
            in_flight[0] -= 1
        return Answer(200, b"{}")

    with RecordingServer(slow) as server:
        started = time.monotonic()
        results = run(enricher(server.url, max_concurrency=3), [f'"{i}"' for i in range(9)])
        elapsed = time.monotonic() - started
    assert all(r and r.answer == "{}" for r in results)
    # at most three at once, and more than one (not nine one after the other): counted, where
    # a busy machine cannot blur it; three rounds of a 0.5 s answer take 1.5 s at least
    assert 2 <= peak[0] <= 3
    assert elapsed >= 1.5


def test_a_slow_answer_times_out_and_fails_after_the_retries() -> None:
    with RecordingServer(lambda request: Answer(200, b"{}", delay=1.0)) as server:
        enrich = enricher(server.url, read_timeout_seconds=0.2, retry={"attempts": 2})
        [result] = run(enrich, ['"a"'])
    assert result is not None and result.error_class == "Timeout"
    assert "no answer within the timeouts (connect 3 s, read 0.2 s)" in (result.message or "")
    assert "(after 2 attempt(s))" in (result.message or "")
    assert len(server.requests) == 2


def test_server_errors_are_retried_until_an_answer_comes() -> None:
    statuses = iter([503, 500, 429])

    def flaky(request: Request) -> Answer:
        status = next(statuses, 200)
        return Answer(status, b'{"name": "late"}' if status == 200 else b"busy")

    with RecordingServer(flaky) as server:
        [result] = run(enricher(server.url, retry={"attempts": 4}), ['"a"'])
    assert result == Enrichment(answer='{"name":"late"}')
    assert len(server.requests) == 4


def test_retries_that_never_succeed_fail_the_event_with_its_context() -> None:
    with RecordingServer(lambda request: Answer(500, b"database down")) as server:
        [result] = run(enricher(server.url + "/lookup?key=k", retry={"attempts": 3}), ['"a"'])
    assert result is not None and result.error_class == "HttpStatus500"
    assert result.message == (
        f"enrich: POST {server.url}/lookup?…: HTTP 500 Internal Server Error, response: "
        "database down (after 3 attempt(s)) (event e-0)"
    )
    assert len(server.requests) == 3


def test_a_client_error_is_not_retried() -> None:
    with RecordingServer(lambda request: Answer(404)) as server:
        [result] = run(enricher(server.url), ['"a"'])
    assert result is not None and result.error_class == "HttpStatus404"
    assert len(server.requests) == 1


def test_a_refused_connection_is_retried_then_fails() -> None:
    [result] = run(enricher(refused_url(), retry={"attempts": 2}), ['"a"'])
    assert result is not None and result.error_class == "ConnectionError"
    assert "(after 2 attempt(s))" in (result.message or "")


@pytest.mark.parametrize(
    ("body", "into", "problem"),
    [
        (b"<html>", "data", "the answer is not JSON"),
        (b'{"a": NaN}', "data", "the answer is not JSON"),
        (b"\xff\xfe", "data", "the answer is not JSON"),
        (b'["a"]', "data", "the answer is an array, not a JSON object"),
        (b'"text"', "data.customer", None),
    ],
)
def test_answers_are_checked(body: bytes, into: str, problem: str | None) -> None:
    with RecordingServer(lambda request: Answer(200, body)) as server:
        [result] = run(enricher(server.url, into=into), ['"a"'])
    assert result is not None
    if problem is None:
        assert result == Enrichment(answer='"text"')
    else:
        assert result.error_class == "InvalidAnswer" and problem in (result.message or "")


def test_the_address_guard_refuses_at_connect_time_without_retrying(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    with RecordingServer(customers) as server:
        port = server.url.rsplit(":", 1)[1]
        # validated with localhost allowed; run as a worker whose allow-list is empty
        monkeypatch.setenv(ENRICH_ALLOW_ENV, "localhost")
        parsed = config(f"http://localhost:{port}/x", retry={"attempts": 3})
        [result] = run(Enricher(parsed, AllowList()), ['"a"'])
    assert server.requests == []
    assert result is not None and result.error_class == "ForbiddenAddress"
    assert "localhost (127.0.0.1) is a loopback address" in (result.message or "")
    assert "(after 1 attempt(s))" in (result.message or "")


def test_the_auth_secret_is_sent_but_never_in_a_message() -> None:
    def echo(request: Request) -> Answer:  # a server that quotes what it got
        return Answer(401, f"bad credentials: {request.header('Authorization')}".encode())

    with RecordingServer(echo) as server:
        auth = {"type": "bearer", "token": TOKEN}
        [result] = run(enricher(server.url, auth=auth), ['"a"'])
    assert server.requests[0].header("Authorization") == f"Bearer {TOKEN}"
    assert result is not None and result.error_class == "HttpStatus401"
    assert TOKEN not in (result.message or "") and "bad credentials" in (result.message or "")
