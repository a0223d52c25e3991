"""Query plans: the JSON of each record is parsed once, however many stages read the event,
and the pattern filter is one small Filter in generated code."""

from __future__ import annotations

import re

import pytest
from pyspark.sql import functions as F

from pipelines.query import apply_transforms
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
    assert text.count("parseJson") + text.count("ParseFunction.invoke") == 1
    assert "ParseFunction.invoke" in text


def filter_lines(plan_text: str) -> list[str]:
    """The Filter operators of a plan's tree string, as written there (one inside whole-stage
    code generation starts with ``*(n)``)."""
    lines = [line.lstrip(" :+-") for line in plan_text.splitlines()]
    return [line for line in lines if re.sub(r"^\*\(\d+\) ", "", line).startswith("Filter ")]


@pytest.mark.parametrize("source_format", ["json", "cloudevents"])
def test_the_pattern_filter_is_one_generated_filter_without_lambdas(spark, source_format):
    """Spark re-optimizes a streaming query's plan every micro-batch: the pattern filter is
    one Filter whose condition holds one ``matches`` call per top-level field of each rule,
    with no lambda, no column computed for it and nothing Spark must interpret."""
    records = spark.createDataFrame(
        [("t", 0, 1, b'{"amount": 150, "region": "eu-west", "status": "paid"}')],
        "topic string, partition int, offset long, value binary",
    ).withColumn("timestamp", F.current_timestamp())
    source = KafkaSourceConfig(bootstrap_servers="x:1", topics=["t"], format=source_format)
    events = kafka_records_to_events(records, source)
    alternatives = [{"id": ["t/0/1"]}, {"type": [{"anything-but": "x"}]}]
    pattern = {"source": [{"prefix": "kafka://"}], **PATTERN, "$or": alternatives}
    filtered = apply_transforms(events, [StageSpec(type="filter", config={"pattern": pattern})])

    optimized = filtered._jdf.queryExecution().optimizedPlan().toString()
    before = filter_lines(events._jdf.queryExecution().optimizedPlan().toString())
    filters = filter_lines(optimized)
    assert len(filters) == len(before) + 1
    (pattern_filter,) = [line for line in filters if "MatchesFunction.invoke" in line]
    # 2 rules x (source, data, id or type); the optimizer may factor out what they share
    assert 4 <= pattern_filter.count("MatchesFunction.invoke") <= 2 * 3
    assert "lambda" not in pattern_filter and "SPARK_PARTITION_ID" not in pattern_filter
    assert "__sluice" not in optimized
    executed = filter_lines(filtered._jdf.queryExecution().executedPlan().toString())
    (generated,) = [line for line in executed if "MatchesFunction.invoke" in line]
    assert generated.startswith("*(")  # inside whole-stage code generation
    assert filtered.count() == 1
