"""``build_stream``: the whole channel as a streaming query (Kafka replaced by files/memory)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql.streaming import DataStreamWriter

import pipelines.builder as builder
import pipelines.query as plumbing
from pipelines.builder import build_stream
from pipelines.query import query_name
from pipelines.sinks import SINKS
from pipelines.sinks.kafka import events_to_kafka_records
from pipelines.sources import SOURCES, Source
from pipelines.sources.kafka import kafka_records_to_events
from pipelines.spec import PLUGINS, SpecError, validate_spec
from pipelines.transforms import TRANSFORMS
from tests.unit.pipelines.conftest import RECORD_TIME

SPEC = {
    "source": {"type": "kafka", "config": {"bootstrap_servers": "h:1", "topics": ["orders"]}},
    "transforms": [
        {"type": "filter", "config": {"pattern": {"data": {"total": [{"numeric": [">", 100]}]}}}}
    ],
    "sink": {
        "type": "kafka",
        "config": {"bootstrap_servers": "h:1", "topic": "big", "format": "cloudevents"},
    },
}


def test_every_catalogue_plugin_has_a_spark_implementation() -> None:
    registries = {"source": SOURCES, "transform": TRANSFORMS, "sink": SINKS}
    for kind, type_ in PLUGINS:
        assert type_ in registries[kind], (kind, type_)
    assert query_name("orders") == "sluice-orders"


@pytest.mark.spark
def test_invalid_specs_are_refused_with_spec_paths(spark: SparkSession, tmp_path: Path) -> None:
    spec = validate_spec(SPEC)
    spec.transforms[0].config = {"pattern": {"data": "oops"}}
    with pytest.raises(SpecError) as raised:
        build_stream(spark, spec, channel="c", checkpoint_dir=str(tmp_path))
    assert list(raised.value.errors) == ["transforms[0].config.pattern"]


@pytest.mark.spark
def test_channel_runs_end_to_end(
    spark: SparkSession, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Records flow source -> CloudEvents -> filter -> sink records in one streaming query."""
    inbox = tmp_path / "inbox"
    inbox.mkdir()
    orders = [{"offset": n, "total": total} for n, total in enumerate([50, 150, 250])]
    (inbox / "part-0.json").write_text("\n".join(json.dumps(order) for order in orders) + "\n")

    def read_lines_as_kafka(
        session: SparkSession, config: Any, *, real_time: bool = False
    ) -> DataFrame:
        lines = session.readStream.format("text").load(str(inbox))
        return lines.select(
            F.lit(None).cast("binary").alias("key"),
            F.col("value").cast("binary").alias("value"),
            F.lit(config.topics[0]).alias("topic"),
            F.lit(0).alias("partition"),
            F.get_json_object("value", "$.offset").cast("bigint").alias("offset"),
            F.lit(RECORD_TIME).alias("timestamp"),
            F.lit(0).alias("timestampType"),
        )

    outbox = tmp_path / "outbox"

    def write_to_files(events: DataFrame, config: Any) -> DataStreamWriter:
        records = events_to_kafka_records(events, config)
        return records.writeStream.format("parquet").option("path", str(outbox))

    monkeypatch.setattr(
        plumbing, "SOURCES", {"kafka": Source(read_lines_as_kafka, kafka_records_to_events)}
    )
    monkeypatch.setattr(builder, "SINKS", {"kafka": write_to_files})
    checkpoint = tmp_path / "checkpoint"

    writer = build_stream(spark, validate_spec(SPEC), channel="e2e", checkpoint_dir=str(checkpoint))
    query = writer.start()
    try:
        query.processAllAvailable()
    finally:
        query.stop()
    written = spark.read.parquet(str(outbox)).collect()

    assert query.name == "sluice-e2e"
    assert (checkpoint / "offsets").is_dir()
    assert sorted(row.key for row in written) == [b"orders/0/1", b"orders/0/2"]
    values = sorted((json.loads(row.value) for row in written), key=lambda event: event["id"])
    assert [event["data"]["total"] for event in values] == [150, 250]
    assert values[0]["source"] == "kafka://orders"
