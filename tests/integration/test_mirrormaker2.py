"""Migration to and from a real MirrorMaker 2 (Maven Central's connect-mirror at the broker's
Kafka version, ``scripts/fetch-jars.sh connect-mirror``), on the session's one Kafka broker.

MM2's dedicated driver runs with two cluster aliases that are both the test broker: ``<alias>``
(source) → ``target``; its default replication policy copies the source topic ``SRC`` to
``<alias>.SRC`` and keeps its source offsets in ``mm2-offsets.<alias>.internal``. The alias is
new on every run, so are the topics and MM2's Connect group.

1. MM2 mirrors the first events, then stops (SIGTERM: it commits its offsets).
2. More events arrive while nobody copies. A channel ``SRC`` → ``<alias>.SRC`` (Kafka source,
   ``starting_offsets: latest`` so that a take-over that did nothing would show as a gap)
   takes over from MM2's offsets (``offsets/copy`` with ``from_mirrormaker2``), runs, more
   events arrive while it runs, it stops.
3. More events while nobody copies. The channel hands back (``POST offsets/mirrormaker2``):
   a NEW MM2 (same alias) resumes where the channel stopped, copies the rest, stops.

After each move every source event is in the target exactly once: the gaps and duplicates of
both ways are printed, and must be 0.
"""

from __future__ import annotations

import json
import subprocess
import tempfile
import time
import uuid
from collections import Counter
from pathlib import Path

import pytest
from confluent_kafka import Consumer, KafkaException, Producer, TopicPartition

from bench.mirror import MM2_JARS, MM2_LOG4J, fetch_mm2_jars, mm2_properties, stop
from tests.integration.conftest import Stack
from tests.integration.test_walking_skeleton import (
    consume_all,
    make_topic,
    wait_for_state,
)
from tests.support.processes import wait_until

pytestmark = pytest.mark.integration

PARTITIONS = 2
BATCH = 60  # events per step (each step's events alternate over the partitions)


class Source:
    """The source topic, with the next sequence number to produce."""

    def __init__(self, bootstrap: str, topic: str) -> None:
        self.bootstrap, self.topic, self.sent = bootstrap, topic, 0

    def produce(self, count: int) -> None:
        """``count`` events, alternating over the partitions (so each gets its share)."""
        producer = Producer({"bootstrap.servers": self.bootstrap, "linger.ms": 20})
        for seq in range(self.sent, self.sent + count):
            value = json.dumps({"seq": seq}).encode()
            producer.produce(self.topic, value, partition=seq % PARTITIONS)
            producer.poll(0)
        assert producer.flush(60) == 0
        self.sent += count


def end_total(bootstrap: str, topic: str) -> int:
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": f"ends-{uuid.uuid4().hex}"})
    try:
        meta = consumer.list_topics(topic, timeout=5).topics.get(topic)
        if meta is None or meta.error is not None or not meta.partitions:
            return 0
        return sum(
            consumer.get_watermark_offsets(TopicPartition(topic, p), timeout=5)[1]
            for p in meta.partitions
        )
    except KafkaException:
        return 0
    finally:
        consumer.close()


def figures(bootstrap: str, target: str, sent: int) -> tuple[int, int]:
    """``(gap, duplicates)`` of the target against source events ``0..sent-1``."""
    values = consume_all(bootstrap, target, sent, timeout=120)
    seen = Counter(json.loads(value)["seq"] for value in values)
    gap = sum(1 for seq in range(sent) if seq not in seen)
    duplicates = sum(count - 1 for count in seen.values() if count > 1)
    return gap, duplicates + sum(1 for seq in seen if not 0 <= seq < sent)


