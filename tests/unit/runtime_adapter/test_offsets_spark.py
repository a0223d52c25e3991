"""Moving offsets for real: Spark 4.2 queries over a real Kafka broker, their real checkpoints,
the pending change in real Redis, and the driver that applies it.

Each scenario runs the channel's query (Kafka → files sink, exactly-once) to the end, changes
its offsets the way the console does (``SparkRuntime.alter_offsets``), lets the driver apply
the change, runs the query again and checks by event id what the files sink holds.
"""

from __future__ import annotations

import json
import time
import uuid
from collections import Counter
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
from confluent_kafka import Consumer, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

from runtime_adapter.base import OffsetChange, SourceOffset
from runtime_adapter.checkpoint import latest_committed
from runtime_adapter.config import RuntimeConfig
from runtime_adapter.host.hosted import HostedConnector
from runtime_adapter.kafka import GroupCommitter, consumer_group
from runtime_adapter.spark import SparkRuntime
from runtime_adapter.store import RedisStore
from tests.support.processes import wait_until
from tests.support.spark import local_spark

pytestmark = pytest.mark.spark

PER_PARTITION = 50
# Record i of a partition is stamped BASE_TIME + i seconds: recent, or the broker's retention
# (7 days) would delete the records while the tests run.
BASE_TIME = (int(time.time()) - 3600) * 1000


@pytest.fixture(scope="module")
def spark() -> Any:
    return local_spark()  # shared with other modules: never stopped here


@pytest.fixture
def topic(kafka_bootstrap: str) -> str:
    """A 2-partition topic with records 0..49 in each partition (value {"seq": i})."""
    name = f"orders-{uuid.uuid4().hex[:8]}"
    admin = AdminClient({"bootstrap.servers": kafka_bootstrap})
    admin.create_topics([NewTopic(name, 2, 1)])[name].result(timeout=30)
    producer = Producer({"bootstrap.servers": kafka_bootstrap})
    for partition in (0, 1):
        for seq in range(PER_PARTITION):
            value = json.dumps({"seq": seq}).encode()
            producer.produce(name, value, partition=partition, timestamp=BASE_TIME + seq * 1000)
    assert producer.flush(30) == 0
    return name


class Channel:
    """One channel's query, checkpoint, files sink, runtime and driver."""

    def __init__(self, spark, root: Path, kafka: str, topic: str, redis_url: str, prefix: str):
        self.spark, self.kafka, self.topic, self.name = spark, kafka, topic, "orders"
        self.checkpoint = root / "checkpoints" / self.name
        self.output = root / "out"
        self.spec = {
            "source": {
                "type": "kafka",
                "config": {
                    "bootstrap_servers": kafka,
                    "topics": [topic],
                    "starting_offsets": "earliest",
                },
            },
            "transforms": [],
            "sink": {
                "type": "files",
                "config": {"path": str(self.output), "format": "jsonl", "content": "cloudevents"},
            },
        }
        self.runtime = SparkRuntime(redis_url, prefix, checkpoint_root=root / "checkpoints")
        config = replace(
            RuntimeConfig.from_env(),
            redis_url=redis_url,
            key_prefix=prefix,
            checkpoint_root=root / "checkpoints",
        )
        self.driver = HostedConnector(
            RedisStore.from_url(redis_url, prefix),
            config,
            connector_id=self.name,
            worker_id="w1",
            generation=0,
        )
        self.driver.channel = self.name
        self.driver.spark = spark
        self.driver.committer = GroupCommitter(kafka, consumer_group(self.name))

    def run(self, prepare: bool = True) -> None:
        """Prepare the checkpoint as the driver does (leftovers of an interrupted first batch
        discarded, any pending offset change applied), then run the query to the end."""
        from pipelines.builder import build_stream
        from pipelines.spec import validate_spec

        self.checkpoint.mkdir(parents=True, exist_ok=True)
        spec = self.spec
        if prepare:
            spec = self.driver.prepare_checkpoint(spec, self.checkpoint)
        spec = validate_spec(spec)
        writer = build_stream(
            self.spark, spec, channel=self.name, checkpoint_dir=str(self.checkpoint)
        )
        query = writer.start()
        try:
            query.processAllAvailable()
        finally:
            query.stop()

    def delivered(self) -> Counter:
        """How many times each event id is in the files sink (as its log says)."""
        lines = self.spark.read.text(str(self.output)).collect()
        return Counter(json.loads(row.value)["id"] for row in lines)

    def ids(self, partition: int, offsets: range) -> Counter:
        return Counter(f"{self.topic}/{partition}/{offset}" for offset in offsets)

    def group(self) -> dict[int, int]:
        consumer = Consumer({"bootstrap.servers": self.kafka, "group.id": f"sluice-{self.name}"})
        try:
            found = consumer.committed([TopicPartition(self.topic, p) for p in (0, 1)], 10)
            return {tp.partition: tp.offset for tp in found}
        finally:
            consumer.close()


@pytest.fixture
def channel(spark, tmp_path, kafka_bootstrap, topic, redis_url, prefix) -> Channel:
    made = Channel(spark, tmp_path, kafka_bootstrap, topic, redis_url, prefix)
    yield made
    made.driver.committer.close()


