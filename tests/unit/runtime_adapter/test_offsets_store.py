"""Offsets on the runtime side without Spark: checkpoint files (in Spark 4.2's format, as a
real query writes them), the pending change in real Redis, and SparkRuntime's answers."""

from __future__ import annotations

from pathlib import Path

import pytest

from runtime_adapter.base import ConnectorOffsets, OffsetChange, SourceOffset
from runtime_adapter.checkpoint import (
    CheckpointError,
    append_batch,
    has_batches,
    latest_committed,
    parse_kafka_offsets,
    uncommitted_batch_ids,
)
from runtime_adapter.offsets import with_starting_offsets
from runtime_adapter.spark import SparkRuntime
from runtime_adapter.store import RedisStore

METADATA = (
    '{"batchWatermarkMs":0,"batchTimestampMs":1795275176698,'
    '"conf":{"spark.sql.shuffle.partitions":"2"}}'
)
COMMIT = 'v1\n{"nextBatchWatermarkMs":0}'


def write_batch(checkpoint: Path, batch_id: int, source: str, *, committed: bool = True) -> None:
    """A batch as Spark writes it (offsets file without a trailing newline)."""
    (checkpoint / "offsets").mkdir(parents=True, exist_ok=True)
    (checkpoint / "commits").mkdir(parents=True, exist_ok=True)
    (checkpoint / "offsets" / str(batch_id)).write_text(f"v1\n{METADATA}\n{source}")
    (checkpoint / "offsets" / f".{batch_id}.crc").write_bytes(b"crc")
    if committed:
        (checkpoint / "commits" / str(batch_id)).write_text(COMMIT)


# -- checkpoint files ----------------------------------------------------------------------------


def test_no_checkpoint_has_no_committed_offsets(tmp_path):
    assert latest_committed(tmp_path / "none") is None
    assert not has_batches(tmp_path / "none")


def test_the_latest_committed_batch_is_read(tmp_path):
    write_batch(tmp_path, 0, '{"orders":{"0":10,"1":5}}')
    write_batch(tmp_path, 1, '{"orders":{"0":42,"1":17}}')
    write_batch(tmp_path, 2, '{"orders":{"0":50,"1":20}}', committed=False)

    found = latest_committed(tmp_path)

    assert found.batch_id == 1
    assert found.kafka == {("orders", 0): 42, ("orders", 1): 17}


def test_a_files_source_has_no_kafka_offsets(tmp_path):
    write_batch(tmp_path, 0, '{"logOffset":3}')

    assert latest_committed(tmp_path).kafka is None
    assert parse_kafka_offsets("7") is None


def test_append_batch_adds_a_committed_batch_with_the_new_offsets(tmp_path):
    write_batch(tmp_path, 0, '{"orders":{"0":10}}')
    write_batch(tmp_path, 1, '{"orders":{"0":100,"1":100}}')

    batch_id = append_batch(tmp_path, {("orders", 1): 7, ("orders", 0): 40})

    assert batch_id == 2
    assert (tmp_path / "offsets" / "2").read_text() == (
        f'v1\n{METADATA}\n{{"orders":{{"0":40,"1":7}}}}'
    )
    assert (tmp_path / "commits" / "2").read_text() == COMMIT
    assert latest_committed(tmp_path).kafka == {("orders", 0): 40, ("orders", 1): 7}
    assert sorted(p.name for p in (tmp_path / "offsets").iterdir() if "tmp" in p.name) == []


def test_append_batch_supersedes_a_planned_but_uncommitted_batch(tmp_path):
    write_batch(tmp_path, 0, '{"orders":{"0":10}}')
    write_batch(tmp_path, 1, '{"orders":{"0":20}}', committed=False)

    assert append_batch(tmp_path, {("orders", 0): 3}) == 2
    assert latest_committed(tmp_path).batch_id == 2


def test_append_batch_needs_a_planned_batch(tmp_path):
    with pytest.raises(CheckpointError):
        append_batch(tmp_path, {("orders", 0): 3})


