"""Faults of brokers and runtime hosts under running channels, on real processes.

Three runtime hosts, each a network namespace of its own with a real runtime worker and its
Spark drivers, run channels that read and write a three-broker Kafka (topics replicated 3
times, ``min.insync.replicas`` 2). Every test checks delivery by event id and prints what it
measured. Hosts with a skewed clock (libfaketime) check liveness: no decision compares two
hosts' clocks (membership of the runtime's Kafka group, and heartbeats timed by the console's
own clock when they change).
"""

from __future__ import annotations

import os
import time
import uuid
from pathlib import Path

import pytest
from confluent_kafka.admin import AdminClient

from runtime_adapter.kafka import probe_group_coordinator
from tests.faults.channels import (
    StateWatch,
    SteadyProducer,
    assert_none_lost_files_once,
    create_channel,
    delivered,
    dump_worker_threads,
    duplicates,
    files_seqs,
    files_sink,
    kafka_seqs,
    kafka_sink,
    make_topic,
    record_figures,
    start_pairs,
    status,
    status_timeline,
    stop_channels,
    tally,
    wait_running,
    wanted,
)
from tests.faults.conftest import REPLICATION, FaultWorld
from tests.support.faketime import skewed_env
from tests.support.netns import BRIDGE_ADDRESS
from tests.support.orders import produce_range
from tests.support.processes import wait_until

BATCH = 3_000
"""Events per batch (one in three is selected)."""
PAIRS = 2
"""Kafka → Kafka and Kafka → files channels, this many of each, in the host-kill test."""
PARTITION_BATCH_LIMIT = 600
"""Events a micro-batch of the partition test reads at most: what "one batch" of duplicates
means there."""
SESSION_TIMEOUT = 10.0
"""The console's ``SLUICE_WORKER_SESSION_TIMEOUT`` (its default, which the stack keeps)."""
START_TIMEOUT = 300
"""Seconds a channel may take to be RUNNING at first (a driver's cold start on 2 busy cores)."""
PARTITION_TRIALS = int(os.environ.get("SLUICE_FAULT_TRIALS", "1"))
"""Times the partition test runs, each with channels of its own (``bench/faults.py``: 20)."""


def leader_of(world: FaultWorld, topic: str, partition: int = 0) -> int:
    admin = AdminClient({"bootstrap.servers": world.cluster.bootstrap})
    return int(admin.list_topics(topic, timeout=10).topics[topic].partitions[partition].leader)


def coordinator_of(world: FaultWorld, group_id: str) -> int:
    """The broker coordinating ``group_id`` (a group with members), as the coordinator itself
    says; the runtime's probe (which computes the group's partition of ``__consumer_offsets``)
    names the same."""
    admin = AdminClient({"bootstrap.servers": world.cluster.bootstrap})
    described = admin.describe_consumer_groups([group_id])[group_id].result(timeout=10)
    assert described.members, f"group {group_id} has no member: not the runtime's"
    probed = probe_group_coordinator(admin, group_id, timeout=5)
    assert probed is not None and not probed.vacant, probed
    assert probed.leader == described.coordinator.id, (probed, described.coordinator)
    return int(described.coordinator.id)


