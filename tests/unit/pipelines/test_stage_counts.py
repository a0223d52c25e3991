"""Per-stage event counts: observed in the same pass as the data, read from a query's progress.

Real streaming queries from a files source into a files sink; each micro-batch reports,
per stage, the events that came in, went out and failed (``pipelines.stage_metrics.stage_counts``).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from pyspark.sql import SparkSession

from pipelines.builder import build_stream
from pipelines.spec import validate_spec
from pipelines.stage_metrics import STAGE_METRICS, StagePoint, stage_counts, stage_points

# n=1 and n=0 are dropped by the filter, n=2 is unreadable (the source fails it), n=3 fails
# the cast; n=4 and n=5 reach the sink.
LINES = [
    '{"n": 1, "qty": "3"}',
    '{"n": 2, "qty": ',
    '{"n": 3, "qty": "many"}',
    '{"n": 4}',
    '{"n": 5, "qty": "7"}',
    '{"n": 0, "qty": "x"}',
]
EXPECTED = [
    {"stage": "source", "index": None, "type": "files", "in": 6, "out": 5, "failed": 1},
    {"stage": "transform", "index": 0, "type": "filter", "in": 5, "out": 3, "failed": 0},
    {"stage": "transform", "index": 1, "type": "cast", "in": 3, "out": 2, "failed": 1},
    {"stage": "sink", "index": None, "type": "files", "in": 2, "out": 2, "failed": 0},
]


def channel_spec(tmp_path: Path, tolerance: str) -> dict[str, Any]:
    return {
        "source": {"type": "files", "config": {"path": str(tmp_path / "in"), "format": "jsonl"}},
        "transforms": [
            {"type": "filter", "config": {"pattern": {"data": {"n": [{"numeric": [">", 1]}]}}}},
            {"type": "cast", "config": {"fields": {"data.qty": "long"}}},
        ],
        "sink": {"type": "files", "config": {"path": str(tmp_path / "out"), "format": "jsonl"}},
        "errors": {"tolerance": tolerance},
    }


def run_batches(
    spark: SparkSession, tmp_path: Path, spec: dict[str, Any], batches: list[list[str]]
) -> list[dict[str, Any]]:
    """Run the channel over one file per batch; return the progress of each batch run."""
    inbox = tmp_path / "in"
    inbox.mkdir(exist_ok=True)
    writer = build_stream(
        spark,
        validate_spec(spec),
        channel="counts-test",
        checkpoint_dir=str(tmp_path / "checkpoint"),
    )
    query = writer.start()
    try:
        for number, lines in enumerate(batches):
            (inbox / f"part-{number}.jsonl").write_text("\n".join(lines) + "\n")
            query.processAllAvailable()
        progress = [json.loads(p.json) for p in query.recentProgress if p.numInputRows]
    finally:
        query.stop()
    return progress


@pytest.mark.spark
def test_each_stage_counts_events_in_out_and_failed(spark: SparkSession, tmp_path: Path) -> None:
    """Under ``errors.tolerance: all`` the query runs through foreachBatch: counts still come."""
    spec = channel_spec(tmp_path, "all")
    (progress,) = run_batches(spark, tmp_path, spec, [LINES])
    observed = progress["observedMetrics"]
    # The rows reaching the filter (one per record read: a files source reads a whole file
    # as one row, so its numInputRows is not the events), then everything before the gate.
    assert observed == {
        f"{STAGE_METRICS}.before_1": {"rows": 6},
        STAGE_METRICS: {"rows": 4, "failed_0": 1, "failed_1": 0, "failed_2": 1, "failed_3": 0},
    }
    assert progress["numInputRows"] == 1
    assert stage_counts(stage_points(spec), observed, rows_read=1) == EXPECTED
    # The sink got what the last stage let out.
    written = [json.loads(row.value) for row in spark.read.text(str(tmp_path / "out")).collect()]
    assert sorted(event["n"] for event in written) == [4, 5]


@pytest.mark.spark
def test_counts_come_per_batch_under_tolerance_none(spark: SparkSession, tmp_path: Path) -> None:
    spec = channel_spec(tmp_path, "none")
    good = ['{"n": 2, "qty": "1"}', '{"n": 0}', '{"n": 7, "qty": "2"}']
    first, second = run_batches(spark, tmp_path, spec, [good, good[:1]])
    points = stage_points(spec)

    def counted(progress: dict[str, Any]) -> list[dict[str, Any]]:
        counts = stage_counts(
            points, progress["observedMetrics"], rows_read=progress["numInputRows"]
        )
        assert counts is not None
        return counts

    assert [(s["in"], s["out"], s["failed"]) for s in counted(first)] == [
        (3, 3, 0),
        (3, 2, 0),
        (2, 2, 0),
        (2, 2, 0),
    ]
    assert [(s["in"], s["out"]) for s in counted(second)] == [
        (1, 1),
        (1, 1),
        (1, 1),
        (1, 1),
    ]


def test_a_batch_without_observed_metrics_has_no_counts() -> None:
    points = [
        StagePoint(0, "source", None, "kafka", "source"),
        StagePoint(1, "transform", 0, "filter", "transforms[0] (filter)"),
        StagePoint(2, "sink", None, "kafka", "sink"),
    ]
    assert stage_counts(points, {}) is None
    assert stage_counts(points, {STAGE_METRICS: {"rows": 4}}) is None  # the filter's missing
    observed = {f"{STAGE_METRICS}.before_1": {"rows": 4}, STAGE_METRICS: {"rows": 3}}
    assert stage_counts(points, observed) == [
        {"stage": "source", "index": None, "type": "kafka", "in": 4, "out": 4, "failed": 0},
        {"stage": "transform", "index": 0, "type": "filter", "in": 4, "out": 3, "failed": 0},
        {"stage": "sink", "index": None, "type": "kafka", "in": 3, "out": 3, "failed": 0},
    ]
    # The first filter is never observed: it gets every record read.
    assert stage_counts(points, {STAGE_METRICS: {"rows": 3}}, rows_read=4) == [
        {"stage": "source", "index": None, "type": "kafka", "in": 4, "out": 4, "failed": 0},
        {"stage": "transform", "index": 0, "type": "filter", "in": 4, "out": 3, "failed": 0},
        {"stage": "sink", "index": None, "type": "kafka", "in": 3, "out": 3, "failed": 0},
    ]
    # A sink that reports the rows it wrote stands for the gate's count (tolerance none).
    assert stage_counts(points, {}, rows_read=4, rows_written=3) == stage_counts(points, observed)
    assert stage_counts(points, {}, rows_read=4, rows_written=-1) is None  # not reported
    no_filter = [points[0], StagePoint(1, "sink", None, "kafka", "sink")]
    assert stage_counts(no_filter, {STAGE_METRICS: {"rows": 5, "failed_1": 2}}) == [
        {"stage": "source", "index": None, "type": "kafka", "in": 5, "out": 5, "failed": 0},
        {"stage": "sink", "index": None, "type": "kafka", "in": 5, "out": 3, "failed": 2},
    ]


def interpreted_operators(df: Any) -> list[str]:
    """The operators of ``df``'s physical plan outside whole-stage code generation."""
    plan = df._jdf.queryExecution().executedPlan().toString()
    operators = [line.lstrip(" :+-") for line in plan.splitlines()]
    return sorted(op.split(" ")[0] for op in operators if op and not op.startswith("*("))