class MirrorMaker:
    """MM2's dedicated driver, ``alias`` → ``target`` on one broker, run until :meth:`stop`."""

    def __init__(self, bootstrap: str, alias: str, topic: str, workdir: Path) -> None:
        self.bootstrap, self.alias, self.topic, self.workdir = bootstrap, alias, topic, workdir
        self.process: subprocess.Popen | None = None
        self.runs = 0

    def start(self) -> None:
        self.runs += 1
        properties = self.workdir / "mm2.properties"
        # Offsets committed every second while it runs (Connect's default is a minute); a
        # clean stop commits them anyway.
        properties.write_text(
            mm2_properties(self.bootstrap, self.topic, self.alias, 1)
            + "offset.flush.interval.ms = 1000\n"
            # its jars all carry ServiceLoader manifests: no reflective scan of the classpath
            # (about 20 s each, MM2's and its worker's, of every start on two cores)
            + "plugin.discovery = service_load\n"
            + "target.plugin.discovery = service_load\n"  # the target's Connect worker
        )
        log = (self.workdir / f"mm2-{self.runs}.log").open("w")
        command = [
            "java",
            "-Xmx384m",
            f"-Dlog4j2.configurationFile={MM2_LOG4J}",
            "-cp",
            f"{MM2_JARS}/*",
            "org.apache.kafka.connect.mirror.MirrorMaker",
            str(properties),
        ]
        self.process = subprocess.Popen(
            command, cwd=self.workdir, stdout=log, stderr=subprocess.STDOUT
        )

    def wait_for(self, target: str, count: int, timeout: float = 180) -> None:
        def copied() -> bool:
            assert self.process is not None and self.process.poll() is None, self.log_tail()
            return end_total(self.bootstrap, target) >= count

        wait_until(copied, timeout, interval=0.5, what=f"MirrorMaker 2 to copy {count} events")

    def stop(self) -> None:
        if self.process is not None:
            stop(self.process)
            self.process = None

    def log_tail(self) -> str:
        logs = sorted(self.workdir.glob("mm2-*.log"))
        return logs[-1].read_text(errors="replace")[-4000:] if logs else ""


