"""Files sink: events -> Parquet / JSON lines rows, and exactly-once writing across restarts."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path

import pytest
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from pipelines.builder import build_stream
from pipelines.sinks import SINKS
from pipelines.sinks.files import events_to_file_rows, write_files
from pipelines.sources.generator import ticks_to_events
from pipelines.spec import validate_spec
from pipelines.spec.configs import FilesSinkConfig, GeneratorSourceConfig

pytestmark = pytest.mark.spark

TICK_TIME = datetime(2024, 6, 1, 8, 15, 30, tzinfo=UTC)


@pytest.fixture
def events(spark: SparkSession) -> DataFrame:
    """Two events: ``generator/0`` with an extension, ``generator/1`` without data."""
    ticks = spark.createDataFrame(
        [(TICK_TIME, 0), (TICK_TIME, 1)], "timestamp timestamp, value bigint"
    )
    config = GeneratorSourceConfig(template={"n": "{{seq}}", "s": "é"}, type="t", source="/s")
    generated = ticks_to_events(ticks, config)
    return generated.select(
        *(name for name in generated.columns if name not in ("extensions", "data")),
        F.when(F.col("origin_offset") == 0, F.expr("map('trace', parse_json('[1]'))"))
        .otherwise(F.col("extensions"))
        .alias("extensions"),
        F.when(F.col("origin_offset") == 0, F.col("data")).alias("data"),
    ).select(*generated.columns)


def sink(**config: str) -> FilesSinkConfig:
    return FilesSinkConfig(path="out", **config)  # type: ignore[arg-type]


def test_registry() -> None:
    assert SINKS["files"] is write_files


def test_jsonl_lines(events: DataFrame) -> None:
    data = sorted(row.value for row in events_to_file_rows(events, sink(format="jsonl")).collect())
    assert data == ["null", '{"n":0,"s":"é"}']

    lines = events_to_file_rows(events, sink(format="jsonl", content="cloudevents")).collect()
    whole = sorted((json.loads(row.value) for row in lines), key=lambda event: event["id"])
    assert whole[0] == {
        "id": "generator/0",
        "source": "/s",
        "specversion": "1.0",
        "type": "t",
        "time": "2024-06-01T08:15:30Z",
        "datacontenttype": "application/json",
        "trace": [1],
        "data": {"n": 0, "s": "é"},
    }
    assert "data" not in whole[1]


def test_parquet_rows(events: DataFrame) -> None:
    data = events_to_file_rows(events, sink())
    assert data.dtypes == [("data", "string")]
    assert sorted(data.collect(), key=lambda row: row.data is None)[0].data == '{"n":0,"s":"é"}'

    whole = events_to_file_rows(events, sink(content="cloudevents"))
    assert whole.dtypes == [
        ("id", "string"),
        ("source", "string"),
        ("specversion", "string"),
        ("type", "string"),
        ("subject", "string"),
        ("time", "timestamp"),
        ("datacontenttype", "string"),
        ("dataschema", "string"),
        ("extensions", "string"),
        ("data", "string"),
    ]
    rows = {row.id: row for row in whole.collect()}
    assert (rows["generator/0"].extensions, rows["generator/1"].extensions) == (
        '{"trace":[1]}',
        "{}",
    )
    assert rows["generator/1"].data is None


@pytest.mark.parametrize(
    ("file_format", "content"), [("jsonl", "cloudevents"), ("parquet", "data")]
)
def test_a_replayed_batch_is_written_once(
    spark: SparkSession, tmp_path: Path, file_format: str, content: str
) -> None:
    """Restarting from the checkpoint, even with the last batch's commit lost, adds no duplicate."""
    inbox, outbox, checkpoint = tmp_path / "in", tmp_path / "out", tmp_path / "checkpoint"
    inbox.mkdir()
    spec = validate_spec(
        {
            "source": {"type": "files", "config": {"path": str(inbox)}},
            "sink": {
                "type": "files",
                "config": {"path": str(outbox), "format": file_format, "content": content},
            },
        }
    )

    def run() -> None:
        query = build_stream(spark, spec, channel="files", checkpoint_dir=str(checkpoint)).start()
        try:
            query.processAllAvailable()
        finally:
            query.stop()

    def written() -> list[str]:
        if file_format == "jsonl":
            return sorted(
                json.loads(row.value)["id"] for row in spark.read.text(str(outbox)).collect()
            )
        return sorted(
            str(json.loads(row.data)["n"]) for row in spark.read.parquet(str(outbox)).collect()
        )

    def data_files() -> set[str]:
        return {path.name for path in outbox.glob("part-*")}

    (inbox / "a.jsonl").write_text('{"n": 1}\n{"n": 2}\n')
    run()
    (inbox / "b.jsonl").write_text('{"n": 3}\n')
    run()
    files_before = data_files()
    commits = sorted(
        (path for path in (checkpoint / "commits").iterdir() if path.name.isdigit()),
        key=lambda path: int(path.name),
    )
    # as if the driver died after writing batch 1, before committing it
    commits[-1].unlink()
    (checkpoint / "commits" / f".{commits[-1].name}.crc").unlink(missing_ok=True)
    run()

    expected = (
        ["a.jsonl/1", "a.jsonl/2", "b.jsonl/1"] if file_format == "jsonl" else ["1", "2", "3"]
    )
    assert written() == expected
    assert data_files() == files_before
    assert (checkpoint / "commits" / commits[-1].name).exists()