def kill_the_coordinator_under_a_channel(
    world: FaultWorld, label: str, *, controller: bool = False
) -> str:
    """Kill the broker that is the runtime group's coordinator, which also leads a partition
    of a running channel's source, send events while it is down, start it again: the channel
    is RUNNING in every sample and loses nothing. ``controller``: the coordinator must also
    be the active KRaft controller (the group was set up so). What was measured, as a
    sentence."""
    suffix = uuid.uuid4().hex[:6]
    source = make_topic(world, f"{label}-in-{suffix}")
    sink = make_topic(world, f"{label}-out-{suffix}")
    name = f"{label}-{suffix}"
    create_channel(world, name, source, kafka_sink(world, sink))
    produce_range(world.cluster.bootstrap, source, 0, BATCH)
    started_in = wait_running(world, [name], START_TIMEOUT)
    first = kafka_seqs(world, sink, wanted(BATCH), timeout=180)
    assert wanted(BATCH) <= first.keys(), f"lost {len(wanted(BATCH) - first.keys())} before"

    watch = StateWatch(world, [name])
    victim = coordinator_of(world, world.stack.env["SLUICE_RUNTIME_GROUP_ID"])
    led = [p for p in range(3) if leader_of(world, source, p) == victim]
    assert led, f"broker {victim} leads no partition of {source}"  # leaders are striped
    active = world.cluster.active_controller()
    assert active == victim or not controller, (
        f"the coordinator, broker {victim}, is not the active controller ({active})"
    )
    killed_at, killed_wall = time.monotonic(), time.time()
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

    if not_running:
        dump_worker_threads(world)
        first_off = not_running[0][0] - killed_at
        timeline = status_timeline(world, name, killed_wall - 15)
        raise AssertionError(
            f"the channel left RUNNING {first_off:.1f} s after the kill of broker {victim} "
            f"(at {time.strftime('%H:%M:%S', time.gmtime(killed_wall))}): "
            f"{not_running[:3]}…; the status topic since 15 s before the kill:\n{timeline}"
        )
    assert len(watch.samples) > 20, "too few state samples to say it never stopped"
    lost = wanted(3 * BATCH) - after.keys()
    assert lost == set(), f"lost {len(lost)} events"
    wait_until(
        lambda: all(len(r) == REPLICATION for r in world.cluster.in_sync_replicas(sink).values()),
        120,
        what=f"broker {victim} back in the sink topic's in-sync replicas",
    )
    stop_channels(world, [name])
    return (
        f"broker {victim} (the runtime group's coordinator, "
        f"{'also' if active == victim else 'not'} the active controller, leader of {source} "
        f"partitions {led}) killed: the channel stayed RUNNING in all "
        f"{len(watch.samples)} samples; events sent while it was down all delivered "
        f"{delivered_in:.1f} s after the kill; broker back in {back_in:.1f} s; "
        f"{len(wanted(3 * BATCH))} events selected, 0 lost, {duplicates(after)} duplicates "
        f"(first start took {started_in:.1f} s)"
    )


def test_a_killed_broker_stops_no_channel_and_loses_no_event(world: FaultWorld) -> None:
    """The broker killed is the worst one: the runtime group's coordinator, which also leads
    a partition of the channel's source. The workers' coordinator is silent until another
    broker takes its partition over (the controller waits out the broker's session first):
    the members see it gone (its listener refuses) and ride that out, no fence."""
    print(f"\n{kill_the_coordinator_under_a_channel(world, 'faults-broker')}")


def test_a_killed_runtime_host_moves_its_channels_without_losing_events(
    world: FaultWorld, tmp_path: Path
) -> None:
    source, sinks = start_pairs(world, "faults-host", PAIRS, tmp_path)
    names = list(sinks)
    produce_range(world.cluster.bootstrap, source, 0, BATCH)
    wait_running(world, names, START_TIMEOUT)
    placement = {name: status(world, name)["worker_id"] for name in names}
    # The host running the most channels, among those running a files channel.
    victim = max(
        {placement[name] for name in names if isinstance(sinks[name], Path)},
        key=lambda worker: sum(1 for host in placement.values() if host == worker),
    )
    moving = sorted(name for name in names if placement[name] == victim)

    killed_at = time.monotonic()
    killed = world.hosts[victim].kill()
    produce_range(world.cluster.bootstrap, source, BATCH, 2 * BATCH)  # while they move
    wait_running(world, moving, 240, avoid=victim)
    moved_after = time.monotonic() - killed_at
    assert world.hosts[victim].pids() == [], "a process of the killed host survived"

    expected = wanted(2 * BATCH)
    found = delivered(world, sinks, expected)
    lost, doubled = tally(found, expected)
    for name, seqs in found.items():
        assert set(seqs) <= expected, f"{name} delivered events its filter drops"
    delivered_after = time.monotonic() - killed_at
    print(
        f"\nhost {victim} killed ({len(killed)} processes) under {len(names)} channels on "
        f"{len(world.hosts)} hosts: its {len(moving)} channel(s) {moving} RUNNING on other "
        f"hosts {moved_after:.1f} s after the kill; every event delivered "
        f"{delivered_after:.1f} s after the kill; {len(expected)} events selected per channel; "
        f"lost {sum(lost.values())}; duplicates {doubled}"
    )
    assert_none_lost_files_once(sinks, lost, doubled)
    world.start_worker(victim)  # capacity back for the tests after this one
    stop_channels(world, names)


