"""Issue 12, finding 8 at the service level: deleting a channel removes its checkpoint, so a
channel created again under its name does not resume from it. The Spark runtime on a real
Redis, its checkpoint root a folder of the test's own; and the checkpoint key every channel
carries, filled in for channels that existed before it."""

from __future__ import annotations

import re
import uuid
from pathlib import Path

import pytest
from django.db import connection
from django.db.migrations.executor import MigrationExecutor

from console import services
from console.models import Channel
from console.runtime import set_runtime
from runtime_adapter import spark as spark_module
from runtime_adapter.base import SourceOffset
from runtime_adapter.spark import SparkRuntime
from tests.unit.runtime_adapter.test_offsets_store import write_batch


@pytest.fixture
def spark_runtime(redis_url: str, tmp_path: Path, runtime):
    """The real Spark runtime instead of the in-memory one (``runtime`` installs that first)."""
    real = SparkRuntime(
        redis_url, f"test-{uuid.uuid4().hex[:8]}", checkpoint_root=tmp_path / "checkpoints"
    )
    set_runtime(real)
    yield real
    set_runtime(None)


def run_once(runtime: SparkRuntime, channel: Channel, offset: int) -> Path:
    """What a driver leaves behind: the channel's checkpoint with one committed batch."""
    checkpoint = runtime.checkpoint_root / channel.checkpoint_key
    write_batch(checkpoint, 0, f'{{"orders":{{"0":{offset}}}}}')
    return checkpoint


@pytest.mark.django_db
def test_a_channel_created_again_under_a_deleted_ones_name_does_not_resume_its_checkpoint(
    spark_runtime, spec
):
    old = services.create_channel(name="orders", spec=spec)
    services.start_channel(old)
    checkpoint = run_once(spark_runtime, old, 4242)
    services.stop_channel(old)
    assert services.channel_offsets(old).offsets == [SourceOffset("orders", 0, 4242)]

    services.delete_channel(old)
    new = services.create_channel(name="orders", spec=spec)

    assert not checkpoint.exists()
    found = services.channel_offsets(new)
    assert found.offsets == []
    assert "has not committed a batch yet" in found.note
    services.start_channel(new)
    assert not (spark_runtime.checkpoint_root / new.checkpoint_key).exists()


@pytest.mark.django_db
def test_deleting_a_channel_leaves_the_other_channels_checkpoints(spark_runtime, spec):
    orders = services.create_channel(name="orders", spec=spec)
    payments = services.create_channel(name="payments", spec=spec)
    for channel in (orders, payments):
        services.start_channel(channel)
    run_once(spark_runtime, orders, 1)
    kept = run_once(spark_runtime, payments, 2)

    services.delete_channel(orders)

    assert (kept / "commits" / "0").exists()


@pytest.mark.django_db
def test_even_a_checkpoint_that_was_not_removed_is_not_resumed(spark_runtime, spec, monkeypatch):
    """Removal fails (the console cannot reach the checkpoint root, a read-only mount): the
    new channel's checkpoint key differs from the old one's, so its driver starts afresh."""
    old = services.create_channel(name="orders", spec=spec)
    services.start_channel(old)
    left = run_once(spark_runtime, old, 4242)
    monkeypatch.setattr(spark_module, "remove_checkpoint", lambda root, key: False)
    services.delete_channel(old)

    new = services.create_channel(name="orders", spec=spec)
    services.start_channel(new)

    assert left.exists()
    assert new.checkpoint_key != old.checkpoint_key
    assert spark_runtime.store.deployment("orders").checkpoint_key == new.checkpoint_key
    assert services.channel_offsets(new).offsets == []


@pytest.mark.django_db
def test_the_deployment_carries_the_channels_checkpoint_key(spec, runtime):
    channel = services.create_channel(name="orders", spec=spec)

    services.start_channel(channel)

    (deployment,) = runtime.calls_named("deploy")
    assert deployment[0].checkpoint == channel.checkpoint_key
    assert deployment[0].checkpoint_key == channel.checkpoint_key != "orders"


@pytest.mark.django_db
def test_every_channel_gets_a_checkpoint_key(spec):
    channel = services.create_channel(name="orders", spec=spec)
    direct = Channel.objects.create(name="made-directly")

    assert re.fullmatch(r"orders\.[0-9a-f]{12}", channel.checkpoint_key)
    assert re.fullmatch(r"made-directly\.[0-9a-f]{12}", direct.checkpoint_key)
    assert Channel.objects.get(pk=channel.pk).checkpoint_key == channel.checkpoint_key
    services.delete_channel(channel)
    again = services.create_channel(name="orders", spec=spec)
    assert again.checkpoint_key != channel.checkpoint_key


@pytest.mark.django_db(transaction=True)
def test_channels_that_existed_before_keep_their_checkpoint_where_it_was():
    """Migration 0006 gives existing channels their name as key: the folder the runtime has
    always used, so a deployed channel resumes from its checkpoint after the upgrade."""
    executor = MigrationExecutor(connection)
    before = [("console", "0005_connector_stage_metrics")]
    after = [("console", "0006_channel_checkpoint_key")]
    executor.migrate(before)
    old_state = executor.loader.project_state(before).apps
    OldChannel = old_state.get_model("console", "Channel")
    OldChannel.objects.create(name="orders")
    OldChannel.objects.create(name="payments")

    executor = MigrationExecutor(connection)
    executor.loader.build_graph()
    executor.migrate(after)
    NewChannel = executor.loader.project_state(after).apps.get_model("console", "Channel")

    keys = dict(NewChannel.objects.values_list("name", "checkpoint_key"))
    assert keys == {"orders": "orders", "payments": "payments"}
    executor.loader.build_graph()
    executor.migrate(executor.loader.graph.leaf_nodes())
