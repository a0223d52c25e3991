"""The runtime worker's pool of drivers and its placements, with a small Python process
standing in for a Spark driver (it heartbeats and reports its placements RUNNING as a real
one does, through the same store).

The real driver under spark-submit is covered by tests/integration/test_shared_drivers.py.
"""

from __future__ import annotations

import os
import signal
import sys
import time
from dataclasses import replace

import pytest

from runtime_adapter.base import Deployment
from runtime_adapter.host.worker import RuntimeWorker
from runtime_adapter.spark import SparkRuntime
from runtime_adapter.states import State, TargetState
from runtime_adapter.store import RedisStore
from tests.support.processes import wait_until
from tests.support.tcp_proxy import TcpProxy

FAKE_DRIVER = """
import os, sys, time
import redis
from runtime_adapter.base import ConnectorStatus, DriverInfo
from runtime_adapter.states import State
from runtime_adapter.host.link import open_link
from runtime_adapter.store import RedisStore

args = dict(zip(sys.argv[1::2], sys.argv[2::2]))
driver, worker = args["--driver-id"], args["--worker-id"]
# Its worker's host files when the group places (--link), else the store: as a real driver.
store = open_link(args.get("--link"), RedisStore.from_url(os.environ["REDIS_URL"],
                                                          os.environ["SLUICE_REDIS_PREFIX"]))
print(f"fake driver {driver} up", flush=True)
started, beats, listed = time.time(), 0, set()
if os.environ.get("SLUICE_REDIS_PREFIX", "").endswith("-slow"):
    # As a real driver starting its SparkSession: one "not ready" beat, then a long silence.
    store.driver_heartbeat(DriverInfo(driver, worker, os.getpid(), args["--isolation"],
                                      started, time.time(), ready=False))
    time.sleep(2.5)
stopping = {}  # a "slow-" channel's query takes 1.5 s to stop: listed until then
def tick():
    global beats
    placements, deployments = store.placed_deployments(driver)
    for cid in list(stopping):
        if cid in placements or time.time() - stopping[cid] > 1.5:
            del stopping[cid]
    for cid in listed - set(placements):
        if cid.startswith("slow-"):
            stopping.setdefault(cid, time.time())
    listed.clear()
    listed.update(placements)
    for cid, placement in placements.items():
        deployment = deployments.get(cid)
        if deployment is None:
            continue
        failed = deployment.channel in ("crasher", "hogger")
        state = State.FAILED if failed else State.RUNNING
        finished = deployment.channel == "backfill"
        if finished:
            state = State.STOPPED
        trace = "boom" if failed else ""
        if deployment.channel == "hogger":  # as a real driver's memory watch stops it
            trace = (f"StreamingQueryException: Job 3 cancelled because Sluice's memory watch "
                     f"stopped connector {cid}: heap after garbage collection 900 MiB of 1024 MiB")
        store.report(ConnectorStatus(cid, state, worker, placement.generation, trace=trace,
                                     driver_id=driver, finished=finished,
                                     report_interval=5.0))  # (it reports every 0.1 s)
    oomer = [cid for cid, d in deployments.items() if d.channel == "oomer" and cid in placements]
    if oomer and time.time() - placements[oomer[0]].placed_at > 0.5:
        # As a real shared driver whose task ran out of memory (Spark's handler exits the
        # JVM) with Sluice's listener loaded: the error, then the last words.
        print("ERROR SparkUncaughtExceptionHandler: Uncaught exception in thread "
              "Thread[Executor task launch worker for task 0.0 in stage 7.0 (TID 9),5,main]")
        print("java.lang.OutOfMemoryError: Java heap space", flush=True)
        print(f"sluice-last-words connector={oomer[0]} stage=7 tid=9 thread=Executor task "
              "launch worker for task 0.0 in stage 7.0 (TID 9)", flush=True)
        os._exit(52)
    hangs = any(d.channel == "hanger" for d in deployments.values())
    if not hangs or beats < 3:
        beats += 1
        store.driver_heartbeat(DriverInfo(driver, worker, os.getpid(), args["--isolation"],
                                          started, time.time(), int(args["--capacity"]),
                                          connectors=sorted(set(placements) | set(stopping)),
                                          team=args.get("--team", "")))

while True:  # as a real driver, it waits out a store that cannot be reached
    try:
        if store.retired(driver):
            break
        tick()
    except redis.RedisError:
        pass
    time.sleep(0.1)
print(f"fake driver {driver} retired", flush=True)
"""


class FakeDriverWorker(RuntimeWorker):
    def driver_command(
        self,
        driver_id: str,
        isolation: str,
        capacity: int,
        name: str,
        cores: int = 0,
        team: str = "",
    ):
        return [
            sys.executable,
            "-c",
            FAKE_DRIVER,
            *self.driver_arguments(driver_id, isolation, capacity, team),
        ]