def start_partition_channels(world: FaultWorld, tmp_path: Path) -> tuple[list[str], str, str, Path]:
    """A Kafka and a files channel on one source, both RUNNING with a first batch through:
    their names, the source and sink topics and the files sink's folder."""
    suffix = uuid.uuid4().hex[:6]
    source = make_topic(world, f"faults-cut-in-{suffix}")
    sink = make_topic(world, f"faults-cut-out-{suffix}")
    outbox = tmp_path / "outbox"
    names = [f"faults-cut-kafka-{suffix}", f"faults-cut-files-{suffix}"]
    create_channel(world, names[0], source, kafka_sink(world, sink), PARTITION_BATCH_LIMIT)
    create_channel(world, names[1], source, files_sink(outbox), PARTITION_BATCH_LIMIT)
    produce_range(world.cluster.bootstrap, source, 0, BATCH)
    wait_running(world, names, START_TIMEOUT)
    assert wanted(BATCH) <= kafka_seqs(world, sink, wanted(BATCH), timeout=180).keys()
    return names, source, sink, outbox


@pytest.mark.parametrize("trial", range(PARTITION_TRIALS))
def test_a_partitioned_host_and_its_successor_never_deliver_side_by_side(
    world: FaultWorld, tmp_path: Path, trial: int
) -> None:
    """The host loses its network: it fences itself (kills its drivers) before its session
    in the runtime group expires, and only then are its channels moved."""
    names, source, sink, outbox = start_partition_channels(world, tmp_path)
    victim = status(world, names[0])["worker_id"]
    moving = [name for name in names if status(world, name)["worker_id"] == victim]
    host = world.hosts[victim]
    cut_at = time.monotonic()
    host.partition()
    steady = SteadyProducer(world, source, start=BATCH)  # events flow through the hand-over
    try:
        wait_running(world, moving, 240, avoid=victim)
        moved_after = time.monotonic() - cut_at
        time.sleep(10)  # the successor delivers while the old owner may still run
    finally:
        sent = steady.stop()
        host.heal()
    healed_after = time.monotonic() - cut_at
    # The old owner is back on the network: whatever it still runs now competes.
    produce_range(world.cluster.bootstrap, source, sent, sent + BATCH)
    expected = wanted(sent + BATCH)
    in_kafka = kafka_seqs(world, sink, expected, timeout=240, settle=20)
    in_files = files_seqs(outbox, expected, timeout=240)
    after_heal = expected - wanted(sent)
    twice_after_heal = sum(in_kafka[seq] - 1 for seq in after_heal if in_kafka[seq] > 1)
    owners = {name: status(world, name)["worker_id"] for name in names}
    print(
        f"\nhost {victim} cut off from everything: {moving} RUNNING elsewhere "
        f"{moved_after:.1f} s after the cut; healed at {healed_after:.1f} s; {len(expected)} "
        f"events selected; Kafka sink: {len(expected - in_kafka.keys())} lost, "
        f"{duplicates(in_kafka)} duplicates ({twice_after_heal} of events sent after the heal; "
        f"a batch reads at most {PARTITION_BATCH_LIMIT} events); files sink: "
        f"{len(expected - in_files.keys())} lost, {duplicates(in_files)} duplicates; owners "
        f"after the heal: {owners}"
    )
    record_figures(
        "partition",
        trial=trial,
        moved_after=round(moved_after, 1),
        events=len(expected),
        kafka_lost=len(expected - in_kafka.keys()),
        kafka_duplicates=duplicates(in_kafka),
        twice_after_heal=twice_after_heal,
        files_lost=len(expected - in_files.keys()),
        files_duplicates=duplicates(in_files),
        batch_limit=PARTITION_BATCH_LIMIT,
        moved=len(moving),
    )
    assert expected - in_kafka.keys() == set() and expected - in_files.keys() == set()
    assert twice_after_heal == 0, "two owners delivered after the heal"
    assert duplicates(in_kafka) <= PARTITION_BATCH_LIMIT, "more than one batch twice"
    assert duplicates(in_files) == 0, "the files sink is exactly once"
    assert victim not in owners.values(), f"the cut-off host took a channel back: {owners}"
    stop_channels(world, names)