def everything(channel: Channel) -> Counter:
    return channel.ids(0, range(PER_PARTITION)) + channel.ids(1, range(PER_PARTITION))


def test_altered_offsets_replay_exactly_from_there_into_a_files_sink(channel: Channel):
    channel.run()
    assert channel.delivered() == everything(channel)
    before = channel.runtime.offsets("orders", "orders")
    assert before.offsets == [
        SourceOffset(channel.topic, 0, PER_PARTITION),
        SourceOffset(channel.topic, 1, PER_PARTITION),
    ]

    channel.runtime.alter_offsets(
        "orders", OffsetChange("offsets", (SourceOffset(channel.topic, 0, 40),))
    )
    channel.run()

    # Partition 0 from 40 again, partition 1 not at all, each replayed event written once more.
    assert channel.delivered() == everything(channel) + channel.ids(0, range(40, PER_PARTITION))
    assert channel.driver.store.offset_change("orders") is None
    after = channel.runtime.offsets("orders", "orders")
    assert after.batch_id > before.batch_id + 1  # the synthetic batch, then a real one
    assert [o.offset for o in after.offsets] == [PER_PARTITION, PER_PARTITION]


def test_the_consumer_group_shows_the_new_position_before_a_batch_runs(channel: Channel):
    channel.run()
    channel.runtime.alter_offsets(
        "orders",
        OffsetChange(
            "offsets", (SourceOffset(channel.topic, 0, 5), SourceOffset(channel.topic, 1, 7))
        ),
    )

    channel.driver.apply_offset_change(channel.spec, channel.checkpoint)

    # Committed on the committer's own thread (a coordinator away must not hold the driver up).
    wait_until(lambda: channel.group() == {0: 5, 1: 7}, 10, what="the group's new position")
    assert latest_committed(channel.checkpoint).kafka == {
        (channel.topic, 0): 5,
        (channel.topic, 1): 7,
    }


def test_a_timestamp_moves_every_partition_to_its_first_record_at_or_after_it(channel: Channel):
    channel.run()
    channel.runtime.alter_offsets(
        "orders", OffsetChange("timestamp", timestamp_ms=BASE_TIME + 45_000)
    )

    channel.run()

    replayed = channel.ids(0, range(45, PER_PARTITION)) + channel.ids(1, range(45, PER_PARTITION))
    assert channel.delivered() == everything(channel) + replayed


def test_a_reset_goes_back_to_starting_offsets_and_keeps_the_files_sink_exact(channel: Channel):
    channel.run()
    channel.runtime.alter_offsets("orders", OffsetChange("reset"))

    channel.run()

    # earliest: everything once more, written by a new batch id the sink's log had not seen.
    assert channel.delivered() == everything(channel) + everything(channel)


def test_without_a_checkpoint_the_change_becomes_the_starting_offsets(channel: Channel):
    channel.runtime.alter_offsets(
        "orders", OffsetChange("offsets", (SourceOffset(channel.topic, 0, 30),))
    )

    channel.run()

    # Partition 0 from 30; partition 1 from the spec's starting_offsets (earliest).
    assert channel.delivered() == channel.ids(0, range(30, PER_PARTITION)) + channel.ids(
        1, range(PER_PARTITION)
    )


def test_a_partition_that_does_not_exist_fails_clearly_and_keeps_the_change(channel: Channel):
    from runtime_adapter.base import OffsetsError

    channel.run()
    change = OffsetChange("offsets", (SourceOffset(channel.topic, 9, 1),))
    channel.runtime.alter_offsets("orders", change)

    with pytest.raises(OffsetsError, match=f"partition\\(s\\) {channel.topic}/9 do not exist"):
        channel.driver.apply_offset_change(channel.spec, channel.checkpoint)
    assert channel.driver.store.offset_change("orders")[0] == change


def test_consumer_group_offsets_are_read_for_the_topics_the_source_reads(channel: Channel):
    committer = GroupCommitter(channel.kafka, "connect-my-sink")
    try:
        committer.commit({(channel.topic, 0): 12, (channel.topic, 1): 3})
    finally:
        committer.close()

    found = channel.runtime.consumer_group_offsets(channel.spec, "connect-my-sink")

    assert found == [SourceOffset(channel.topic, 0, 12), SourceOffset(channel.topic, 1, 3)]
    assert channel.runtime.consumer_group_offsets(channel.spec, "no-such-group") == []


def test_a_first_batch_killed_half_written_is_started_again_not_refused(channel: Channel):
    # What a driver killed while Spark wrote offsets/0 leaves: the temporary file and its crc.
    offsets = channel.checkpoint / "offsets"
    offsets.mkdir(parents=True)
    temporary = offsets / f".0.{uuid.uuid4()}.tmp"
    temporary.write_text('v1\n{"batchWatermarkMs":0,', encoding="utf-8")
    (offsets / f".{temporary.name}.crc").write_bytes(b"crc")

    with pytest.raises(Exception, match="STATE_STORE_CHECKPOINT_LOCATION_NOT_EMPTY"):
        channel.run(prepare=False)  # what Spark does with it on its own

    channel.run()
    assert channel.delivered() == everything(channel)
    assert latest_committed(channel.checkpoint) is not None