@pytest.fixture
def make_worker(redis_url: str, prefix: str, worker_config):
    made: list[RuntimeWorker] = []

    def make(**overrides) -> RuntimeWorker:
        settings = {"driver_stop_grace": 1.0, "warm_drivers": 0, **overrides}
        worker = FakeDriverWorker(worker_config(**settings), RedisStore.from_url(redis_url, prefix))
        made.append(worker)
        return worker

    yield make
    for worker in made:
        worker.shutdown()


@pytest.fixture
def worker(make_worker):
    return make_worker()


def deploy(
    runtime: SparkRuntime,
    channel: str,
    worker: str | None = "w1",
    isolation: str = "shared",
    revision: int = 1,
    team: str = "",
    policy: dict | None = None,
) -> None:
    spec = {"runtime": {"isolation": isolation}}
    runtime.deploy(
        Deployment(
            channel,
            channel,
            revision,
            spec,
            TargetState.RUNNING,
            worker_id=worker,
            team=team,
            policy=policy,
        )
    )


def converge_until(worker: RuntimeWorker, condition, timeout: float = 15.0, what: str = ""):
    def step():
        worker.converge()
        return condition()

    return wait_until(step, timeout, interval=0.1, what=what)


def state_of(runtime: SparkRuntime, cid: str) -> State | None:
    status = runtime.status([cid]).get(cid)
    return status.state if status else None


def driver_of(worker: RuntimeWorker, cid: str) -> str:
    return worker.placed[cid][0]


def test_shared_connectors_share_one_driver_and_dedicated_ones_get_their_own(worker, runtime):
    deploy(runtime, "a")
    deploy(runtime, "b")
    deploy(runtime, "heavy", isolation="dedicated")
    deploy(runtime, "elsewhere", worker="w2")
    worker.converge()
    assert set(worker.placed) == {"a", "b", "heavy"}
    assert driver_of(worker, "a") == driver_of(worker, "b") != driver_of(worker, "heavy")
    assert len(worker.drivers) == 2
    converge_until(worker, lambda: state_of(runtime, "a") == State.RUNNING, what="a RUNNING")
    converge_until(worker, lambda: state_of(runtime, "heavy") == State.RUNNING)
    assert runtime.status(["a"])["a"].driver_id == driver_of(worker, "a")
    worker.heartbeat()
    [info] = runtime.workers()
    assert info.connectors == ["a", "b", "heavy"] and sorted(info.drivers) == sorted(worker.drivers)

    def reported() -> bool:  # a driver heartbeats on its own beat, after its queries' status
        found = {d.driver_id: d for d in runtime.drivers()}
        shared = found.get(driver_of(worker, "a"))
        return bool(
            shared and shared.connectors == ["a", "b"] and driver_of(worker, "heavy") in found
        )

    converge_until(worker, reported, what="both drivers' heartbeats")
    drivers = {d.driver_id: d for d in runtime.drivers()}
    shared = drivers[driver_of(worker, "a")]
    assert shared.isolation == "shared" and shared.connectors == ["a", "b"]
    assert drivers[driver_of(worker, "heavy")].isolation == "dedicated"


def test_a_full_shared_driver_makes_room_in_a_new_one(make_worker, runtime):
    worker = make_worker(channels_per_driver=2)
    for name in ("a", "b", "c"):
        deploy(runtime, name)
    worker.converge()
    assert driver_of(worker, "a") == driver_of(worker, "b") != driver_of(worker, "c")


def test_a_pass_wakes_each_driver_once_however_many_connectors_it_places(worker, runtime):
    """A driver nudged reads all its placements again: one nudge per placement made it
    re-read them over and over while a pass placed or took out hundreds (seen at scale)."""
    names = [f"many-{n}" for n in range(12)]
    for name in names:
        deploy(runtime, name)
    worker.converge()
    [driver_id] = worker.drivers
    assert set(worker.placed) == set(names)
    nudges = runtime.store.key(f"nudge:{driver_id}")  # the stand-in driver never takes them
    assert runtime.store.redis.llen(nudges) == 1
    runtime.set_target_states(names, TargetState.STOPPED)
    runtime.store.redis.delete(nudges)
    worker.converge()
    assert not worker.placed
    assert runtime.store.redis.llen(nudges) == 1


def test_stop_takes_the_connector_out_and_it_is_reported_stopped(worker, runtime):
    deploy(runtime, "a")
    deploy(runtime, "b")
    converge_until(worker, lambda: state_of(runtime, "a") == State.RUNNING)
    driver = driver_of(worker, "a")
    runtime.set_target_state("a", TargetState.STOPPED)
    converge_until(worker, lambda: state_of(runtime, "a") == State.STOPPED, what="a STOPPED")
    assert "a" not in worker.placed and driver_of(worker, "b") == driver
    assert worker.drivers[driver].process.poll() is None, "the neighbour's driver stays"
    runtime.set_target_state("a", TargetState.RUNNING)
    worker.converge()
    assert driver_of(worker, "a") == driver, "started again in the same warm driver"


