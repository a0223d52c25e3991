"""Files source: JSON lines, CSV and Parquet files -> CloudEvents (batch and streaming)."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from pyspark.sql import DataFrame, SparkSession

from pipelines.cloudevents import EVENT_COLUMNS, event_json
from pipelines.sources import SOURCES
from pipelines.sources.files import (
    NoFilesToReadError,
    file_records_to_events,
    files_source_options,
    read_files,
)
from pipelines.spec.configs import FilesSourceConfig
from tests.unit.pipelines.event_rows import failures

pytestmark = pytest.mark.spark

FILE_TIME = datetime(2024, 6, 1, 8, 15, 30, tzinfo=UTC)
TEXT_SCHEMA = "_file_path string, _file_name string, _file_time timestamp, _text string"
JSONL = FilesSourceConfig(path="in")
CSV = FilesSourceConfig(path="in", format="csv")


def text_files(spark: SparkSession, files: dict[str, str]) -> DataFrame:
    """Raw records as :func:`read_files` gives them for jsonl / csv: one row per file."""
    rows = [(f"file:/in/{name}", name, FILE_TIME, text) for name, text in files.items()]
    return spark.createDataFrame(rows, TEXT_SCHEMA)


def events_of(raw: DataFrame, config: FilesSourceConfig) -> list[dict[str, Any]]:
    return json_events(file_records_to_events(raw, config))


def json_events(events: DataFrame) -> list[dict[str, Any]]:
    """The events' JSON forms, by id, with ``_origin`` = (origin_topic, origin_offset)."""
    assert tuple(events.columns) == EVENT_COLUMNS
    rows = events.select(event_json().alias("e"), "origin_topic", "origin_offset").collect()
    found = [{**json.loads(r.e), "_origin": (r.origin_topic, r.origin_offset)} for r in rows]
    return sorted(found, key=lambda event: event["id"])


def test_options_and_registry() -> None:
    assert SOURCES["files"].read is read_files
    assert SOURCES["files"].to_events is file_records_to_events
    assert files_source_options(JSONL) == {"wholetext": "true"}
    parquet = FilesSourceConfig(
        path="p", format="parquet", file_pattern="*.parquet", max_files_per_trigger=2
    )
    assert files_source_options(parquet) == {
        "pathGlobFilter": "*.parquet",
        "maxFilesPerTrigger": "2",
    }


def test_json_lines_become_events_named_by_file_and_line(spark: SparkSession) -> None:
    raw = text_files(spark, {"a.jsonl": '{"n": 1}\r\n\n  \n[true]\n', "b.jsonl": '"x"'})

    events = events_of(raw, JSONL)

    assert [(e["id"], e["data"]) for e in events] == [
        ("a.jsonl/1", {"n": 1}),
        ("a.jsonl/4", [True]),
        ("b.jsonl/1", "x"),
    ]
    assert events[0] == {
        "id": "a.jsonl/1",
        "source": "file:/in",
        "specversion": "1.0",
        "type": "sluice.file.record",
        "time": "2024-06-01T08:15:30Z",
        "datacontenttype": "application/json",
        "data": {"n": 1},
        "_origin": ("file:/in/a.jsonl", 1),
    }


def test_a_bad_json_line_fails_naming_file_and_line(spark: SparkSession) -> None:
    raw = text_files(spark, {"a.jsonl": '{"n": 1}\n{"n": oops}\n'})
    events = file_records_to_events(raw, JSONL)
    assert failures(events) == [
        (
            "InvalidJson",
            'file file:/in/a.jsonl line 2: line is not valid JSON (line starts with: {"n": oops})',
        )
    ]
    assert events.filter("failure IS NOT NULL").first().origin_payload == '{"n": oops}'


