"""Filters first, then the whole data: a Kafka JSON channel whose leading filters read a few
members parses each record pruned to them, and in full only the events they keep
(:class:`pipelines.query.DeferredParse`); what it writes and fails is the same as parsing
every record whole."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from pipelines.patterns.steps import member_paths
from pipelines.query import DeferredParse, apply_transforms, deferred_parse, writes_data_as_read
from pipelines.sinks.kafka import events_to_kafka_records
from pipelines.sources.kafka import DEFERRED_TEXT, kafka_records_to_events
from pipelines.spec import StageSpec, validate_spec
from pipelines.spec.configs import KafkaSinkConfig, KafkaSourceConfig

PATTERN = {
    "data": {
        "amount": [{"numeric": [">", 100]}],
        "region": [{"prefix": "eu-"}],
        "customer": {"tier": ["gold"]},
    },
    "source": [{"prefix": "kafka://"}],
}
SOURCE = KafkaSourceConfig(bootstrap_servers="x:1", topics=["t"])
SINK = KafkaSinkConfig(bootstrap_servers="x:1", topic="out", format="cloudevents")


def test_member_paths_are_the_paths_a_pattern_reads_below_a_member() -> None:
    paths = member_paths(PATTERN, "data")
    assert paths is not None
    assert sorted(paths) == [("amount",), ("customer", "tier"), ("region",)]
    assert member_paths(PATTERN, "source") is None  # a step on the member's own value
    assert member_paths({"source": ["x"]}, "data") == []
    either = {"$or": [{"data": {"a": [1]}}, {"data": {"b": {"c": [2]}, "a": [3]}}]}
    assert sorted(member_paths(either, "data") or []) == [("a",), ("b", "c")]


def spec(*transforms: dict[str, Any], source_format: str = "json") -> Any:
    return validate_spec(
        {
            "source": {
                "type": "kafka",
                "config": {"bootstrap_servers": "x:1", "topics": ["t"], "format": source_format},
            },
            "transforms": list(transforms),
            "sink": {"type": "kafka", "config": {"bootstrap_servers": "x:1", "topic": "out"}},
        }
    )


FILTER = {"type": "filter", "config": {"pattern": PATTERN}}
MORE = {"type": "filter", "config": {"pattern": {"data": {"status": ["paid"]}}}}
CAST = {"type": "insert", "config": {"field": "data.channel", "value": "web"}}


@pytest.mark.spark
def test_which_channels_parse_after_their_filters(spark: SparkSession) -> None:
    paths = member_paths(PATTERN, "data")
    assert paths is not None
    assert deferred_parse(spark, spec(FILTER)) == DeferredParse(1, paths)
    assert deferred_parse(spark, spec(FILTER, MORE)) == DeferredParse(2, [*paths, ("status",)])
    assert deferred_parse(spark, spec(FILTER, CAST, MORE)) == DeferredParse(1, paths)
    assert deferred_parse(spark, spec(CAST, FILTER)) is None  # not a filter first
    assert deferred_parse(spark, spec()) is None
    assert deferred_parse(spark, spec(FILTER, source_format="cloudevents")) is None
    whole = {"type": "filter", "config": {"pattern": {"data": [{"exists": True}]}}}
    assert deferred_parse(spark, spec(FILTER, whole)) is None  # reads data itself


RECORDS = [
    b'{"amount": 150.5, "region": "eu-west", "customer": {"tier": "gold", "id": 7}, "x": [1]}',
    b'{"amount": 150, "region": "eu-west", "customer": [{"tier": "silver"}, {"tier": "gold"}]}',
    b'{"amount": 150, "region": "us-east", "customer": {"tier": "gold"}}',
    b'{"amount": 150, "region": "eu-west", "customer": {"tier": "gold"}, "a": {"b": 1, "b": 2}}',
    b'{"amount": 150, "region": "eu-west", "customer": {"tier": "gold"}, "note": "\\ud800"}',
    b'{"amount": 150, "region": "eu-west", "customer": {"tier": "gold"}, "note": "\\u00e9"}',
    b'{"amount": 150, "region": "eu-west", "customer": {"tier": "gold"}, "skip": [1,,2]}',
    b'{"amount": 1e3, "region": "eu-north", "customer": {"tier": "gold"}}',
    b"not json",
    b"[1, 2]",
]


def written(events: DataFrame) -> list[tuple[Any, ...]]:
    records = events_to_kafka_records(events, SINK)
    rows = records.select(
        F.col("key").cast("string"), F.col("value").cast("string"), "topic"
    ).collect()
    return sorted(tuple(row) for row in rows)


def failures(events: DataFrame) -> list[tuple[Any, ...]]:
    rows = events.where(F.col("failure").isNotNull()).select("id", "failure").collect()
    return sorted((row["id"], tuple(row["failure"])) for row in rows)


@pytest.mark.spark
def test_a_deferred_parse_writes_and_fails_what_a_whole_parse_does(
    spark: SparkSession, kafka_records: Callable[..., Any]
) -> None:
    records = kafka_records([("t", 0, offset, value) for offset, value in enumerate(RECORDS)])
    stages = [StageSpec(type="filter", config={"pattern": PATTERN}), StageSpec(**CAST)]
    whole = apply_transforms(kafka_records_to_events(records, SOURCE), stages)
    plan = deferred_parse(spark, spec(FILTER, CAST))
    assert plan is not None
    pruned = kafka_records_to_events(records, SOURCE, data_paths=plan.paths)
    assert DEFERRED_TEXT in pruned.columns
    deferred = apply_transforms(pruned, stages, parse_data_before=plan.filters)
    assert deferred.columns == whole.columns

    assert written(deferred.where(F.col("failure").isNull())) == written(
        whole.where(F.col("failure").isNull())
    )
    assert len(written(whole.where(F.col("failure").isNull()))) == 4  # gold, in eu, over 100
    assert failures(deferred) == failures(whole)
    assert [id_ for id_, _ in failures(whole)] == ["t/0/3", "t/0/4", "t/0/6", "t/0/8"]

    text = deferred._jdf.queryExecution().executedPlan().toString()
    assert text.count("PrunedParseFunction.invoke") == 1
    assert text.count("io.sluice.spark.ParseFunction.invoke") == 1  # the events kept


@pytest.mark.spark
def test_filters_only_parse_whole_data_at_the_end(
    spark: SparkSession, kafka_records: Callable[..., Any]
) -> None:
    records = kafka_records([("t", 0, 0, RECORDS[0]), ("t", 0, 1, RECORDS[2])])
    stages = [StageSpec(type="filter", config={"pattern": PATTERN})]
    pruned = kafka_records_to_events(records, SOURCE, data_paths=member_paths(PATTERN, "data"))
    events = apply_transforms(pruned, stages, parse_data_before=1)
    assert DEFERRED_TEXT not in events.columns
    (row,) = events.select(F.to_json("data").alias("data")).collect()
    assert '"x":[1]' in row["data"]  # the whole data, not the pruned one


AS_READ = [
    b'  {"region": "eu-west", "amount": 1e3, "customer": {"tier": "gold"}, "x": [{"b": null}]}\n',
    b'{"amount":150.50,"region":"eu-west","customer":{"tier":"gold"},"note":"\\u00e9 \\"q\\""}',
    b'{"amount": 150, "region": "eu-west", "customer": {"tier": "gold"}, "note": "caf\xc3\xa9"}',
    b'{"amount": 150, "region": "us-east", "customer": {"tier": "gold"}}',
    b'{"amount": 150, "region": "eu-west", "customer": {"tier": "gold"}, "a": {"b": 1, "b": 2}}',
    b"not json",
]


@pytest.mark.spark
@pytest.mark.parametrize("sink_format", ["cloudevents", "json"])
def test_data_as_read_is_the_same_json_as_the_data_parsed_and_written_again(
    spark: SparkSession, kafka_records: Callable[..., Any], sink_format: str
) -> None:
    import json

    sink = KafkaSinkConfig(bootstrap_servers="x:1", topic="out", format=sink_format)
    rows = [("t", 0, offset, value, b"k") for offset, value in enumerate(AS_READ)]
    records = kafka_records(rows)  # keyed: a partitionkey extension, the sorted members' path
    stages = [StageSpec(type="filter", config={"pattern": PATTERN})]
    whole = apply_transforms(kafka_records_to_events(records, SOURCE), stages)
    paths = member_paths(PATTERN, "data")
    as_read = apply_transforms(kafka_records_to_events(records, SOURCE, data_paths=paths), stages)
    assert DEFERRED_TEXT in as_read.columns

    def values(events: DataFrame) -> list[str]:
        rows = events_to_kafka_records(events.where(F.col("failure").isNull()), sink).select(
            F.col("value").cast("string")
        )
        return sorted(row[0] for row in rows.collect())

    expected, got = values(whole), values(as_read)
    assert len(got) == 3  # gold, in eu, over 100; the duplicate member and "not json" fail
    assert sorted(json.dumps(json.loads(t), sort_keys=True) for t in got) == sorted(
        json.dumps(json.loads(t), sort_keys=True) for t in expected
    )
    assert failures(as_read) == failures(whole)
    texts = [record.decode().strip() for record in AS_READ[:3]]
    if sink_format == "json":
        assert got == sorted(texts)
    else:  # the record's text in place of the data, the rest as the event path writes it
        written_by_id = {json.loads(t)["id"]: t for t in expected}
        for offset, record in enumerate(texts):
            rest = written_by_id[f"t/0/{offset}"]
            rest = rest[rest.index('"datacontenttype"') :]
            assert f'{{"data":{record},{rest}' in got
    text = events_to_kafka_records(as_read, sink)._jdf.queryExecution().executedPlan().toString()
    assert "io.sluice.spark.ParseFunction.invoke" not in text  # no event parsed whole


def test_which_channels_write_their_data_as_read(spark: SparkSession) -> None:
    def sink(**config: Any) -> dict[str, Any]:
        return {"type": "kafka", "config": {"bootstrap_servers": "x:1", "topic": "o", **config}}

    def channel(*transforms: dict[str, Any], **sink_config: Any) -> Any:
        source = {"bootstrap_servers": "x:1", "topics": ["t"], "format": "json"}
        return validate_spec(
            {
                "source": {"type": "kafka", "config": source},
                "transforms": list(transforms),
                "sink": sink(**sink_config),
            }
        )

    assert writes_data_as_read(spark, channel(FILTER), None)
    assert writes_data_as_read(spark, channel(FILTER, MORE, format="json"), None)
    assert not writes_data_as_read(spark, channel(FILTER, CAST), None)  # the data changes
    assert not writes_data_as_read(spark, channel(), None)  # nothing pruned: a pass-through
    assert not writes_data_as_read(spark, channel(FILTER, format="cloudevents-binary"), None)
    assert not writes_data_as_read(spark, channel(FILTER, format="avro"), None)
    assert not writes_data_as_read(spark, channel(FILTER, key_field="data.region"), None)
    assert not writes_data_as_read(spark, channel(FILTER, topic_field="data.region"), None)
    retried = {"retry": {"attempts": 3}}
    assert not writes_data_as_read(spark, channel(FILTER, **retried), None)