def test_unassigned_connector_leaves_its_driver_without_a_report(worker, runtime):
    deploy(runtime, "a")
    worker.converge()
    runtime.assign("a", "w2")
    worker.converge()
    assert "a" not in worker.placed
    assert runtime.status(["a"]) == {}


def test_restart_places_a_shared_connector_again_in_the_same_driver(worker, runtime):
    deploy(runtime, "a")
    worker.converge()
    driver, first = worker.placed["a"]
    runtime.restart("a")
    worker.converge()
    again, second = worker.placed["a"]
    assert again == driver and second.generation == first.generation + 1
    deploy(runtime, "a", revision=2)
    worker.converge()
    assert worker.placed["a"][1].revision == 2 and worker.placed["a"][0] == driver


def test_restart_of_a_dedicated_connector_replaces_its_driver(worker, runtime):
    deploy(runtime, "heavy", isolation="dedicated")
    worker.converge()
    first = driver_of(worker, "heavy")
    process = worker.drivers[first].process
    runtime.restart("heavy")
    worker.converge()
    assert driver_of(worker, "heavy") != first
    converge_until(worker, lambda: process.poll() is not None, what="the old driver retired")


def test_a_changed_isolation_moves_the_connector(worker, runtime):
    deploy(runtime, "a")
    worker.converge()
    shared = driver_of(worker, "a")
    deploy(runtime, "a", isolation="dedicated", revision=2)
    worker.converge()
    assert driver_of(worker, "a") != shared
    assert worker.drivers[driver_of(worker, "a")].isolation == "dedicated"


def test_a_killed_driver_fails_each_of_its_connectors_with_the_cause(worker, runtime):
    deploy(runtime, "a")
    deploy(runtime, "b")
    deploy(runtime, "heavy", isolation="dedicated")
    converge_until(worker, lambda: state_of(runtime, "b") == State.RUNNING)
    converge_until(worker, lambda: state_of(runtime, "heavy") == State.RUNNING)
    shared = worker.drivers[driver_of(worker, "a")]
    os.kill(shared.process.pid, signal.SIGKILL)
    converge_until(worker, lambda: state_of(runtime, "a") == State.FAILED, what="a FAILED")
    for name in ("a", "b"):
        status = runtime.status([name])[name]
        assert status.state is State.FAILED
        assert status.trace.startswith(f"driver {shared.driver_id} (pid {shared.process.pid})")
        assert "was killed by SIGKILL" in status.trace.splitlines()[0]
        assert "fake driver" in status.trace, "the tail of the driver's log"
    assert state_of(runtime, "heavy") == State.RUNNING, "another driver's connector is untouched"
    worker.converge()
    assert "a" not in worker.placed, "a failed connector waits for a restart"
    runtime.restart("a")
    worker.converge()
    assert driver_of(worker, "a") != shared.driver_id and "b" not in worker.placed


def test_a_connector_whose_task_ends_a_shared_driver_fails_alone_then_is_quarantined(
    worker, runtime
):
    deploy(runtime, "a")
    deploy(runtime, "b")
    converge_until(worker, lambda: state_of(runtime, "b") == State.RUNNING, what="b RUNNING")
    first = driver_of(worker, "a")
    deploy(runtime, "oomer")  # its stand-in driver dies of its task 0.5 s after placing it
    converge_until(worker, lambda: state_of(runtime, "oomer") == State.FAILED, what="FAILED")
    trace = runtime.status(["oomer"])["oomer"].trace.splitlines()[0]
    assert "ran out of memory (java.lang.OutOfMemoryError)" in trace, trace
    assert "in a task of connector oomer" in trace and "crash 1" in trace, trace
    # Its neighbours were placed again at once, in another driver, and are not FAILED.
    assert first not in worker.drivers and driver_of(worker, "a") == driver_of(worker, "b")
    converge_until(worker, lambda: state_of(runtime, "a") == State.RUNNING, what="a again")
    assert state_of(runtime, "b") == State.RUNNING

    runtime.restart("oomer")  # by its restart policy: in a shared driver, once more
    converge_until(worker, lambda: "oomer" in worker.placed, what="placed again")
    assert worker.drivers[driver_of(worker, "oomer")].isolation == "shared"
    second = driver_of(worker, "a")
    converge_until(worker, lambda: state_of(runtime, "oomer") == State.FAILED, what="again")
    trace = runtime.status(["oomer"])["oomer"].trace.splitlines()[0]
    assert "Quarantined: it brought down 2 shared drivers" in trace, trace
    assert second not in worker.drivers
    converge_until(worker, lambda: state_of(runtime, "b") == State.RUNNING, what="b again")

    runtime.restart("oomer")  # quarantined: a driver of its own; no third shared crash
    converge_until(worker, lambda: "oomer" in worker.placed, what="placed alone")
    assert worker.drivers[driver_of(worker, "oomer")].isolation == "dedicated"
    said = worker.placed["oomer"][1].quarantine  # its driver reports it as its reason
    assert said.startswith("Quarantined: its tasks brought down or overfilled 2 shared"), said
    assert worker.placed["a"][1].quarantine == ""
    third = driver_of(worker, "a")
    converge_until(worker, lambda: state_of(runtime, "oomer") == State.FAILED, what="alone")
    assert third in worker.drivers and state_of(runtime, "a") == State.RUNNING
    assert type(worker)(worker.config, worker.store).crashes.quarantined("oomer", 1), (
        "a restarted worker remembers"
    )

    deploy(runtime, "oomer", revision=2)  # a new revision starts afresh
    runtime.restart("oomer")
    converge_until(worker, lambda: "oomer" in worker.placed, what="the new revision placed")
    assert worker.drivers[driver_of(worker, "oomer")].isolation == "shared"


