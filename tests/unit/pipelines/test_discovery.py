"""Schema discovery: inference and merging (pure), and the sampling ``observe`` on Spark."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from pyspark.sql import SparkSession

from pipelines.builder import build_stream
from pipelines.discovery import (
    DISCOVERY_METRICS,
    SAMPLES,
    canonical,
    end_offsets,
    field_paths,
    infer,
    merge,
    merge_all,
    observes,
    samples_of,
)
from pipelines.spec import validate_spec


def test_a_value_is_inferred_with_nested_objects_and_arrays() -> None:
    schema = infer({"id": "1", "n": 3, "ok": True, "tags": ["a"], "o": {"x": 1.5, "y": None}})

    assert schema == {
        "type": "object",
        "properties": {
            "id": {"type": "string"},
            "n": {"type": "integer"},
            "ok": {"type": "boolean"},
            "tags": {"type": "array", "items": {"type": "string"}},
            "o": {
                "type": "object",
                "properties": {"x": {"type": "number"}, "y": {"type": "null"}},
            },
        },
    }


def test_merging_unites_fields_and_widens_types() -> None:
    a = infer({"amount": 3, "region": "eu", "lines": [{"sku": "a"}]})
    b = infer({"amount": 2.5, "region": None, "coupon": "X", "lines": [{"sku": "b", "qty": 2}]})

    merged = merge(a, b)

    props = merged["properties"]
    assert props["amount"] == {"type": "number"}  # integer and number: number
    assert props["region"] == {"type": ["null", "string"]}
    assert props["coupon"] == {"type": "string"}  # a field only one sample had
    assert props["lines"]["items"]["properties"] == {
        "sku": {"type": "string"},
        "qty": {"type": "integer"},
    }
    assert merge(merged, a) == merged and merge(a, merged) == merged  # idempotent, symmetric
    assert canonical(merge(b, a)) == canonical(merged)


def test_an_array_element_of_several_shapes_and_a_type_change_to_object() -> None:
    merged = merge_all([{"v": [1, "x", {"k": 1}]}, {"v": {"k": "s", "j": True}}])

    v = merged["properties"]["v"]
    assert v["type"] == ["array", "object"]
    assert v["items"]["type"] == ["integer", "string", "object"]
    assert v["properties"]["k"] == {"type": "string"}  # the object form's own
    assert v["items"]["properties"]["k"] == {"type": "integer"}
    assert field_paths(merged) == {
        "v": ["array", "object"],
        "v.k": ["integer", "string"],  # both forms: patterns match through arrays
        "v.j": ["boolean"],
    }


def test_an_empty_array_learns_its_items_later() -> None:
    merged = merge_all([{"a": []}, {"a": [1]}])
    assert merged["properties"]["a"] == {"type": "array", "items": {"type": "integer"}}
    assert merge_all([]) == {}


def test_field_paths_follow_an_event_json_form() -> None:
    event = {"id": "1", "type": "t", "data": {"order": {"amount": 3}, "items": [{"sku": "s"}]}}
    assert field_paths(infer(event)) == {
        "id": ["string"],
        "type": ["string"],
        "data": ["object"],
        "data.order": ["object"],
        "data.order.amount": ["integer"],
        "data.items": ["array"],
        "data.items.sku": ["string"],
    }


def test_the_kafka_offsets_reached_are_read_from_a_progress_report() -> None:
    progress = {
        "sources": [
            {"endOffset": {"orders": {"0": 12, "1": 0}}},
            {"endOffset": '{"refunds": {"2": 5}}'},
            {"endOffset": {"logOffset": 3}},  # a file source's: no Kafka offsets
        ]
    }
    assert end_offsets(progress) == {"orders": {"0": 12, "1": 0}, "refunds": {"2": 5}}
    assert end_offsets(None) == {} and end_offsets({"sources": None}) == {}
    assert observes("generator") and observes("files")
    assert not observes("kafka") and not observes("http")


def test_samples_are_taken_out_of_a_progress_report() -> None:
    event = {"id": "1", "data": {"n": 1}}
    progress = {
        "batchId": 3,
        "observedMetrics": {
            DISCOVERY_METRICS: {"s0": json.dumps(event), "s1": json.dumps(event), "s2": None},
            "other": {"rows": 4},
        },
    }

    assert samples_of(progress) == [event]  # duplicates dropped
    assert samples_of(progress, remove=True) == [event]
    assert progress["observedMetrics"] == {"other": {"rows": 4}}
    assert samples_of(None) == [] and samples_of({"batchId": 1}) == []


@pytest.mark.spark
def test_a_channel_with_discovery_reports_sampled_events(
    spark: SparkSession, tmp_path: Path
) -> None:
    inbox = tmp_path / "in"
    inbox.mkdir()
    lines = [{"n": n, "kind": "a"} for n in range(40)] + [{"n": 1.5, "extra": [{"k": 1}]}]
    (inbox / "a.jsonl").write_text("".join(json.dumps(line) + "\n" for line in lines))
    spec = validate_spec(
        {
            "source": {"type": "files", "config": {"path": str(inbox)}},
            "sink": {"type": "preview", "config": {"max_events": 5}},
        }
    )
    query = build_stream(
        spark, spec, channel="disc", checkpoint_dir=str(tmp_path / "cp"), discovery=True
    ).start()
    try:
        query.processAllAvailable()
        progress = json.loads(query.lastProgress.json)
    finally:
        query.stop()

    samples = samples_of(progress)
    assert 1 <= len(samples) <= SAMPLES
    assert all(sample["data"] in lines for sample in samples)
    assert all(sample["specversion"] == "1.0" and sample["id"] for sample in samples)
    assert set(field_paths(merge_all(samples))) >= {"id", "source", "type", "data", "data.n"}

    plain = build_stream(spark, spec, channel="plain", checkpoint_dir=str(tmp_path / "cp2"))
    query = plain.start()
    try:
        query.processAllAvailable()
        progress = json.loads(query.lastProgress.json)
    finally:
        query.stop()
    assert DISCOVERY_METRICS not in (progress.get("observedMetrics") or {})