def test_a_foreign_file_is_refused(tmp_path):
    (tmp_path / "offsets").mkdir()
    (tmp_path / "commits").mkdir()
    (tmp_path / "offsets" / "0").write_text("v9\n{}\n{}")
    (tmp_path / "commits" / "0").write_text(COMMIT)

    with pytest.raises(CheckpointError):
        latest_committed(tmp_path)


def test_starting_offsets_override_names_every_partition():
    spec = {"source": {"type": "kafka", "config": {"topics": ["orders"]}}}

    updated = with_starting_offsets(spec, {("orders", 1): 5, ("orders", 0): 2})

    assert updated["source"]["config"]["starting_offsets"] == {
        "offsets": {"orders": {"0": 2, "1": 5}}
    }
    assert "starting_offsets" not in spec["source"]["config"]


# -- the pending change in Redis -----------------------------------------------------------------


def test_a_change_waits_in_redis_until_cleared(store: RedisStore):
    change = OffsetChange("offsets", (SourceOffset("orders", 0, 10),))
    store.put_offset_change("c1", change)

    found, raw = store.offset_change("c1")

    assert found == change
    assert store.clear_offset_change("c1", raw)
    assert store.offset_change("c1") is None


def test_a_newer_change_is_not_cleared_by_the_driver_of_an_older_one(store: RedisStore):
    store.put_offset_change("c1", OffsetChange("reset"))
    _, raw = store.offset_change("c1")
    store.put_offset_change("c1", OffsetChange("timestamp", timestamp_ms=5))

    assert not store.clear_offset_change("c1", raw)
    assert store.offset_change("c1")[0] == OffsetChange("timestamp", timestamp_ms=5)


def test_deleting_a_connector_drops_its_pending_change(store: RedisStore):
    store.put_offset_change("c1", OffsetChange("reset"))

    store.delete("c1")

    assert store.offset_change("c1") is None


# -- SparkRuntime ----------------------------------------------------------------------------------


@pytest.fixture
def spark_runtime(redis_url: str, prefix: str, tmp_path: Path) -> SparkRuntime:
    return SparkRuntime(redis_url, prefix, checkpoint_root=tmp_path)


def test_offsets_come_from_the_checkpoint(spark_runtime: SparkRuntime, tmp_path: Path):
    write_batch(tmp_path / "orders", 0, '{"orders":{"1":17,"0":42}}')

    assert spark_runtime.offsets("orders", "orders") == ConnectorOffsets(
        [SourceOffset("orders", 0, 42), SourceOffset("orders", 1, 17)], batch_id=0
    )
    assert spark_runtime.offsets("other", "other") == ConnectorOffsets([], None)


def test_a_pending_change_is_laid_over_the_checkpoint(spark_runtime: SparkRuntime, tmp_path: Path):
    write_batch(tmp_path / "orders", 3, '{"orders":{"0":42,"1":17}}')
    change = OffsetChange("offsets", (SourceOffset("orders", 1, 2),))

    spark_runtime.alter_offsets("orders", change)

    assert spark_runtime.offsets("orders", "orders") == ConnectorOffsets(
        [SourceOffset("orders", 0, 42), SourceOffset("orders", 1, 2)], batch_id=3, pending=change
    )
    spark_runtime.alter_offsets("orders", OffsetChange("reset"))
    assert spark_runtime.offsets("orders", "orders").offsets == []
    spark_runtime.alter_offsets("orders", OffsetChange("timestamp", timestamp_ms=1))
    assert len(spark_runtime.offsets("orders", "orders").offsets) == 2


def test_the_checkpoint_root_defaults_to_the_runtime_config(
    redis_url, prefix, monkeypatch, tmp_path
):
    monkeypatch.setenv("SLUICE_CHECKPOINT_ROOT", str(tmp_path / "cp"))

    assert SparkRuntime(redis_url, prefix).checkpoint_root == tmp_path / "cp"


def test_the_batches_a_files_sink_may_lack_run_up_to_the_synthetic_one(tmp_path):
    write_batch(tmp_path, 0, '{"orders":{"0":10}}')
    write_batch(tmp_path, 1, '{"orders":{"0":20}}')
    write_batch(tmp_path, 2, '{"orders":{"0":30}}', committed=False)

    assert uncommitted_batch_ids(tmp_path) == range(2, 4)