def test_a_connector_the_memory_watch_stopped_twice_runs_in_a_driver_of_its_own(worker, runtime):
    deploy(runtime, "a")
    deploy(runtime, "hogger")  # its stand-in driver reports it stopped by the memory watch
    converge_until(worker, lambda: state_of(runtime, "hogger") == State.FAILED, what="FAILED")
    shared = driver_of(worker, "a")
    assert worker.crashes.count("hogger", 1) == 1
    assert shared in worker.drivers, "the driver lives on"
    converge_until(worker, lambda: "hogger" not in worker.placed, what="taken out")
    worker.converge()
    assert worker.crashes.count("hogger", 1) == 1, "one stop counts once"

    runtime.restart("hogger")
    converge_until(worker, lambda: "hogger" in worker.placed, what="placed again")
    assert worker.drivers[driver_of(worker, "hogger")].isolation == "shared"
    assert worker.placed["hogger"][1].quarantine == ""
    converge_until(worker, lambda: worker.crashes.count("hogger", 1) == 2, what="counted")

    runtime.restart("hogger")
    converge_until(worker, lambda: "hogger" in worker.placed, what="placed alone")
    assert worker.drivers[driver_of(worker, "hogger")].isolation == "dedicated"
    assert worker.placed["hogger"][1].quarantine.startswith("Quarantined: ")
    converge_until(worker, lambda: state_of(runtime, "hogger") == State.FAILED, what="alone")
    assert worker.crashes.count("hogger", 1) == 2, "a dedicated driver's stop is not counted"
    assert driver_of(worker, "a") == shared and state_of(runtime, "a") == State.RUNNING


def test_a_spare_driver_is_kept_and_takes_a_crashed_driver_s_neighbours(make_worker, runtime):
    worker = make_worker(spare_drivers=1)
    deploy(runtime, "a")
    deploy(runtime, "b")
    converge_until(worker, lambda: state_of(runtime, "b") == State.RUNNING, what="b RUNNING")
    first = driver_of(worker, "a")
    assert driver_of(worker, "b") == first
    # The spare is started once the busy driver is up (not beside its start, for its cores).
    converge_until(worker, lambda: len(worker.drivers) == 2, what="a spare")
    spares = [d for d in worker.drivers if d != first]
    assert len(spares) == 1 and not worker.drivers[spares[0]].placed, "one spare, empty"
    deploy(runtime, "oomer")
    worker.converge()
    assert driver_of(worker, "oomer") == first  # the fullest with room, not the spare
    converge_until(worker, lambda: state_of(runtime, "oomer") == State.FAILED, what="FAILED")
    assert driver_of(worker, "a") == driver_of(worker, "b") == spares[0], "in the spare"
    # A new spare, once the old one (now busy) is up: a pass or more, as its heartbeat comes.
    converge_until(
        worker, lambda: any(not d.placed for d in worker.drivers.values()), what="a new spare"
    )
    empty = [d for d in worker.drivers.values() if not d.placed]
    assert len(empty) == 1 and empty[0].driver_id != spares[0], "a new spare"

    runtime.restart("oomer")  # on probation: in the empty spare, not beside a and b
    converge_until(worker, lambda: "oomer" in worker.placed, what="placed again")
    assert driver_of(worker, "oomer") == empty[0].driver_id
    assert worker.drivers[empty[0].driver_id].placed == {"oomer"}
    converge_until(worker, lambda: state_of(runtime, "oomer") == State.FAILED, what="again")
    assert "Quarantined" in runtime.status(["oomer"])["oomer"].trace
    assert driver_of(worker, "a") == driver_of(worker, "b") == spares[0], "a and b untouched"


