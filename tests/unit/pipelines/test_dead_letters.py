"""Error policy end to end: real streaming queries from a files source into files sinks.

``errors.tolerance: all`` routes bad events (unreadable lines, failed casts) to the
dead-letter sink with their context and keeps the good ones flowing; ``none`` fails the
query naming the stage and the record.
"""

from __future__ import annotations

import json
import logging
from pathlib import Path
from typing import Any

import pytest
from pyspark.errors import PySparkException
from pyspark.sql import SparkSession

from pipelines.builder import build_stream
from pipelines.errors import DEAD_LETTER_SCHEMA, DEAD_LETTER_TYPE, DeadLetterError, ErrorRouter
from pipelines.sinks.files import write_files_batch
from pipelines.spec import validate_spec
from pipelines.spec.configs import FilesSinkConfig
from tests.support.http_server import Answer, RecordingServer, Request
from tests.unit.pipelines.event_rows import events_frame

pytestmark = pytest.mark.spark

LINES = ['{"n": 1, "qty": "3"}', '{"n": 2, "qty": ', '{"n": 3, "qty": "many"}', '{"n": 4}']


def channel_spec(tmp_path: Path, errors: dict[str, Any] | None) -> dict[str, Any]:
    spec: dict[str, Any] = {
        "source": {"type": "files", "config": {"path": str(tmp_path / "in"), "format": "jsonl"}},
        "transforms": [{"type": "cast", "config": {"fields": {"data.qty": "long"}}}],
        "sink": {"type": "files", "config": {"path": str(tmp_path / "out"), "format": "jsonl"}},
    }
    if errors is not None:
        spec["errors"] = errors
    return spec


def dead_letter_sink(tmp_path: Path) -> dict[str, Any]:
    config = {"path": str(tmp_path / "dlq"), "format": "jsonl", "content": "cloudevents"}
    return {"type": "files", "config": config}


def run_channel(
    spark: SparkSession, tmp_path: Path, spec: dict[str, Any], lines: list[str], name: str
) -> list[int]:
    """Drop a file of ``lines`` into the inbox and run the channel over everything there."""
    inbox = tmp_path / "in"
    inbox.mkdir(exist_ok=True)
    (inbox / name).write_text("\n".join(lines) + "\n")
    counts: list[int] = []
    writer = build_stream(
        spark,
        validate_spec(spec),
        channel="dlq-test",
        checkpoint_dir=str(tmp_path / "checkpoint"),
        on_dead_letters=counts.append,
    )
    query = writer.start()
    try:
        query.processAllAvailable()
    finally:
        query.stop()
    return counts


def read_lines(spark: SparkSession, path: Path) -> list[dict[str, Any]]:
    if not path.exists():
        return []
    return [json.loads(row.value) for row in spark.read.text(str(path)).collect()]


def test_tolerance_all_routes_bad_events_with_their_context(
    spark: SparkSession, tmp_path: Path
) -> None:
    spec = channel_spec(tmp_path, {"tolerance": "all", "dead_letter": dead_letter_sink(tmp_path)})
    counts = run_channel(spark, tmp_path, spec, LINES, "a.jsonl")

    good = sorted(read_lines(spark, tmp_path / "out"), key=lambda data: data["n"])
    assert good == [{"n": 1, "qty": 3}, {"n": 4}]
    assert sum(counts) == 2

    letters = {letter["subject"]: letter for letter in read_lines(spark, tmp_path / "dlq")}
    assert set(letters) == {"source", "transforms[0] (cast)"}
    unreadable = letters["source"]
    assert unreadable["type"] == DEAD_LETTER_TYPE
    assert unreadable["source"] == "sluice://channels/dlq-test"
    assert unreadable["sluicestage"] == "source"
    assert unreadable["sluiceerrorclass"] == "InvalidJson"
    context = unreadable["data"]
    assert context["error_class"] == "InvalidJson"
    assert "a.jsonl line 2: line is not valid JSON" in context["message"]
    assert context["payload"] == LINES[1]
    assert context["origin"]["offset"] == 2
    assert context["origin"]["topic"].endswith("/in/a.jsonl")
    assert "event" not in context  # the line never became an event

    cast = letters["transforms[0] (cast)"]["data"]
    assert cast["error_class"] == "CastError"
    assert "cast: cannot cast the value to long (field data.qty" in cast["message"]
    assert cast["payload"] == LINES[2]
    assert cast["event"]["data"] == {"n": 3, "qty": "many"}  # as the cast stage got it
    assert letters["transforms[0] (cast)"]["id"] == cast["event"]["id"]


def test_a_restarted_channel_writes_each_event_and_dead_letter_once(
    spark: SparkSession, tmp_path: Path
) -> None:
    spec = channel_spec(tmp_path, {"tolerance": "all", "dead_letter": dead_letter_sink(tmp_path)})
    run_channel(spark, tmp_path, spec, LINES, "a.jsonl")
    counts = run_channel(spark, tmp_path, spec, ['{"n": 5, "qty": 1}', "nope"], "b.jsonl")

    assert sorted(data["n"] for data in read_lines(spark, tmp_path / "out")) == [1, 4, 5]
    assert len(read_lines(spark, tmp_path / "dlq")) == 3
    assert counts == [1]  # the second run saw only the new file


