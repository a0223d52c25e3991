"""Issue 12, finding 8: a deleted connector's checkpoint goes with it, so a channel created
later under the same name never resumes from it. Real Redis, checkpoint files as Spark
writes them. And a first batch killed half-written leaves nothing that would stop the next start."""

from __future__ import annotations

import json
import logging
from pathlib import Path

import pytest

from runtime_adapter import spark as spark_module
from runtime_adapter.base import ConnectorOffsets, Deployment, SourceOffset
from runtime_adapter.checkpoint import (
    CheckpointError,
    checkpoint_dir,
    discard_unfinished_start,
    remove_checkpoint,
)
from runtime_adapter.spark import SparkRuntime
from runtime_adapter.states import TargetState
from tests.unit.runtime_adapter.test_offsets_store import write_batch

SPEC = {"source": {"type": "kafka", "config": {}}, "transforms": [], "sink": {"type": "kafka"}}


def deploy(runtime: SparkRuntime, name: str) -> None:
    runtime.deploy(Deployment(name, name, 1, SPEC, TargetState.RUNNING))


@pytest.mark.parametrize("key", ["orders", "orders-2_b", "orders.0a1b2c3d4e5f", "a" * 63])
def test_a_checkpoint_key_is_one_folder_under_the_root(key, tmp_path):
    assert checkpoint_dir(tmp_path, key) == tmp_path / key


@pytest.mark.parametrize(
    "key", ["", ".", "..", "../orders", "orders/..", "/etc", "a/b", "Orders", "orders.", ".x"]
)
def test_anything_else_is_refused(key, tmp_path):
    with pytest.raises(CheckpointError):
        checkpoint_dir(tmp_path, key)


def test_remove_checkpoint_removes_the_folder_and_only_it(tmp_path):
    write_batch(tmp_path / "orders", 0, '{"orders":{"0":42}}')
    write_batch(tmp_path / "orders-2", 0, '{"orders":{"0":7}}')

    assert remove_checkpoint(tmp_path, "orders") is True
    assert remove_checkpoint(tmp_path, "orders") is False  # nothing left to remove

    assert not (tmp_path / "orders").exists()
    assert (tmp_path / "orders-2" / "offsets" / "0").exists()


def test_a_symbolic_link_in_place_of_a_checkpoint_is_removed_not_followed(tmp_path):
    elsewhere = tmp_path / "elsewhere"
    write_batch(elsewhere, 0, '{"orders":{"0":42}}')
    root = tmp_path / "checkpoints"
    root.mkdir()
    (root / "orders").symlink_to(elsewhere, target_is_directory=True)

    assert remove_checkpoint(root, "orders") is True

    assert not (root / "orders").exists()
    assert (elsewhere / "offsets" / "0").exists()


def test_deleting_a_connector_removes_its_checkpoint(runtime: SparkRuntime):
    root = runtime.checkpoint_root
    deploy(runtime, "orders")
    deploy(runtime, "payments")
    write_batch(root / "orders", 4, '{"orders":{"0":42,"1":17}}')
    write_batch(root / "payments", 2, '{"payments":{"0":5}}')
    assert runtime.offsets("orders", "orders").batch_id == 4

    runtime.delete("orders")

    assert not (root / "orders").exists()
    assert runtime.offsets("orders", "orders") == ConnectorOffsets([], None)
    assert runtime.offsets("payments", "payments").offsets == [SourceOffset("payments", 0, 5)]


def test_a_connector_deployed_again_under_the_same_name_starts_without_a_checkpoint(
    runtime: SparkRuntime,
):
    deploy(runtime, "orders")
    write_batch(runtime.checkpoint_root / "orders", 9, '{"orders":{"0":900}}')
    runtime.delete("orders")

    deploy(runtime, "orders")  # a new channel of the same name

    assert runtime.offsets("orders", "orders") == ConnectorOffsets([], None)
    assert not (runtime.checkpoint_root / "orders").exists()