def test_a_driver_that_stops_heartbeating_is_killed_and_its_connectors_fail(make_worker, runtime):
    worker = make_worker(driver_session_timeout=1.5)
    deploy(runtime, "hanger")  # its stand-in driver stops heartbeating after three beats
    converge_until(worker, lambda: state_of(runtime, "hanger") == State.FAILED, what="FAILED")
    trace = runtime.status(["hanger"])["hanger"].trace
    assert "stopped heartbeating" in trace.splitlines()[0] and "killed" in trace


def test_a_failed_or_finished_run_is_not_placed_again(worker, runtime):
    deploy(runtime, "crasher")
    deploy(runtime, "backfill")
    converge_until(worker, lambda: "crasher" in worker.failed, what="the failure noted")
    converge_until(worker, lambda: "backfill" in worker.finished, what="the end noted")
    worker.converge()
    assert "crasher" not in worker.placed and "backfill" not in worker.placed
    runtime.restart("backfill")
    worker.converge()
    assert "backfill" in worker.placed


def test_empty_drivers_beyond_the_warm_ones_retire(make_worker, runtime):
    worker = make_worker(warm_drivers=1, driver_idle_seconds=0.0)
    worker.converge()
    [warm] = worker.drivers.values()
    deploy(runtime, "heavy", isolation="dedicated")
    worker.converge()
    dedicated = worker.drivers[driver_of(worker, "heavy")]
    runtime.set_target_state("heavy", TargetState.STOPPED)
    converge_until(worker, lambda: dedicated.process.poll() is not None, what="retired")
    converge_until(worker, lambda: dedicated.driver_id not in worker.drivers)
    assert list(worker.drivers) == [warm.driver_id], "the warm driver stays"
    time.sleep(0.2)
    assert warm.process.poll() is None


def test_a_driver_starting_its_spark_session_gets_the_start_timeout(redis_url, worker_config):
    prefix = f"test-{time.monotonic_ns()}-slow"  # the stand-in driver starts slowly
    config = replace(
        worker_config(driver_stop_grace=1.0, warm_drivers=0, driver_session_timeout=1.0),
        key_prefix=prefix,
    )
    worker = FakeDriverWorker(config, RedisStore.from_url(redis_url, prefix))
    runtime = SparkRuntime(redis_url, prefix)
    try:
        deploy(runtime, "a")
        converge_until(worker, lambda: state_of(runtime, "a") == State.RUNNING, timeout=20)
        assert not any(d.killed_for for d in worker.drivers.values())
    finally:
        worker.shutdown()


class PartitionsWorker(FakeDriverWorker):
    """Real-time connectors' partitions from their (test) spec, not from Kafka."""

    def partitions_of(self, cid: str, deployment: Deployment) -> int:
        return deployment.spec["partitions"]


def test_real_time_connectors_get_their_cores_or_wait_with_the_reason(
    redis_url, prefix, worker_config, runtime
):
    worker = PartitionsWorker(
        worker_config(driver_stop_grace=1.0, warm_drivers=0, worker_cores=3),
        RedisStore.from_url(redis_url, prefix),
    )
    try:
        for name, partitions in (("rt-a", 2), ("rt-b", 2)):
            spec = {"runtime": {"mode": "real-time"}, "partitions": partitions}
            runtime.deploy(Deployment(name, name, 1, spec, TargetState.RUNNING, worker_id="w1"))
        worker.converge()
        driver = worker.drivers[driver_of(worker, "rt-a")]
        assert (driver.isolation, driver.cores) == ("dedicated", 2)
        assert "rt-b" not in worker.placed, "never half-started"
        waiting = runtime.status(["rt-b"])["rt-b"]
        assert waiting.state is State.UNASSIGNED
        assert waiting.reason == (
            "real-time mode needs 2 cores (one per source partition) and worker w1 has 1 of 3 "
            "free (2 held by real-time channels): not started"
        )
        assert waiting.cores_needed == 2  # what the console moves it by (console/services/moves.py)
        runtime.set_target_state("rt-a", TargetState.STOPPED)
        converge_until(worker, lambda: "rt-b" in worker.placed, what="rt-b placed once rt-a stops")
        assert worker.drivers[driver_of(worker, "rt-b")].cores == 2
    finally:
        worker.shutdown()


def test_a_real_time_connector_stopped_while_short_of_cores_is_reported_short_again_on_start(
    redis_url, prefix, worker_config, runtime
):
    """The console moves a connector short of cores by stopping it first (its owner reports
    STOPPED); a move given up sends it RUNNING again there, and the worker says once more that
    it lacks the cores (so the console may move it again)."""
    worker = PartitionsWorker(
        worker_config(driver_stop_grace=1.0, warm_drivers=0, worker_cores=1),
        RedisStore.from_url(redis_url, prefix),
    )
    spec = {"runtime": {"mode": "real-time"}, "partitions": 2}
    try:
        runtime.deploy(Deployment("rt", "rt", 1, spec, TargetState.RUNNING, worker_id="w1"))
        converge_until(worker, lambda: state_of(runtime, "rt") == State.UNASSIGNED)
        runtime.set_target_state("rt", TargetState.STOPPED)
        converge_until(worker, lambda: state_of(runtime, "rt") == State.STOPPED)
        runtime.set_target_state("rt", TargetState.RUNNING)
        converge_until(worker, lambda: state_of(runtime, "rt") == State.UNASSIGNED)
        assert runtime.status(["rt"])["rt"].cores_needed == 2
    finally:
        worker.shutdown()


