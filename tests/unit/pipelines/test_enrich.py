"""The enrich transform in Spark against a real HTTP server on 127.0.0.1: answers merged per
event and per batch, failures as failed events of the stage (dead letters under
``tolerance: all``, a failed query under ``none``), the address guard in the driver, and
the auth secret kept out of plans. Calls in detail: test_enrich_config.py (no Spark).
"""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from pyspark.errors import PySparkException
from pyspark.sql import DataFrame, SparkSession

from pipelines.builder import build_stream
from pipelines.errors import dead_letters_of, fail_fast
from pipelines.net import ENRICH_ALLOW_ENV
from pipelines.query import apply_transforms
from pipelines.spec import StageSpec, validate_spec
from pipelines.spec.configs.enrich import EnrichConfig
from pipelines.transforms.enrich import enrich_events
from tests.support.http_server import Answer, RecordingServer, Request
from tests.unit.pipelines.event_rows import data_of, events_frame, failures

pytestmark = pytest.mark.spark

TOKEN = "tok-5d2a71"
FAST_RETRY = {"attempts": 3, "backoff_initial_seconds": 0.01, "backoff_max_seconds": 0.05}


@pytest.fixture(autouse=True)
def allow_the_local_server(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(ENRICH_ALLOW_ENV, "127.0.0.1")


def customers(request: Request) -> Answer:
    """A customer for an id, an array of customers for an array of ids; 500 for "down". An
    object asked for is an order (its "customer") or a whole event (its "id")."""

    def key(item: Any) -> Any:
        if isinstance(item, dict):
            return item["data"]["customer"] if "specversion" in item else item["customer"]
        return item

    asked = json.loads(request.body)
    keys = [key(item) for item in asked] if isinstance(asked, list) else [key(asked)]
    if "down" in keys:
        return Answer(500, b"customer service down")
    answers = [{"tier": f"T-{k}"} for k in keys]
    return Answer(200, json.dumps(answers if isinstance(asked, list) else answers[0]).encode())


def orders(spark: SparkSession, *customer_ids: str | None) -> DataFrame:
    """Events now (never too old): data {"n": i, "customer": id} (no customer for None)."""
    now = datetime.now(UTC)
    events = [
        {"time": now, "data": {"n": n} if cid is None else {"n": n, "customer": cid}}
        for n, cid in enumerate(customer_ids)
    ]
    return events_frame(spark, events)


def stage(url: str, **config: Any) -> StageSpec:
    return StageSpec(
        type="enrich",
        config={"url": url, "input": "$.data.customer", "retry": FAST_RETRY, **config},
    )


def test_answers_are_set_per_event_and_merged_per_batch(spark: SparkSession) -> None:
    with RecordingServer(customers) as server:
        events = orders(spark, "c1", None, "c2", "c1").coalesce(1)
        # cached: each read of a plan would call again (the answers may change)
        per_event = apply_transforms(events, [stage(server.url, into="data.profile")]).cache()
        set_into = data_of(per_event)
        missing = failures(per_event)
        per_event.unpersist()
        per_event_requests = len(server.requests)

        batched = apply_transforms(
            orders(spark, "c1", "c2", "c3", "c4", "c5").coalesce(1),
            [stage(server.url, input="$.data", batch_size=2, cache={"ttl_seconds": 60})],
        )
        merged = data_of(batched)
        batch_bodies = sorted(
            [item["customer"] for item in json.loads(r.body)]
            for r in server.requests[per_event_requests:]
        )
        whole_events = apply_transforms(orders(spark, "c9"), [stage(server.url, input="$")])
        merged_from_event = data_of(whole_events)
        event_sent = json.loads(server.requests[-1].body)

    assert set_into == [
        {"n": 0, "customer": "c1", "profile": {"tier": "T-c1"}},
        {"n": 1},  # failed before any call: data kept
        {"n": 2, "customer": "c2", "profile": {"tier": "T-c2"}},
        {"n": 3, "customer": "c1", "profile": {"tier": "T-c1"}},
    ]
    assert missing == [
        (
            "MissingField",
            "enrich: the event has no value to send (field $.data.customer, event orders/0/1)",
        )
    ]
    assert per_event_requests == 3  # no cache: c1 twice, nothing for the event without one
    assert merged == [{"n": n, "customer": f"c{n + 1}", "tier": f"T-c{n + 1}"} for n in range(5)]
    assert batch_bodies == [["c1", "c2"], ["c3", "c4"], ["c5"]]
    assert merged_from_event == [{"n": 0, "customer": "c9", "tier": "T-c9"}]
    assert (event_sent["id"], event_sent["specversion"]) == ("orders/0/0", "1.0")


def test_a_call_that_fails_after_its_retries_is_a_failed_event_of_the_stage(
    spark: SparkSession,
) -> None:
    with RecordingServer(customers) as server:
        events = apply_transforms(orders(spark, "c1", "down"), [stage(server.url + "/c")])
        events = events.cache()
        letters = [row.asDict() for row in dead_letters_of(events).collect()]
        good = data_of(events.filter("failure IS NULL"))
        with pytest.raises(PySparkException, match=r"transforms\[0\] \(enrich\): enrich: POST"):
            fail_fast(events).collect()
        events.unpersist()
    assert good == [{"n": 0, "customer": "c1", "tier": "T-c1"}]
    [letter] = letters
    assert letter["stage"] == "transforms[0] (enrich)"
    assert letter["error_class"] == "HttpStatus500"
    assert letter["message"] == (
        f"enrich: POST {server.url}/c: HTTP 500 Internal Server Error, response: customer "
        "service down (after 3 attempt(s)) (event orders/0/1)"
    )
    assert (letter["origin_topic"], letter["origin_offset"]) == ("orders", 1)
    assert json.loads(letter["event"])["data"] == {"n": 1, "customer": "down"}  # unenriched
    assert sum(r.body == b'"down"' for r in server.requests) == 3


def test_a_channel_routes_failed_enrichments_to_the_dead_letter_target(
    spark: SparkSession, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """... and logs them (errors.log) without the auth secret a server quoted back."""

    def quoting(request: Request) -> Answer:
        answer = customers(request)
        if answer.status == 500:  # the server quotes the credentials it got
            return Answer(500, f"down for {request.header('Authorization')}".encode())
        return answer

    inbox = tmp_path / "in"
    inbox.mkdir()
    (inbox / "a.jsonl").write_text('{"customer": "c7"}\n{"customer": "down"}\n')
    auth = {"type": "api_key", "header": "Authorization", "value": TOKEN}
    with RecordingServer(quoting) as server, caplog.at_level("WARNING", "sluice.deadletters"):
        spec = {
            "source": {"type": "files", "config": {"path": str(inbox), "format": "jsonl"}},
            "transforms": [stage(server.url, auth=auth).model_dump()],
            "sink": {"type": "files", "config": {"path": str(tmp_path / "out"), "format": "jsonl"}},
            "errors": {
                "tolerance": "all",
                "log": True,
                "dead_letter": {
                    "type": "files",
                    "config": {"path": str(tmp_path / "dlq"), "format": "jsonl"},
                },
            },
        }
        query = build_stream(
            spark, validate_spec(spec), channel="enrich-test", checkpoint_dir=str(tmp_path / "c")
        ).start()
        try:
            query.processAllAvailable()
        finally:
            query.stop()
    out = [json.loads(r.value) for r in spark.read.text(str(tmp_path / "out")).collect()]
    dlq = [json.loads(r.value) for r in spark.read.text(str(tmp_path / "dlq")).collect()]
    assert out == [{"customer": "c7", "tier": "T-c7"}]
    [letter] = dlq
    assert letter["stage"] == "transforms[0] (enrich)"
    assert letter["error_class"] == "HttpStatus500"
    assert letter["payload"] == '{"customer": "down"}'
    assert "down for" in letter["message"] and TOKEN not in letter["message"]
    assert "HttpStatus500" in caplog.text and "down for" in caplog.text
    assert TOKEN not in caplog.text
    assert server.requests[0].header("Authorization") == TOKEN


def test_the_driver_checks_the_address_again_and_keeps_the_secret_out_of_the_plan(
    spark: SparkSession, monkeypatch: pytest.MonkeyPatch
) -> None:
    auth = {"type": "bearer", "token": TOKEN}
    with RecordingServer(customers) as server:
        config = EnrichConfig.model_validate(
            {"url": server.url, "input": "$.data.customer", "auth": auth, "retry": FAST_RETRY}
        )
        events = enrich_events(orders(spark, "c1"), config)
        plan = events._jdf.queryExecution().toString()
        assert data_of(events) == [{"n": 0, "customer": "c1", "tier": "T-c1"}]
        assert server.requests[0].header("Authorization") == f"Bearer {TOKEN}"
    assert TOKEN not in plan and "enrich(" in plan

    monkeypatch.delenv(ENRICH_ALLOW_ENV)  # a driver whose allow-list lacks the address
    with pytest.raises(ValueError, match="the enrich transform refuses it"):
        enrich_events(orders(spark, "c1"), config)