def test_tolerance_all_without_a_target_counts_and_logs(
    spark: SparkSession, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    spec = channel_spec(tmp_path, {"tolerance": "all", "log": True})
    with caplog.at_level(logging.WARNING, logger="sluice.deadletters"):
        counts = run_channel(spark, tmp_path, spec, LINES, "a.jsonl")

    assert sum(counts) == 2
    assert sorted(data["n"] for data in read_lines(spark, tmp_path / "out")) == [1, 4]
    logged = [record.getMessage() for record in caplog.records]
    assert any("dead letter (channel dlq-test" in line and "CastError" in line for line in logged)
    assert any("source: file" in line and "InvalidJson" in line for line in logged)


def test_tolerance_none_fails_the_query_naming_stage_and_record(
    spark: SparkSession, tmp_path: Path
) -> None:
    spec = channel_spec(tmp_path, None)
    with pytest.raises(PySparkException) as raised:
        run_channel(spark, tmp_path, spec, LINES, "a.jsonl")
    message = str(raised.value)
    assert "source: file " in message
    assert "a.jsonl line 2: line is not valid JSON" in message
    assert "[InvalidJson]" in message
    assert not read_lines(spark, tmp_path / "out")  # the failed batch wrote nothing


def test_tolerance_none_names_the_failing_transform(spark: SparkSession, tmp_path: Path) -> None:
    spec = channel_spec(tmp_path, {"tolerance": "none"})
    lines = [LINES[0], LINES[2]]
    with pytest.raises(PySparkException, match=r"transforms\[0\] \(cast\): cast: cannot cast"):
        run_channel(spark, tmp_path, spec, lines, "a.jsonl")


def test_the_files_batch_writer_skips_a_replayed_batch(spark: SparkSession, tmp_path: Path) -> None:
    config = FilesSinkConfig(path=str(tmp_path / "out"), format="jsonl")
    events = events_frame(spark, [{"data": {"n": 1}}, {"data": {"n": 2}}])
    write_files_batch(events, config, 0)
    write_files_batch(events, config, 0)  # a replay after a crash
    write_files_batch(events.limit(1), config, 1)
    assert sorted(data["n"] for data in read_lines(spark, tmp_path / "out")) == [1, 1, 2]


def test_events_an_http_sink_rejects_become_dead_letters(
    spark: SparkSession, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("SLUICE_HTTP_SINK_ALLOW", "127.0.0.1")  # the test server's address

    def script(request: Request) -> Answer:
        return Answer(422, b"qty must be positive") if b'"qty":-1' in request.body else Answer()

    with RecordingServer(script) as server:
        spec = {
            "source": {
                "type": "files",
                "config": {"path": str(tmp_path / "in"), "format": "jsonl"},
            },
            "sink": {"type": "http", "config": {"url": f"{server.url}/orders", "body": "data"}},
            "errors": {"tolerance": "all", "dead_letter": dead_letter_sink(tmp_path)},
        }
        lines = ['{"n": 1, "qty": 2}', '{"n": 2, "qty": -1}', '{"n": 3, "qty": 1}']
        counts = run_channel(spark, tmp_path, spec, lines, "a.jsonl")

    assert sorted(json.loads(request.body)["n"] for request in server.requests) == [1, 2, 3]
    assert sum(counts) == 1
    [letter] = read_lines(spark, tmp_path / "dlq")
    assert letter["subject"] == "sink"
    context = letter["data"]
    assert context["error_class"] == "HttpStatus422"
    assert "qty must be positive" in context["message"]
    assert context["payload"] == lines[1]
    assert context["event"]["data"] == {"n": 2, "qty": -1}


def test_a_files_dead_letter_log_has_no_gaps(spark: SparkSession, tmp_path: Path) -> None:
    """Batches without dead letters are logged too, so the directory stays readable."""
    spec = channel_spec(tmp_path, {"tolerance": "all", "dead_letter": dead_letter_sink(tmp_path)})
    run_channel(spark, tmp_path, spec, [LINES[0]], "a.jsonl")  # batch 0: no dead letter
    run_channel(spark, tmp_path, spec, [LINES[1]], "b.jsonl")  # batch 1: one

    logged = (tmp_path / "dlq" / "_spark_metadata").iterdir()
    assert sorted(p.name for p in logged if not p.name.startswith(".")) == ["0", "1"]
    assert [letter["subject"] for letter in read_lines(spark, tmp_path / "dlq")] == ["source"]


def test_failed_events_keep_their_event_only_when_dead_letters_need_it(
    spark: SparkSession,
) -> None:
    from pipelines.errors import capturing_failed_events
    from pipelines.spec.configs.fields import CastConfig
    from pipelines.transforms.fields import cast_fields

    events = events_frame(spark, [{"id": "e-1", "data": {"qty": "many"}}])
    config = CastConfig(fields={"data.qty": "long"})
    kept = cast_fields(events, config).first().failure
    with capturing_failed_events(False):
        lean = cast_fields(events, config).first().failure
    assert json.loads(kept.event)["data"] == {"qty": "many"}
    assert lean.event is None
    assert (lean.error_class, lean.message) == (kept.error_class, kept.message)


def test_a_dead_letter_sink_that_rejects_dead_letters_fails_the_batch(
    spark: SparkSession,
) -> None:
    """Nothing is left to route them to: the batch fails, naming how many and the first."""
    letters = [
        ("e1", None, "sink", "HttpStatus503", "first refusal", "t", 0, 1, None, "{}"),
        ("e2", None, "sink", "HttpStatus503", "second refusal", "t", 0, 2, None, "{}"),
    ]
    dead = spark.createDataFrame(letters, DEAD_LETTER_SCHEMA)
    counts: list[int] = []

    def router(rejects: bool) -> ErrorRouter:
        return ErrorRouter(
            channel="dlq-test",
            write_sink=lambda events, batch_id: None,
            write_dead_letters=lambda events, batch_id: dead if rejects else dead.limit(0),
            log=False,
            on_dead_letters=counts.append,
        )

    router(rejects=False).route(dead, 0)
    assert counts == [2]
    with pytest.raises(DeadLetterError, match=r"rejected 2 dead letter\(s\); first: \w+ refusal"):
        router(rejects=True).route(dead, 1)
    assert counts == [2]