def test_a_store_outage_longer_than_the_session_timeout_kills_no_driver(
    redis_url, prefix, worker_config
):
    """Worker and driver reach Redis through a proxy taken down for twice the drivers'
    session timeout: the driver's heartbeat is then seconds old, yet it was never silent
    while the store answered: nothing is killed, the connector runs on."""
    port = int(redis_url.rsplit(":", 1)[1].split("/")[0])
    with TcpProxy(port) as proxy:
        url = f"redis://127.0.0.1:{proxy.port}/0"
        config = worker_config(driver_stop_grace=1.0, warm_drivers=0, driver_session_timeout=1.5)
        worker = FakeDriverWorker(replace(config, redis_url=url), RedisStore.from_url(url, prefix))
        runtime = SparkRuntime(redis_url, prefix)
        try:
            deploy(runtime, "a")
            wait_until(lambda: worker.turn() or state_of(runtime, "a") == State.RUNNING, 15, 0.1)
            proxy.down()
            until = time.monotonic() + 3.0
            while time.monotonic() < until:
                worker.turn()  # fails: the store cannot be reached
                time.sleep(0.1)
            assert worker.outage.since is not None
            proxy.up()
            for _ in range(10):
                worker.turn()
                time.sleep(0.1)
            assert not any(d.killed_for for d in worker.drivers.values())
            assert state_of(runtime, "a") == State.RUNNING and "a" in worker.placed
        finally:
            worker.shutdown()


def test_an_emptied_store_is_held_through_until_its_desired_state_is_resent(worker, runtime):
    """The store emptied under running connectors (a new Redis): the worker holds still,
    writes its placements back, and once the console has re-sent the desired state (same
    generations) and set a new token it runs on with the same placements: nothing
    restarted, nothing stopped."""
    deploy(runtime, "a")
    deploy(runtime, "b")
    runtime.store.set_epoch("epoch-1")
    converge_until(worker, lambda: state_of(runtime, "b") == State.RUNNING, what="b RUNNING")
    placed = dict(worker.placed)
    drivers = {d.driver_id: d.process.pid for d in worker.drivers.values()}

    store = runtime.store
    store.redis.delete(*store.redis.keys(f"{store.prefix}:*"))  # emptied
    for _ in range(5):
        worker.converge()
        time.sleep(0.1)
    assert worker.placed == placed, "nothing taken out while the store is empty"
    for driver_id in drivers:
        assert {cid for cid, (did, _) in placed.items() if did == driver_id} == set(
            store.placements(driver_id)
        ), "its placements were written back"

    deploy(runtime, "a")  # the console's re-send: same worker, same generation
    deploy(runtime, "b")
    store.set_epoch("epoch-2")
    converge_until(worker, lambda: state_of(runtime, "a") == State.RUNNING, what="a reported")
    worker.converge()
    assert worker.placed == placed, "same placements (same placed_at): no restart"
    assert {d.driver_id: d.process.pid for d in worker.drivers.values()} == drivers
    for driver_id in drivers:
        assert store.placed_under(driver_id) == "epoch-2"


def test_two_teams_never_share_a_driver_and_each_driver_says_its_team(worker, runtime):
    deploy(runtime, "a1", team="payments")
    deploy(runtime, "a2", team="payments")
    deploy(runtime, "b1", team="search")
    deploy(runtime, "b-heavy", team="search", isolation="dedicated")
    deploy(runtime, "old")  # deployed before teams: the site's shared drivers, as before
    deploy(runtime, "old2")
    worker.converge()
    assert set(worker.placed) == {"a1", "a2", "b1", "b-heavy", "old", "old2"}
    assert driver_of(worker, "a1") == driver_of(worker, "a2")
    assert driver_of(worker, "old") == driver_of(worker, "old2")
    distinct = {driver_of(worker, c) for c in ("a1", "b1", "b-heavy", "old")}
    assert len(distinct) == 4, "no driver hosts two teams' connectors"
    teams = {d.driver_id: d.team for d in worker.drivers.values()}
    assert teams[driver_of(worker, "a1")] == "payments"
    assert teams[driver_of(worker, "b1")] == teams[driver_of(worker, "b-heavy")] == "search"
    assert teams[driver_of(worker, "old")] == ""
    team_of = {"a1": "payments", "a2": "payments", "b1": "search", "b-heavy": "search"}
    for driver in worker.drivers.values():
        hosted = {
            team_of.get(cid, "")
            for cid, (did, _) in worker.placed.items()
            if did == driver.driver_id
        }
        assert hosted == {driver.team}, (driver.driver_id, driver.team, hosted)

    def heartbeats() -> dict[str, str]:
        return {i.driver_id: i.team for i in runtime.drivers() if i.connectors}

    converge_until(worker, lambda: heartbeats() == teams, what="each driver's team heartbeated")