def test_a_host_cut_off_from_redis_alone_keeps_its_channels_and_delivers(
    world: FaultWorld, tmp_path: Path
) -> None:
    """The host loses Redis only: it is still a member of the runtime group (it reaches
    Kafka), so it keeps its channels and delivers throughout; nobody else runs them (a
    second owner would deliver every event twice). Its statuses wait for Redis: meanwhile
    the channels are shown NOT_REPORTING, then RUNNING on the same host again."""
    names, source, sink, outbox = start_partition_channels(world, tmp_path)
    victim = status(world, names[0])["worker_id"]
    mine = [name for name in names if status(world, name)["worker_id"] == victim]
    host = world.hosts[victim]
    redis_port = int(world.redis.bridge_url.rsplit(":", 1)[1].split("/")[0])
    host.partition((BRIDGE_ADDRESS, redis_port))
    steady = SteadyProducer(world, source, start=BATCH)
    try:
        time.sleep(3 * SESSION_TIMEOUT)  # well past any session timeout
        during = steady.stop()
        delivered = kafka_seqs(world, sink, wanted(during), timeout=60)
        shown = {name: status(world, name) for name in mine}
    finally:
        host.heal()
    wait_running(world, names, 120)
    produce_range(world.cluster.bootstrap, source, during, during + BATCH)
    expected = wanted(during + BATCH)
    in_kafka = kafka_seqs(world, sink, expected, timeout=240, settle=20)
    in_files = files_seqs(outbox, expected, timeout=240)
    owners = {name: status(world, name)["worker_id"] for name in names}
    print(
        f"\nhost {victim} cut off from Redis for {3 * SESSION_TIMEOUT:g} s: "
        f"{len(wanted(during) - delivered.keys())} of the events sent meanwhile not delivered "
        f"during the cut; shown as {[s['state'] for s in shown.values()]}; Kafka sink: "
        f"{len(expected - in_kafka.keys())} lost, {duplicates(in_kafka)} duplicates; files "
        f"sink: {len(expected - in_files.keys())} lost, {duplicates(in_files)} duplicates; "
        f"owners after the heal: {owners}"
    )
    assert wanted(during) <= delivered.keys(), "delivered while cut off from Redis"
    assert all(s["state"] == "NOT_REPORTING" for s in shown.values()), shown
    assert all(owners[name] == victim for name in mine), f"moved off a live member: {owners}"
    assert expected - in_kafka.keys() == set() and expected - in_files.keys() == set()
    assert duplicates(in_kafka) == 0, "no second owner: nothing delivered twice"
    assert duplicates(in_files) == 0, "the files sink is exactly once"
    stop_channels(world, names)


def worker_state(world: FaultWorld, worker_id: str) -> str | None:
    answer = world.stack.session().get(f"{world.stack.api}/workers/{worker_id}/", timeout=5)
    return str(answer.json()["state"]) if answer.status_code == 200 else None


SKEWED = {"SLUICE_WARM_DRIVERS": "0", "SLUICE_RUNTIME_MEMBERSHIP": "false"}
"""A skewed host runs without the runtime group: under libfaketime librdkafka's timed waits
go wrong in the whole process (its metadata requests time out), which a host whose clock is
merely off does not do. Its liveness is then the console's observation of its heartbeats,
whose times it writes by its skewed clock: the part a skew could fool."""


def test_a_host_whose_clock_is_30_s_slow_is_not_declared_dead(world: FaultWorld) -> None:
    slow = world.add_host({**skewed_env("-30s"), **SKEWED})
    try:
        wait_until(lambda: worker_state(world, slow), 60, what=f"{slow} registered")
        samples = []
        for _ in range(int(SESSION_TIMEOUT) + 3):  # a false death shows within one timeout
            samples.append(worker_state(world, slow))
            time.sleep(1)
        print(f"\n{slow}, its clock 30 s slow, as the console saw it each second: {samples}")
        assert set(samples) == {"ALIVE"}, f"a live host with a slow clock declared {samples}"
    finally:
        world.hosts[slow].kill()


def test_a_host_whose_clock_is_30_s_fast_is_found_dead_within_its_session(
    world: FaultWorld,
) -> None:
    fast = world.add_host({**skewed_env("+30s"), **SKEWED})
    wait_until(lambda: worker_state(world, fast) == "ALIVE", 60, what=f"{fast} ALIVE")
    killed_at = time.monotonic()
    world.hosts[fast].kill()
    wait_until(lambda: worker_state(world, fast) == "DEAD", 60, what=f"{fast} DEAD")
    found_after = time.monotonic() - killed_at
    print(f"\n{fast}, its clock 30 s fast, killed: declared DEAD {found_after:.1f} s later")
    assert found_after <= SESSION_TIMEOUT + 3, (
        f"found dead {found_after:.1f} s after the kill, session timeout {SESSION_TIMEOUT} s"
    )
