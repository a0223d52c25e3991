"""Simulated runtime workers (``runtime_adapter.host.simulated``, what ``make bench-group``
runs by the thousand): worker processes with stand-in drivers, the group placing channels, on
a real broker and a real Redis. Kept small and fast, so the simulated mode cannot rot."""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from runtime_adapter.base import Deployment
from runtime_adapter.group import GroupConfig, client_id_of, slot_of
from runtime_adapter.spark import SparkRuntime
from runtime_adapter.states import State, TargetState
from tests.support.processes import wait_until
from tests.support.runtime_group import placing_group
from tests.support.simulated import SimulatedWorkers, slot_owners

SLOTS = 12
WORKERS = ("s1", "s2", "s3")
CONNECTORS = [f"sim-{n}" for n in range(60)]


@pytest.fixture
def group(kafka_bootstrap: str) -> GroupConfig:
    return placing_group(kafka_bootstrap, "simulated", SLOTS)


@pytest.fixture
def workers(
    redis_url: str, prefix: str, tmp_path: Path, group: GroupConfig
) -> Iterator[SimulatedWorkers]:
    made = SimulatedWorkers(
        group,
        redis_url,
        prefix,
        var=tmp_path / "var",
        log_dir=tmp_path / "logs",
        env={"SLUICE_WORKER_HEARTBEAT_INTERVAL": "0.5"},
    )
    try:
        yield made
    finally:
        made.stop_all(timeout=15)
        for log in sorted((tmp_path / "logs").glob("*.log")):  # shown when the test failed
            print(f"--- {log.name}\n" + "\n".join(log.read_text().splitlines()[-15:]))


def placed_where_owned(runtime: SparkRuntime, group: GroupConfig) -> bool:
    """Every worker has its share; every connector RUNNING, reported by the worker that
    claimed it, which owns its slot now and runs it in a driver of its own."""
    statuses = runtime.status(CONNECTORS)
    owners = runtime.owners(CONNECTORS)
    if len(statuses) < len(CONNECTORS) or set(owners.values()) != set(WORKERS):
        return False
    assignment = slot_owners(group)
    for cid in CONNECTORS:
        status, owner = statuses[cid], owners.get(cid)
        if status.state != State.RUNNING or owner is None or status.worker_id != owner:
            return False
        if slot_of(cid, SLOTS) not in assignment.get(client_id_of(owner), ()):
            return False
        if not (status.driver_id or "").startswith(f"{owner}.d"):
            return False
    return True


def test_simulated_workers_run_every_channel_on_its_slots_owner(
    redis_url: str, prefix: str, tmp_path: Path, group: GroupConfig, workers: SimulatedWorkers
) -> None:
    runtime = SparkRuntime(redis_url, prefix, checkpoint_root=tmp_path / "checkpoints", group=group)
    runtime.deploy_many(
        [Deployment(cid, cid, 1, {"runtime": {}}, TargetState.RUNNING) for cid in CONNECTORS]
    )
    for worker_id in WORKERS:
        workers.start(worker_id)
    wait_until(
        lambda: placed_where_owned(runtime, group), 60, interval=0.3, what="all on their owners"
    )
    owners = runtime.owners(CONNECTORS)
    hosted: dict[str, list[str]] = {}
    for info in runtime.store.drivers():
        for cid in info.connectors:
            hosted.setdefault(cid, []).append(info.worker_id)
    assert hosted == {cid: [owners[cid]] for cid in CONNECTORS}, "each in one driver, its owner's"

    # A stop and a start reach the stand-in driver, which reports them.
    cid = CONNECTORS[0]
    for target, state in (
        (TargetState.STOPPED, State.STOPPED),
        (TargetState.RUNNING, State.RUNNING),
    ):
        asked = time.time()
        runtime.set_target_state(cid, target)
        wait_until(
            lambda s=state, t=asked: (
                (status := runtime.status([cid]).get(cid)) is not None
                and status.state == s
                and status.updated_at >= t
            ),
            15,
            interval=0.05,
            what=f"{cid} {state}",
        )