def test_each_team_keeps_its_own_spare_started_once_its_drivers_are_up(make_worker, runtime):
    worker = make_worker(spare_drivers=1)
    deploy(runtime, "a1", team="payments")
    deploy(runtime, "b1", team="search")
    worker.converge()
    assert len(worker.drivers) == 2, "no spare while the teams' drivers start"
    converge_until(worker, lambda: len(worker.drivers) == 4, what="a spare per team")
    spares = [d for d in worker.drivers.values() if not d.placed]
    assert sorted(d.team for d in spares) == ["payments", "search"]
    runtime.set_target_state("b1", TargetState.STOPPED)  # search has nothing here any more
    worker.config = replace(worker.config, driver_idle_seconds=0.0)
    converge_until(
        worker,
        lambda: {d.team for d in worker.drivers.values() if not d.retiring} == {"payments"},
        what="search's drivers retired",
    )


def test_a_team_s_driver_quota_refuses_a_new_driver_by_name_and_places_it_once_room_frees(
    make_worker, runtime
):
    # local[*] on a worker of 2 cores: each shared driver holds 2 of them.
    worker = make_worker(spark_master="local[*]", worker_cores=2, channels_per_driver=1)
    quota = {"drivers": {"cores": 4}}
    for name in ("a1", "a2", "a3"):
        deploy(runtime, name, team="payments", policy=quota)
    deploy(runtime, "b1", team="search", policy={"drivers": {"cores": 2}})
    worker.converge()
    assert {"a1", "a2", "b1"} <= set(worker.placed) and "a3" not in worker.placed
    assert [d.held_cores for d in worker.drivers.values()] == [2, 2, 2]
    waiting = runtime.status(["a3"])["a3"]
    assert waiting.state is State.UNASSIGNED
    assert waiting.reason == (
        "team payments's drivers on worker w1 would hold 6 cores, over its quota of 4 "
        "(max_driver_cores): not started"
    )
    worker.converge()
    assert "a3" not in worker.placed and len(worker.drivers) == 3, "still waiting"

    runtime.set_target_state("a1", TargetState.STOPPED)  # its driver has room again
    freed = driver_of(worker, "a1")
    converge_until(worker, lambda: "a3" in worker.placed, what="a3 placed once room frees")
    assert driver_of(worker, "a3") == freed, "in the team's driver with room, none started"
    assert len(worker.drivers) == 3
    converge_until(worker, lambda: state_of(runtime, "a3") == State.RUNNING, what="a3 runs")


def test_a_memory_quota_retires_the_team_s_idle_driver_to_make_room(make_worker, runtime):
    worker = make_worker(shared_driver_memory="2g", driver_memory="1g")
    quota = {"drivers": {"memory_mib": 3000}}
    deploy(runtime, "a1", team="payments", policy=quota)
    worker.converge()
    shared = worker.drivers[driver_of(worker, "a1")]
    assert shared.memory_mib == 2048
    deploy(runtime, "heavy", team="payments", policy=quota, isolation="dedicated")
    worker.converge()
    assert "heavy" not in worker.placed
    assert runtime.status(["heavy"])["heavy"].reason == (
        "team payments's drivers on worker w1 would hold 3072 MiB of memory, over its quota "
        "of 3000 MiB (max_driver_memory_mib): not started"
    )
    runtime.set_target_state("a1", TargetState.STOPPED)
    converge_until(worker, lambda: "heavy" in worker.placed, what="placed once the idle one left")
    assert shared.process.poll() is not None, "the team's empty shared driver was retired"
    [driver] = [d for d in worker.drivers.values() if not d.exited()]  # (reaped at a next pass)
    assert (driver.isolation, driver.team, driver.memory_mib) == ("dedicated", "payments", 1024)


