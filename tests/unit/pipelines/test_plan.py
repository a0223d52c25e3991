"""The JSON of each record is parsed once, however many stages read the event."""

from __future__ import annotations

import pytest
from pyspark.sql import functions as F

from pipelines.builder import apply_transforms
from pipelines.sinks.kafka import events_to_kafka_records
from pipelines.sources.kafka import kafka_records_to_events
from pipelines.spec import StageSpec
from pipelines.spec.configs import KafkaSinkConfig, KafkaSourceConfig

pytestmark = pytest.mark.spark

PATTERN = {
    "data": {
        "amount": [{"numeric": [">", 100]}],
        "region": [{"prefix": "eu-"}],
        "status": [{"anything-but": ["cancelled", "test"]}],
    }
}


@pytest.mark.parametrize("source_format", ["json", "cloudevents"])
def test_kafka_to_filter_to_kafka_parses_each_value_once(spark, source_format):
    records = spark.createDataFrame(
        [("t", 0, 1, b'{"amount": 150, "region": "eu-west", "status": "paid"}')],
        "topic string, partition int, offset long, value binary",
    ).withColumn("timestamp", F.current_timestamp())
    source = KafkaSourceConfig(bootstrap_servers="x:1", topics=["t"], format=source_format)
    events = kafka_records_to_events(records, source)
    filtered = apply_transforms(events, [StageSpec(type="filter", config={"pattern": PATTERN})])
    sink = KafkaSinkConfig(bootstrap_servers="x:1", topic="out", format="cloudevents")
    plan = events_to_kafka_records(filtered, sink)._jdf.queryExecution().executedPlan()

    text = plan.toString()
    # Spark's parse_json, or Sluice's (pipelines.native) when the session has it (it does here)
    assert text.count("parseJson") + text.count("VariantFunctions$Parse.invoke") == 1
    assert "VariantFunctions$Parse.invoke" in text
