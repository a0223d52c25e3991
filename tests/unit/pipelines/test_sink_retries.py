"""Sink retries in real streaming queries built by the builder (files source, real Spark):
a write that fails for a while (its directory is taken by a plain file, so creating it
fails) is retried until it heals, exactly once for the files sink and once per event id for
the JDBC sink; one that never heals gives its events up as dead letters with the attempts."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path
from typing import Any

import pytest
from pyspark.errors import PySparkException
from pyspark.sql import SparkSession

from pipelines.builder import build_stream
from pipelines.spec import validate_spec

pytestmark = pytest.mark.spark

LINES = [json.dumps({"n": n}) for n in range(5)]
QUICK = {"attempts": 30, "backoff_ms": 100, "max_backoff_ms": 400, "max_event_age_seconds": None}


def run(
    spark: SparkSession, tmp_path: Path, spec: dict[str, Any], *, unblock: Path | None = None
) -> tuple[list[int], list[int]]:
    """Run the channel over the inbox; ``unblock`` (a plain file in the sink's way) is removed
    once the sink retried twice. Returns the dead letters and retries counted."""
    inbox = tmp_path / "in"
    inbox.mkdir(exist_ok=True)
    (inbox / "a.jsonl").write_text("\n".join(LINES) + "\n")
    dead: list[int] = []
    retries: list[int] = []

    def retried(count: int) -> None:  # called by the driver before it waits to retry
        retries.append(count)
        if unblock is not None and len(retries) == 2:
            unblock.unlink()

    query = build_stream(
        spark,
        validate_spec(spec),
        channel="retries",
        checkpoint_dir=str(tmp_path / "checkpoint"),
        on_dead_letters=dead.append,
        on_retries=retried,
    ).start()
    try:
        query.processAllAvailable()
    finally:
        query.stop()
    return dead, retries


def files_source(tmp_path: Path) -> dict[str, Any]:
    return {"type": "files", "config": {"path": str(tmp_path / "in"), "format": "jsonl"}}


def blocked(path: Path) -> Path:
    """A plain file where the sink needs a directory: creating it fails until it is removed."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("in the way\n")
    return path


def test_a_files_sink_retries_until_its_directory_can_be_made_and_writes_once(
    spark: SparkSession, tmp_path: Path
) -> None:
    out = blocked(tmp_path / "out")
    sink = {"type": "files", "config": {"path": str(out), "format": "jsonl", "retry": QUICK}}
    spec = {"source": files_source(tmp_path), "sink": sink, "errors": {"tolerance": "all"}}
    dead, retries = run(spark, tmp_path, spec, unblock=out)
    assert sum(retries) >= 1 and sum(dead) == 0
    read = sorted(json.loads(row.value)["n"] for row in spark.read.text(str(out)).collect())
    assert read == list(range(5))  # through the commit log: each event exactly once


def test_a_strict_jdbc_sink_retries_instead_of_failing_the_channel(
    spark: SparkSession, tmp_path: Path
) -> None:
    folder = blocked(tmp_path / "db")
    config = {"url": f"sqlite:///{folder}/events.db", "content": "data", "retry": QUICK}
    spec = {"source": files_source(tmp_path), "sink": {"type": "jdbc", "config": config}}
    _, retries = run(spark, tmp_path, spec, unblock=folder)  # errors.tolerance: none
    assert sum(retries) >= 1
    with sqlite3.connect(folder / "events.db") as connection:
        rows = connection.execute("SELECT data FROM events").fetchall()
    assert sorted(json.loads(row[0])["n"] for row in rows) == list(range(5))


def test_without_a_policy_the_same_failure_fails_the_channel(
    spark: SparkSession, tmp_path: Path
) -> None:
    folder = blocked(tmp_path / "db")
    config = {"url": f"sqlite:///{folder}/events.db"}
    spec = {"source": files_source(tmp_path), "sink": {"type": "jdbc", "config": config}}
    with pytest.raises(PySparkException, match="FileExistsError"):
        run(spark, tmp_path, spec)


def test_a_write_that_never_heals_gives_its_events_up_as_dead_letters(
    spark: SparkSession, tmp_path: Path
) -> None:
    folder = blocked(tmp_path / "db")
    retry = {"attempts": 3, "backoff_ms": 10, "max_backoff_ms": 20}
    config = {"url": f"sqlite:///{folder}/events.db", "retry": retry}
    dlq = {"type": "files", "config": {"path": str(tmp_path / "dlq"), "format": "jsonl"}}
    spec = {
        "source": files_source(tmp_path),
        "sink": {"type": "jdbc", "config": config},
        "errors": {"tolerance": "all", "dead_letter": dlq},
    }
    dead, retries = run(spark, tmp_path, spec)
    assert sum(dead) == 5 and sum(retries) == 2
    letters = [json.loads(row.value) for row in spark.read.text(str(tmp_path / "dlq")).collect()]
    assert len(letters) == 5
    context = letters[0]
    assert context["stage"] == "sink" and context["error_class"] == "FileExistsError"
    assert context["attempts"] == 3
    assert context["message"].startswith("jdbc sink: write failed after 3 attempt(s): ")
    assert sorted(json.loads(letter["payload"])["n"] for letter in letters) == list(range(5))


def bus(tmp_path: Path, sinks: list[dict[str, Any]], **extra: Any) -> dict[str, Any]:
    rules = [
        {"name": "small", "pattern": {"data": {"n": [{"numeric": ["<", 2]}]}}, "sinks": sinks},
        {"name": "all", "sinks": [{"type": "files", "config": {"path": str(tmp_path / "all")}}]},
    ]
    return {"source": files_source(tmp_path), "rules": rules, **extra}


def test_a_bus_target_retries_until_it_heals(spark: SparkSession, tmp_path: Path) -> None:
    folder = blocked(tmp_path / "db")
    config = {"url": f"sqlite:///{folder}/events.db", "content": "data", "retry": QUICK}
    spec = bus(tmp_path, [{"type": "jdbc", "config": config}])  # errors.tolerance: none
    _, retries = run(spark, tmp_path, spec, unblock=folder)
    assert sum(retries) >= 2
    with sqlite3.connect(folder / "events.db") as connection:
        rows = connection.execute("SELECT data FROM events").fetchall()
    assert sorted(json.loads(row[0])["n"] for row in rows) == [0, 1]
    assert spark.read.parquet(str(tmp_path / "all")).count() == 5


def test_a_bus_target_that_never_heals_gives_up_with_rule_target_and_attempts(
    spark: SparkSession, tmp_path: Path
) -> None:
    folder = blocked(tmp_path / "db")
    retry = {"attempts": 2, "backoff_ms": 10, "max_backoff_ms": 20}
    sink = {"type": "jdbc", "config": {"url": f"sqlite:///{folder}/events.db", "retry": retry}}
    dlq = {"type": "files", "config": {"path": str(tmp_path / "dlq"), "format": "jsonl"}}
    spec = bus(tmp_path, [sink], errors={"tolerance": "all", "dead_letter": dlq})
    dead, retries = run(spark, tmp_path, spec)
    assert sum(dead) == 2 and sum(retries) == 1
    letters = [json.loads(row.value) for row in spark.read.text(str(tmp_path / "dlq")).collect()]
    assert {(d["rule"], d["target"], d["attempts"]) for d in letters} == {
        ("small", "rules[0].sinks[0]", 2)
    }
    assert all(d["error_class"] == "FileExistsError" for d in letters)
    assert spark.read.parquet(str(tmp_path / "all")).count() == 5  # the other rule delivered


def test_a_bad_event_fails_a_strict_channel_at_once_not_as_a_retried_write(
    spark: SparkSession, tmp_path: Path
) -> None:
    inbox = tmp_path / "in"
    inbox.mkdir()
    (inbox / "a.jsonl").write_text('{"n": 1}\n{"n": \n')
    config = {"url": f"sqlite:///{tmp_path}/events.db", "retry": QUICK}
    spec = {"source": files_source(tmp_path), "sink": {"type": "jdbc", "config": config}}
    retries: list[int] = []
    query = build_stream(
        spark,
        validate_spec(spec),
        channel="retries",
        checkpoint_dir=str(tmp_path / "checkpoint"),
        on_retries=retries.append,
    ).start()
    try:
        with pytest.raises(PySparkException, match=r"source: .*\[InvalidJson\]"):
            query.processAllAvailable()
    finally:
        query.stop()
    assert retries == []