@pytest.mark.spark
def test_counting_keeps_the_plan_compiled_and_parses_once(spark: SparkSession) -> None:
    """The observes add CollectMetrics nodes between compiled stages; every other operator
    stays in generated code, and each record's JSON is still parsed once.

    A CollectMetrics node is a barrier to the optimizer, so the source's constant
    ``extensions`` (an empty map) no longer folds into the sink's CloudEvents projection,
    which keeps its branch for events with extensions. That branch is Sluice's ``event()``
    function, generated code like the rest (it was ``map_filter``, a higher-order function
    without code generation, which made the projection a plain ``ProjectExec``).
    ``python -m bench.stage_counts`` measures the whole difference.
    """
    from pyspark.sql import functions as F

    from pipelines.errors import capturing_failed_events, fail_fast, failing_stage
    from pipelines.query import apply_transforms
    from pipelines.sinks.kafka import events_to_kafka_records
    from pipelines.sources.kafka import kafka_records_to_events
    from pipelines.spec import StageSpec
    from pipelines.spec.configs import KafkaSinkConfig, KafkaSourceConfig
    from pipelines.stage_metrics import observe_stages

    records = spark.createDataFrame(
        [("t", 0, 1, b'{"amount": 150, "region": "eu-west"}')],
        "topic string, partition int, offset long, value binary",
    ).withColumn("timestamp", F.current_timestamp())
    source = KafkaSourceConfig(bootstrap_servers="x:1", topics=["t"], format="json")
    sink = KafkaSinkConfig(bootstrap_servers="x:1", topic="out", format="cloudevents")
    pattern = {"data": {"amount": [{"numeric": [">", 100]}], "region": [{"prefix": "eu-"}]}}
    spec = {
        "source": {"type": "kafka", "config": source.model_dump(mode="json")},
        "transforms": [{"type": "filter", "config": {"pattern": pattern}}],
        "sink": {"type": "kafka", "config": sink.model_dump(mode="json")},
    }

    def query(count: bool) -> Any:
        with capturing_failed_events(False), failing_stage("source"):
            events = kafka_records_to_events(records, source)
            stages = [StageSpec(type="filter", config={"pattern": pattern})]
            events = apply_transforms(events, stages, count_stages=count)
            if count:
                events = observe_stages(events, stage_points(spec))
            return events_to_kafka_records(fail_fast(events), sink)

    plain, counted = query(False), query(True)
    assert interpreted_operators(counted) == sorted(
        [*interpreted_operators(plain), "CollectMetrics"]
    )
    root = counted._jdf.queryExecution().executedPlan()
    assert root.nodeName().startswith("WholeStageCodegen")  # the sink's projection included
    text = counted._jdf.queryExecution().executedPlan().toString()
    assert text.count("parseJson") + text.count("ParseFunction.invoke") == 1
    assert counted.count() == 1