def test_stale_state_never_puts_a_connector_in_another_team_s_driver(worker, runtime, store):
    from runtime_adapter.store import Placement

    # An earlier run of this worker placed payments's connector in w1.d1, which died before
    # its first heartbeat (so nothing forgot it); the new run starts a w1.d1 for search.
    store.place("w1.d1", "a1", Placement(1, 1, time.time()))
    deploy(runtime, "a1", worker="w2", team="payments")
    deploy(runtime, "b1", team="search")
    worker.converge()
    assert driver_of(worker, "b1") == "w1.d1" and worker.drivers["w1.d1"].team == "search"
    assert set(store.placements("w1.d1")) == {"b1"}, "the leftover placement is gone"
    converge_until(worker, lambda: state_of(runtime, "b1") == State.RUNNING, what="b1 runs")
    [info] = [i for i in runtime.drivers() if i.driver_id == "w1.d1"]
    assert info.connectors == ["b1"] and info.team == "search"

    # Asked to place another team's connector in a driver (stale state): refused.
    a1 = runtime.store.deployment("a1")
    assert a1 is not None
    worker.place("a1", a1, worker.drivers["w1.d1"])
    assert "a1" not in worker.placed and set(store.placements("w1.d1")) == {"b1"}

    # A connector whose channel moved to another team leaves its old team's driver.
    deploy(runtime, "b1", team="payments", revision=2)
    worker.converge()
    moved = worker.drivers[driver_of(worker, "b1")]
    assert moved.driver_id != "w1.d1" and moved.team == "payments"
    assert "b1" not in store.placements("w1.d1")


def test_a_driver_refuses_another_team_s_placements(store, worker_config, caplog):
    from runtime_adapter.host.driver import DriverHost
    from runtime_adapter.store import Placement

    host = DriverHost(store, worker_config(), driver_id="w1.d1", worker_id="w1", team="search")
    placed = Placement(1, 1, 1.0)
    mine = Deployment("b1", "b1", 1, {}, TargetState.RUNNING, worker_id="w1", team="search")
    theirs = replace(mine, connector_id="a1", channel="a1", team="payments")
    placements = {"a1": placed, "b1": placed}
    deployments = {"a1": theirs, "b1": mine}
    with caplog.at_level("ERROR", logger="sluice.driver"):
        assert host.of_its_team(placements, deployments) == {"b1": placed}
        assert host.of_its_team(placements, deployments) == {"b1": placed}
    refusals = [r.getMessage() for r in caplog.records]
    assert refusals == [
        "driver w1.d1 of team search refused connector a1 of team payments: a team's "
        "channels run only in its own drivers"
    ], "said once per placement"


class StubMembership:
    """The worker's membership, as a test sets it (the real one: tests/faults)."""

    def __init__(self) -> None:
        self.member = True

    def join(self) -> None:
        pass

    def live(self) -> bool:
        return self.member

    def close(self) -> None:
        pass


def test_the_self_fence_kills_every_driver_and_nothing_runs_until_a_member_again(worker, runtime):
    membership = StubMembership()
    worker.membership = membership  # type: ignore[assignment]
    deploy(runtime, "a")
    deploy(runtime, "heavy", isolation="dedicated")
    converge_until(
        worker,
        lambda: state_of(runtime, "a") == state_of(runtime, "heavy") == State.RUNNING,
        what="both RUNNING",
    )
    drivers = list(worker.drivers.values())

    membership.member = False
    worker.fence("no answer from the group coordinator for 7.0 s")  # the member's watchdog
    wait_until(lambda: all(d.process.poll() is not None for d in drivers), 10, what="killed")
    for _ in range(3):
        worker.converge()
    assert not worker.placed and not worker.drivers and not worker.failed
    assert state_of(runtime, "a") == State.RUNNING, "not reported FAILED: not a failure"

    membership.member = True
    converge_until(worker, lambda: {"a", "heavy"} <= set(worker.placed), what="placed again")
    assert not {d.driver_id for d in drivers} & set(worker.drivers), "in new drivers"


UNCAUGHT = (
    "ERROR SparkUncaughtExceptionHandler: {shutdown}Uncaught exception in thread Thread["
    "Executor task launch worker for task 0.0 in stage {stage}.0 (TID {tid}),5,main]\n"
    "java.lang.OutOfMemoryError: Java heap space\n"
)


def words(connector: str, stage: int, tid: int) -> str:
    return f"sluice-last-words connector={connector} stage={stage} tid={tid} thread=t\n"


def test_the_offender_is_the_task_spark_s_handler_took_first() -> None:
    from types import SimpleNamespace

    from runtime_adapter.host.worker import offender

    driver = SimpleNamespace(killed_for="")
    first = UNCAUGHT.format(shutdown="", stage=7, tid=9)
    later = UNCAUGHT.format(shutdown="[Container in shutdown] ", stage=8, tid=10)
    both = first + later + words("b", 8, 10) + words("a", 7, 9)
    assert offender(driver, both) == "a"
    assert offender(driver, words("a", 7, 9) + words("a", 7, 11)) == "a"  # two of its tasks
    assert offender(driver, words("a", 7, 9) + words("b", 8, 10)) is None  # who was first?
    assert offender(driver, first) is None  # no listener: nobody named
    assert offender(SimpleNamespace(killed_for="stopped heartbeating"), both) is None
