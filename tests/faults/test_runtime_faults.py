"""Faults of brokers and runtime hosts under running channels, on real processes.

Two runtime hosts, each a network namespace of its own with a real runtime worker and its
Spark drivers, run channels that read and write a three-broker Kafka (topics replicated 3
times, ``min.insync.replicas`` 2). Every test checks delivery by event id and prints what it
measured.
"""

from __future__ import annotations

import time
import uuid
from collections import Counter
from pathlib import Path

from confluent_kafka.admin import AdminClient

from tests.faults.channels import (
    StateWatch,
    create_channel,
    files_seqs,
    files_sink,
    kafka_seqs,
    kafka_sink,
    make_topic,
    status,
    stop_channels,
    wait_running,
    wanted,
)
from tests.faults.conftest import REPLICATION, FaultWorld
from tests.support.orders import produce_range
from tests.support.processes import wait_until

BATCH = 6_000
"""Events per batch (one in three is selected)."""
START_TIMEOUT = 300
"""Seconds a channel may take to be RUNNING at first (a driver's cold start on 2 busy cores)."""


def duplicates(seqs: Counter[int]) -> int:
    return sum(count - 1 for count in seqs.values())


def leader_of(world: FaultWorld, topic: str, partition: int = 0) -> int:
    admin = AdminClient({"bootstrap.servers": world.cluster.bootstrap})
    return int(admin.list_topics(topic, timeout=10).topics[topic].partitions[partition].leader)


def test_a_killed_broker_stops_no_channel_and_loses_no_event(world: FaultWorld) -> None:
    suffix = uuid.uuid4().hex[:6]
    source = make_topic(world, f"faults-broker-in-{suffix}")
    sink = make_topic(world, f"faults-broker-out-{suffix}")
    name = f"faults-broker-{suffix}"
    create_channel(world, name, source, kafka_sink(world, sink))
    produce_range(world.cluster.bootstrap, source, 0, BATCH)
    started_in = wait_running(world, [name], START_TIMEOUT)
    first = kafka_seqs(world, sink, wanted(BATCH), timeout=180)
    assert wanted(BATCH) <= first.keys(), f"lost {len(wanted(BATCH) - first.keys())} before"

    watch = StateWatch(world, [name])
    victim = leader_of(world, source)
    killed_at = time.monotonic()
    world.cluster.kill(victim)
    try:
        produce_range(world.cluster.bootstrap, source, BATCH, 2 * BATCH)
        during = kafka_seqs(world, sink, wanted(2 * BATCH), timeout=240)
        delivered_in = time.monotonic() - killed_at
        assert wanted(2 * BATCH) <= during.keys(), (
            f"lost {len(wanted(2 * BATCH) - during.keys())} events with broker {victim} down"
        )
    finally:
        world.cluster.restart(victim)
    back_in = time.monotonic() - killed_at
    produce_range(world.cluster.bootstrap, source, 2 * BATCH, 3 * BATCH)
    after = kafka_seqs(world, sink, wanted(3 * BATCH), timeout=180)
    not_running = watch.stop()

    assert not_running == [], f"the channel left RUNNING: {not_running[:10]}"
    assert len(watch.samples) > 20, "too few state samples to say it never stopped"
    lost = wanted(3 * BATCH) - after.keys()
    assert lost == set(), f"lost {len(lost)} events"
    wait_until(
        lambda: all(len(r) == REPLICATION for r in world.cluster.in_sync_replicas(sink).values()),
        120,
        what=f"broker {victim} back in the sink topic's in-sync replicas",
    )
    print(
        f"\nbroker {victim} (leader of {source}/0) killed: the channel stayed RUNNING in all "
        f"{len(watch.samples)} samples; events sent while it was down all delivered "
        f"{delivered_in:.1f} s after the kill; broker back in {back_in:.1f} s; "
        f"{len(wanted(3 * BATCH))} events selected, 0 lost, {duplicates(after)} duplicates "
        f"(first start took {started_in:.1f} s)"
    )
    stop_channels(world, [name])


def test_a_killed_runtime_host_moves_its_channels_without_losing_events(
    world: FaultWorld, tmp_path: Path
) -> None:
    suffix = uuid.uuid4().hex[:6]
    source = make_topic(world, f"faults-host-in-{suffix}")
    sink = make_topic(world, f"faults-host-out-{suffix}")
    outbox = tmp_path / "outbox"
    to_kafka, to_files = f"faults-host-kafka-{suffix}", f"faults-host-files-{suffix}"
    create_channel(world, to_kafka, source, kafka_sink(world, sink))
    create_channel(world, to_files, source, files_sink(outbox))
    names = [to_kafka, to_files]
    produce_range(world.cluster.bootstrap, source, 0, BATCH)
    wait_running(world, names, START_TIMEOUT)
    assert wanted(BATCH) <= kafka_seqs(world, sink, wanted(BATCH), timeout=180).keys()

    victim = status(world, to_files)["worker_id"]
    moving = [name for name in names if status(world, name)["worker_id"] == victim]
    killed_at = time.monotonic()
    killed = world.hosts[victim].kill()
    produce_range(world.cluster.bootstrap, source, BATCH, 2 * BATCH)  # while they move
    moved_in = wait_running(world, moving, 240, avoid=victim)
    moved_after = time.monotonic() - killed_at

    expected = wanted(2 * BATCH)
    in_kafka = kafka_seqs(world, sink, expected, timeout=240)
    in_files = files_seqs(outbox, expected, timeout=240)
    delivered_after = time.monotonic() - killed_at
    assert expected - in_kafka.keys() == set(), f"Kafka sink lost {len(expected - in_kafka.keys())}"
    assert expected - in_files.keys() == set(), f"files sink lost {len(expected - in_files.keys())}"
    assert max(in_files.values()) == 1, f"files sink duplicated {duplicates(in_files)} events"
    assert set(in_files) == expected and set(in_kafka) == expected, "events the filter drops"
    print(
        f"\nhost {victim} killed ({len(killed)} processes): {len(moving)} channel(s) "
        f"{moving} RUNNING on the other host {moved_after:.1f} s after the kill "
        f"(seen {moved_in:.1f} s after the last event was sent); every event delivered "
        f"{delivered_after:.1f} s after the kill; {len(expected)} events selected, 0 lost; "
        f"duplicates: Kafka {duplicates(in_kafka)}, files {duplicates(in_files)}"
    )
    world.start_worker(victim)  # capacity back for the tests after this one
    stop_channels(world, names)