def test_migrate_from_mirrormaker2_and_hand_back(stack: Stack):
    fetch_mm2_jars()
    http = stack.session()
    alias = f"mm{uuid.uuid4().hex[:6]}"
    topic = f"mm2-src-{alias}"
    target = f"{alias}.{topic}"
    name = f"mirror-{alias}"
    offsets_topic = f"mm2-offsets.{alias}.internal"
    make_topic(stack.kafka, topic, PARTITIONS)
    source = Source(stack.kafka, topic)
    mm2 = MirrorMaker(stack.kafka, alias, topic, Path(tempfile.mkdtemp(prefix="sluice-mm2-")))
    url = f"{stack.api}/channels/{name}"
    try:
        # 1. MirrorMaker 2 mirrors the first events, then stops.
        source.produce(BATCH)
        started = time.monotonic()
        mm2.start()
        mm2.wait_for(target, BATCH)
        mm2.stop()
        mm2_seconds = time.monotonic() - started

        # 2. More events nobody copies; a channel takes over from MM2's offsets.
        source.produce(BATCH)
        spec = {
            "source": {
                "type": "kafka",
                "config": {
                    "bootstrap_servers": stack.kafka,
                    "topics": [topic],
                    "starting_offsets": "latest",
                    "format": "json",
                },
            },
            "transforms": [],
            "sink": {
                "type": "kafka",
                "config": {"bootstrap_servers": stack.kafka, "topic": target, "format": "json"},
            },
        }
        created = http.post(f"{stack.api}/channels/", json={"name": name, "spec": spec}, timeout=10)
        assert created.status_code == 201, created.text

        bad = http.post(
            f"{url}/offsets/copy",
            json={"from_mirrormaker2": {"source_alias": "a.b", "offsets_topic": topic}},
            timeout=10,
        )
        assert bad.status_code == 400, bad.text
        assert set(bad.json()) == {
            "from_mirrormaker2.source_alias",
            "from_mirrormaker2.offsets_topic",
        }, bad.json()
        outside = http.get(
            f"{url}/offsets/mirrormaker2",
            params={"source_alias": alias, "bootstrap_servers": "10.0.0.1:9092"},
            timeout=10,
        )
        assert outside.status_code == 400, outside.text
        assert set(outside.json()) == {"bootstrap_servers"}

        preview = http.get(
            f"{url}/offsets/mirrormaker2", params={"source_alias": alias}, timeout=30
        )
        assert preview.status_code == 200, preview.text
        shown = preview.json()
        assert shown["offsets_topic"] == offsets_topic
        assert shown["bootstrap_servers"] == stack.kafka
        per_partition = BATCH // PARTITIONS
        assert shown["mirrormaker2"] == [
            {
                "partition": {"cluster": alias, "topic": topic, "partition": p},
                "offset": {"offset": per_partition - 1},
            }
            for p in range(PARTITIONS)
        ], shown
        assert [o["offset"]["offset"] for o in shown["takeover"]] == [per_partition] * PARTITIONS

        taken = http.post(
            f"{url}/offsets/copy", json={"from_mirrormaker2": {"source_alias": alias}}, timeout=30
        )
        assert taken.status_code == 200, taken.text
        offsets = http.get(f"{url}/offsets", timeout=10).json()["offsets"]
        assert [o["offset"]["offset"] for o in offsets] == [per_partition] * PARTITIONS

        started = time.monotonic()
        assert http.post(f"{url}/start", timeout=10).status_code == 202
        wait_for_state(stack, name, "RUNNING", 180)
        refused = http.post(f"{url}/offsets/mirrormaker2", json={"source_alias": alias}, timeout=10)
        assert refused.status_code == 409, refused.text
        source.produce(BATCH)  # while the channel runs
        wait_until(
            lambda: end_total(stack.kafka, target) >= source.sent,
            180,
            interval=0.5,
            what="the channel to copy the events MM2 left and the new ones",
        )
        # Stopped once its checkpoint committed the end (Spark writes the sink, then commits).
        end = [3 * per_partition] * PARTITIONS
        wait_until(
            lambda: (
                [
                    o["offset"]["offset"]
                    for o in http.get(f"{url}/offsets", timeout=10).json()["offsets"]
                ]
                == end
            ),
            60,
            interval=0.5,
            what="the channel to commit the end",
        )
        assert http.post(f"{url}/stop", timeout=10).status_code == 202
        wait_for_state(stack, name, "STOPPED", 60)
        channel_seconds = time.monotonic() - started
        to_channel = figures(stack.kafka, target, source.sent)
        print(f"\nMirrorMaker 2 → channel: gap {to_channel[0]}, duplicates {to_channel[1]}")

        # 3. More events nobody copies; hand back; a new MirrorMaker 2 resumes.
        source.produce(BATCH)
        # A topic that is not compacted is no Connect offsets topic: nothing is written into it.
        other = f"mm2-offsets.{alias}-plain.internal"  # MM2's name, not its kind of topic
        make_topic(stack.kafka, other, 1)
        refused = http.post(
            f"{url}/offsets/mirrormaker2",
            json={"source_alias": alias, "offsets_topic": other},
            timeout=30,
        )
        assert refused.status_code == 409, refused.text
        assert "not a Kafka Connect offsets topic" in refused.json()["detail"]
        assert end_total(stack.kafka, other) == 0
        handed = http.post(f"{url}/offsets/mirrormaker2", json={"source_alias": alias}, timeout=30)
        assert handed.status_code == 200, handed.text
        body = handed.json()
        assert body["created_topic"] is False
        assert body["offsets"] == [
            {
                "partition": {"cluster": alias, "topic": topic, "partition": p},
                "offset": {"offset": 3 * per_partition - 1},
            }
            for p in range(PARTITIONS)
        ], body
        started = time.monotonic()
        mm2.start()
        mm2.wait_for(target, source.sent)
        # Stopped only once MM2 committed the end of every partition: whatever it would copy
        # twice has been copied by then.
        mm2_end = [{"offset": 4 * per_partition - 1}] * PARTITIONS

        def mm2_at_end() -> bool:
            found = http.get(
                f"{url}/offsets/mirrormaker2", params={"source_alias": alias}, timeout=30
            ).json()["mirrormaker2"]
            return [o["offset"] for o in found] == mm2_end

        wait_until(mm2_at_end, 60, interval=0.5, what="MirrorMaker 2 to commit the end")
        mm2.stop()
        back_seconds = time.monotonic() - started
        to_mm2 = figures(stack.kafka, target, source.sent)
    except BaseException:
        print(mm2.log_tail())
        raise
    finally:
        mm2.stop()

    print(
        f"\nMirrorMaker 2 → channel: {2 * BATCH} events after MM2's {BATCH}: "
        f"gap {to_channel[0]}, duplicates {to_channel[1]}"
        f"\nchannel → MirrorMaker 2: {BATCH} events after the channel's: "
        f"gap {to_mm2[0]}, duplicates {to_mm2[1]} ({source.sent} events in {target})"
        f"\nMM2 first run {mm2_seconds:.1f}s, channel run {channel_seconds:.1f}s, "
        f"MM2 after hand-back {back_seconds:.1f}s"
    )
    assert to_channel == (0, 0)
    assert to_mm2 == (0, 0)
    lifecycle = http.get(f"{url}/lifecycle/?limit=50", timeout=10).json()["results"]
    reasons = [event["reason"] for event in lifecycle]
    assert any(r.startswith("offsets copied from MirrorMaker 2") for r in reasons), reasons
    assert any(r.startswith("offsets handed back to MirrorMaker 2") for r in reasons), reasons