def test_a_checkpoint_that_cannot_be_removed_is_logged_and_the_connector_forgotten(
    runtime: SparkRuntime, monkeypatch, caplog
):
    deploy(runtime, "orders")

    def refuse(root: Path, key: str) -> bool:
        raise PermissionError(f"{root / key}: read-only file system")

    monkeypatch.setattr(spark_module, "remove_checkpoint", refuse)
    caplog.set_level(logging.WARNING)

    runtime.delete("orders")

    assert runtime.store.deployment("orders") is None
    assert "the checkpoint of deleted connector orders stays" in caplog.text


def test_a_deployment_names_its_checkpoint_by_key_and_delete_removes_that_one(
    runtime: SparkRuntime,
):
    root = runtime.checkpoint_root
    runtime.deploy(
        Deployment("orders", "orders", 1, SPEC, TargetState.RUNNING, checkpoint="orders.0a1b2c")
    )
    write_batch(root / "orders", 0, '{"orders":{"0":1}}')  # a predecessor's, left behind
    write_batch(root / "orders.0a1b2c", 0, '{"orders":{"0":2}}')

    assert runtime.store.deployment("orders").checkpoint_key == "orders.0a1b2c"
    runtime.delete("orders")

    assert not (root / "orders.0a1b2c").exists()
    assert (root / "orders").exists()


def test_a_deployment_written_before_checkpoint_keys_uses_the_channel_name(
    runtime: SparkRuntime,
):
    definition = {"channel": "orders", "revision": 1, "spec": SPEC}
    runtime.store.redis.hset(runtime.store.key("desired:spec"), "orders", json.dumps(definition))

    found = runtime.store.deployment("orders")

    assert (found.checkpoint, found.checkpoint_key) == ("", "orders")
    assert runtime.store.deployments()["orders"].checkpoint_key == "orders"


def test_deleting_an_unknown_connector_removes_nothing(runtime: SparkRuntime):
    write_batch(runtime.checkpoint_root / "orders", 0, '{"orders":{"0":1}}')

    runtime.delete("orders")  # never deployed: nothing says whose folder that is

    assert (runtime.checkpoint_root / "orders" / "offsets" / "0").exists()


def test_an_interrupted_first_batch_leaves_nothing_spark_would_refuse(tmp_path):
    checkpoint = tmp_path / "orders"
    (checkpoint / "offsets").mkdir(parents=True)
    (checkpoint / "offsets" / ".0.5f1c.tmp").write_text("v1\n{", encoding="utf-8")
    (checkpoint / "commits").mkdir()
    (checkpoint / "metadata").write_text('{"id":"q"}', encoding="utf-8")
    (checkpoint / "sources").mkdir()

    assert discard_unfinished_start(checkpoint) == ["offsets"]
    assert sorted(p.name for p in checkpoint.iterdir()) == ["commits", "metadata", "sources"]
    assert discard_unfinished_start(checkpoint) == []  # nothing left to discard


def test_a_checkpoint_with_a_planned_batch_is_never_touched(tmp_path):
    checkpoint = tmp_path / "orders"
    (checkpoint / "offsets").mkdir(parents=True)
    (checkpoint / "offsets" / "0").write_text("v1\n{}\n-", encoding="utf-8")
    (checkpoint / "offsets" / ".1.5f1c.tmp").write_text("v1\n{", encoding="utf-8")
    (checkpoint / "state").mkdir()
    (checkpoint / "state" / "0").mkdir()

    assert discard_unfinished_start(checkpoint) == []
    assert (checkpoint / "offsets" / ".1.5f1c.tmp").exists()
    assert (checkpoint / "state" / "0").is_dir()


def test_a_link_in_place_of_a_log_folder_is_removed_not_followed(tmp_path):
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "keep").write_text("x", encoding="utf-8")
    checkpoint = tmp_path / "orders"
    checkpoint.mkdir()
    (checkpoint / "state").symlink_to(outside, target_is_directory=True)

    assert discard_unfinished_start(checkpoint) == ["state"]
    assert (outside / "keep").exists()
