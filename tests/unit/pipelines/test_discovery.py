"""Schema discovery: inference and merging (pure), and the sampling of each source beside
its query, on Spark."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from pyspark.sql import SparkSession

from pipelines.discovery import (
    EVENTS_PER_FILE,
    FILE_HEAD_BYTES,
    GENERATOR_SAMPLES,
    SAMPLE_SECONDS,
    SourceSampler,
    canonical,
    end_offsets,
    field_paths,
    infer,
    merge,
    merge_all,
    newest_files,
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


def _files_spec(inbox: Path, **config: object) -> object:
    return validate_spec(
        {
            "source": {"type": "files", "config": {"path": str(inbox), **config}},
            "sink": {"type": "preview", "config": {"max_events": 5}},
        }
    )


def test_the_newest_files_a_files_source_reads_are_listed(tmp_path: Path) -> None:
    inbox = tmp_path / "in"
    inbox.mkdir()
    for index, name in enumerate(["a.jsonl", "b.jsonl", "c.txt", ".hidden.jsonl", "_tmp.jsonl"]):
        (inbox / name).write_text("{}\n")
        os.utime(inbox / name, ns=(10**18 + index, 10**18 + index))
    (inbox / "sub").mkdir()
    spec = _files_spec(inbox, file_pattern="*.jsonl")
    config = SourceSampler(spec).config
    assert [f.path.name for f in newest_files(config)] == ["b.jsonl", "a.jsonl"]
    assert [f.path.name for f in newest_files(config, 5)] == ["b.jsonl", "a.jsonl"]


@pytest.mark.spark
def test_a_files_channel_is_sampled_beside_its_query_from_its_newest_files(
    spark: SparkSession, tmp_path: Path
) -> None:
    inbox = tmp_path / "in"
    inbox.mkdir()
    lines = [{"n": n, "kind": "a"} for n in range(40)]
    (inbox / "a.jsonl").write_text("".join(json.dumps(line) + "\n" for line in lines))
    sampler = SourceSampler(_files_spec(inbox))
    progress = {"batchId": 0}

    assert sampler.sample(spark, None, 100.0) == []  # no batch yet: nothing sampled
    samples = sampler.sample(spark, progress, 100.0)
    assert len(samples) == EVENTS_PER_FILE
    assert [s["data"] for s in samples] == lines[:EVENTS_PER_FILE]
    assert all(s["specversion"] == "1.0" and s["id"].startswith("a.jsonl/") for s in samples)
    assert set(field_paths(merge_all(samples))) >= {"id", "source", "type", "data", "data.n"}
    assert sampler.sample(spark, progress, 101.0) == []  # not before SAMPLE_SECONDS
    assert sampler.sample(spark, progress, 100.0 + SAMPLE_SECONDS) == []  # no newer file

    # a newer file, longer than what is read of it: whole lines of its head, a bad line skipped
    big = ["not json"] + [json.dumps({"n": n, "extra": [{"k": n}]}) for n in range(5000)]
    (inbox / "b.jsonl").write_text("\n".join(big) + "\n")
    assert (inbox / "b.jsonl").stat().st_size > FILE_HEAD_BYTES
    later = sampler.sample(spark, progress, 100.0 + 2 * SAMPLE_SECONDS)
    paths = set(field_paths(merge_all(later)))
    assert "data.extra.k" in paths and "data.kind" in paths  # both files' shapes


@pytest.mark.spark
def test_a_csv_channel_is_sampled_with_its_header(spark: SparkSession, tmp_path: Path) -> None:
    inbox = tmp_path / "csv"
    inbox.mkdir()
    (inbox / "a.csv").write_text("sku,qty\nA-1,3\nB-2,4\n")
    sampler = SourceSampler(_files_spec(inbox, format="csv"))
    samples = sampler.sample(spark, {"batchId": 3}, 0.0)
    assert [s["data"] for s in samples] == [{"sku": "A-1", "qty": "3"}, {"sku": "B-2", "qty": "4"}]


@pytest.mark.spark
def test_a_generator_channel_is_sampled_from_its_config(spark: SparkSession) -> None:
    template = {"order_id": "o-{{seq}}", "amount": "{{number:1:9}}", "region": "{{choice:eu,us}}"}
    spec = validate_spec(
        {
            "source": {"type": "generator", "config": {"template": template}},
            "sink": {"type": "preview", "config": {"max_events": 5}},
        }
    )
    sampler = SourceSampler(spec)
    samples = sampler.sample(spark, {"batchId": 5}, 0.0)
    assert len(samples) == GENERATOR_SAMPLES
    assert [s["id"] for s in samples] == ["generator/10", "generator/11"]
    assert samples[0]["data"]["order_id"] == "o-10" and samples[0]["data"]["region"] in ("eu", "us")
    assert isinstance(samples[0]["data"]["amount"], int)


@pytest.mark.spark
def test_discovery_leaves_the_query_alone(spark: SparkSession, tmp_path: Path) -> None:
    """The query is built without knowing whether discovery is on: no observe in it."""
    import inspect

    from pipelines import builder, query

    assert "discovery" not in inspect.signature(builder.build_stream).parameters
    assert "discovery" not in inspect.signature(query.build_events).parameters
    inbox = tmp_path / "in"
    inbox.mkdir()
    events = query.build_events(spark, _files_spec(inbox))
    assert "CollectMetrics" not in events._jdf.queryExecution().analyzed().toString()