@pytest.mark.spark
@pytest.mark.parametrize("count", [True, False])
def test_counting_can_be_left_out(spark: SparkSession, tmp_path: Path, count: bool) -> None:
    (tmp_path / "in").mkdir()
    writer = build_stream(
        spark,
        validate_spec(channel_spec(tmp_path, "none")),
        channel="counts-test",
        checkpoint_dir=str(tmp_path / "checkpoint"),
        count_stages=count,
    )
    plan = writer._df._jdf.queryExecution().logical().toString()  # type: ignore[attr-defined]
    # Before the filter (a files source's rows are files, not events) and the gate (a files
    # sink does not report the rows it wrote).
    assert plan.count("CollectMetrics") == (2 if count else 0)


def kafka_spec(tolerance: str, filters: int) -> dict[str, Any]:
    servers = "127.0.0.1:1"
    kafka = {"bootstrap_servers": servers, "topic": "out"}
    pattern = {"data": {"n": [{"numeric": [">", 1]}]}}
    return {
        "source": {"type": "kafka", "config": {"bootstrap_servers": servers, "topics": ["in"]}},
        "transforms": [{"type": "filter", "config": {"pattern": pattern}}] * filters,
        "sink": {"type": "kafka", "config": kafka},
        "errors": {"tolerance": tolerance},
    }


@pytest.mark.spark
@pytest.mark.parametrize(
    ("tolerance", "filters", "observes"),
    [
        ("none", 1, 0),  # kafka → filter → kafka: counted for free from the progress
        ("none", 2, 1),  # the second filter needs the rows reaching it
        ("all", 1, 1),  # failures per stage: the gate is observed
    ],
)
def test_a_kafka_channel_observes_only_what_the_progress_does_not_tell(
    spark: SparkSession, tmp_path: Path, tolerance: str, filters: int, observes: int
) -> None:
    writer = build_stream(
        spark,
        validate_spec(kafka_spec(tolerance, filters)),
        channel="counts-test",
        checkpoint_dir=str(tmp_path / "checkpoint"),
    )
    plan = writer._df._jdf.queryExecution().logical().toString()  # type: ignore[attr-defined]
    assert plan.count("CollectMetrics") == observes


@pytest.mark.spark
def test_a_bus_counts_its_source_and_shared_transforms(spark: SparkSession, tmp_path: Path) -> None:
    """A bus's rules are counted per rule; its source and shared transforms as a linear
    channel's stages (the walk found a bus with no count for them)."""
    spec = channel_spec(tmp_path, "all")
    sink = spec.pop("sink")
    spec["rules"] = [{"name": "all", "sinks": [sink]}]
    (progress,) = run_batches(spark, tmp_path, spec, [LINES])
    counts = stage_counts(stage_points(spec), progress["observedMetrics"], rows_read=1)
    assert counts == EXPECTED[:3]  # source, filter, cast: the rules follow
    written = [json.loads(row.value) for row in spark.read.text(str(tmp_path / "out")).collect()]
    assert sorted(event["n"] for event in written) == [4, 5]


@pytest.mark.spark
def test_a_strict_bus_counts_its_shared_stages_once(spark: SparkSession, tmp_path: Path) -> None:
    spec = channel_spec(tmp_path, "none")
    sink = spec.pop("sink")
    spec["rules"] = [
        {"name": "a", "sinks": [sink]},
        {"name": "b", "pattern": {"data": {"n": [7]}}, "sinks": [sink]},
    ]
    good = ['{"n": 2, "qty": "1"}', '{"n": 0}', '{"n": 7, "qty": "2"}']
    (progress,) = run_batches(spark, tmp_path, spec, [good])
    counts = stage_counts(
        stage_points(spec), progress["observedMetrics"], rows_read=progress["numInputRows"]
    )
    assert counts is not None
    assert [(s["in"], s["out"], s["failed"]) for s in counts] == [(3, 3, 0), (3, 2, 0), (2, 2, 0)]