def test_csv_lines_become_objects_of_strings(spark: SparkSession) -> None:
    text = 'id,name,note\n1,Ann,"says ""hi"", twice"\n\n2,Bob,\n'
    raw = text_files(spark, {"people.csv": text, "other.csv": "x\n7\n"})

    events = events_of(raw, CSV)

    assert [(e["id"], e["data"]) for e in events] == [
        ("other.csv/2", {"x": "7"}),
        ("people.csv/2", {"id": "1", "name": "Ann", "note": 'says "hi", twice'}),
        ("people.csv/4", {"id": "2", "name": "Bob", "note": ""}),
    ]


def test_csv_without_header_and_with_another_delimiter(spark: SparkSession) -> None:
    config = FilesSourceConfig(path="in", format="csv", csv_header=False, csv_delimiter=";")
    events = events_of(text_files(spark, {"a.csv": 'a;"b;c"\nd;e\n'}), config)
    assert [(e["id"], e["data"]) for e in events] == [
        ("a.csv/1", {"_c0": "a", "_c1": "b;c"}),
        ("a.csv/2", {"_c0": "d", "_c1": "e"}),
    ]
    tab = FilesSourceConfig(path="in", format="csv", csv_delimiter="\t")
    assert events_of(text_files(spark, {"t.csv": "a\tb\n1\t|\n"}), tab)[0]["data"] == {
        "a": "1",
        "b": "|",
    }


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("a,b\n1,2,3\n", "file file:/in/a.csv line 2: line has 3 fields, the header has 2"),
        ("a,a\n1,2\n", "file file:/in/a.csv line 2: the header names a column more than once"),
    ],
)
def test_bad_csv_lines_fail_naming_file_and_line(
    spark: SparkSession, text: str, message: str
) -> None:
    [(error_class, found)] = failures(
        file_records_to_events(text_files(spark, {"a.csv": text}), CSV)
    )
    assert error_class == "InvalidCsv"
    assert message in found


def test_parquet_rows_become_objects(spark: SparkSession, tmp_path: Path) -> None:
    inbox = tmp_path / "in"
    spark.createDataFrame(
        [(1, "a", [1.5]), (2, None, [])], "n int, s string, xs array<double>"
    ).coalesce(1).write.parquet(str(inbox))
    config = FilesSourceConfig(path=str(inbox), format="parquet")

    stream = read_files(spark, config)
    assert stream.isStreaming
    query = file_records_to_events(stream, config).writeStream.format("memory")
    running = query.queryName("files_parquet").start()
    try:
        running.processAllAvailable()
    finally:
        running.stop()
    events = json_events(spark.table("files_parquet"))

    assert [e["data"] for e in events] == [
        {"n": 1, "s": "a", "xs": [1.5]},
        {"n": 2, "s": None, "xs": []},
    ]
    assert [e["id"].split("/")[1] for e in events] == ["1", "2"]
    assert events[0]["id"].startswith("part-") and events[0]["source"].endswith("/in")


def test_parquet_needs_files_to_read_the_schema_from(spark: SparkSession, tmp_path: Path) -> None:
    config = FilesSourceConfig(path=str(tmp_path), format="parquet")
    with pytest.raises(NoFilesToReadError, match=r"no Parquet file in .* add one before"):
        read_files(spark, config)


def test_files_are_picked_up_as_they_arrive(spark: SparkSession, tmp_path: Path) -> None:
    inbox = tmp_path / "in"
    inbox.mkdir()
    (inbox / "1.jsonl").write_text('{"n": 1}\n{"n": 2}\n')
    (inbox / "ignored.tmp").write_text("not json\n")
    config = FilesSourceConfig(path=str(inbox), file_pattern="*.jsonl")
    events = file_records_to_events(read_files(spark, config), config)
    query = events.writeStream.format("memory").queryName("files_jsonl").start()
    try:
        query.processAllAvailable()
        first = sorted(row.id for row in spark.table("files_jsonl").collect())
        (inbox / "2.jsonl").write_text('{"n": 3}\n')
        query.processAllAvailable()
        second = sorted(row.id for row in spark.table("files_jsonl").collect())
    finally:
        query.stop()

    assert first == ["1.jsonl/1", "1.jsonl/2"]
    assert second == ["1.jsonl/1", "1.jsonl/2", "2.jsonl/1"]
