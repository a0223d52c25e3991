"""Convergence of the runtime worker, with a tiny Python process standing in for spark-submit.

The real driver under spark-submit is covered by tests/integration.
"""

from __future__ import annotations

import sys
import time

import pytest

from runtime_adapter.base import Deployment
from runtime_adapter.spark import SparkRuntime
from runtime_adapter.states import State, TargetState
from runtime_adapter.store import RedisStore
from runtime_adapter.worker import RuntimeWorker
from tests.support.processes import wait_until

FAKE_DRIVERS = {
    "sleeper": "import time\nwhile True: time.sleep(0.1)",
    "crasher": "import sys\nprint('fake driver: cannot parse spec', flush=True)\nsys.exit(3)",
}


class FakeDriverWorker(RuntimeWorker):
    def driver_command(self, deployment: Deployment) -> list[str]:
        return [sys.executable, "-c", FAKE_DRIVERS[deployment.channel]]


@pytest.fixture
def worker(redis_url: str, prefix: str, worker_config):
    config = worker_config(driver_stop_grace=0.5)
    worker = FakeDriverWorker(config, RedisStore.from_url(redis_url, prefix))
    yield worker
    worker.shutdown()


def deploy(runtime: SparkRuntime, channel: str, worker: str | None = "w1") -> None:
    runtime.deploy(Deployment(channel, channel, 1, {}, TargetState.RUNNING, worker_id=worker))


def converge_until(worker: RuntimeWorker, condition, timeout: float = 10.0):
    def step():
        worker.converge()
        return condition()

    return wait_until(step, timeout, interval=0.1)


def test_launches_assigned_connectors_only(worker, runtime):
    deploy(runtime, "sleeper")
    deploy(runtime, "crasher", worker="w2")
    worker.converge()
    assert set(worker.drivers) == {"sleeper"}
    worker.heartbeat()
    [info] = runtime.workers()
    assert info.connectors == ["sleeper"] and info.worker_id == "w1"


def test_stop_target_stops_the_driver_and_reports_stopped(worker, runtime):
    deploy(runtime, "sleeper")
    worker.converge()
    process = worker.drivers["sleeper"].process
    runtime.set_target_state("sleeper", TargetState.STOPPED)
    converge_until(worker, lambda: "sleeper" not in worker.drivers)
    assert process.poll() is not None
    worker.converge()
    assert runtime.status(["sleeper"])["sleeper"].state is State.STOPPED
    runtime.set_target_state("sleeper", TargetState.RUNNING)
    worker.converge()
    assert "sleeper" in worker.drivers, "a stopped connector starts again"


def test_unassigned_driver_is_stopped_without_a_report(worker, runtime):
    deploy(runtime, "sleeper")
    worker.converge()
    runtime.assign("sleeper", "w2")
    converge_until(worker, lambda: "sleeper" not in worker.drivers)
    assert runtime.status(["sleeper"]) == {}


def test_crash_is_reported_failed_with_log_tail_and_not_relaunched(worker, runtime):
    deploy(runtime, "crasher")
    worker.converge()
    converge_until(worker, lambda: "crasher" not in worker.drivers)
    status = runtime.status(["crasher"])["crasher"]
    assert status.state is State.FAILED
    assert status.trace.startswith("driver process exited with code 3")
    assert "cannot parse spec" in status.trace
    worker.converge()
    assert "crasher" not in worker.drivers, "a failed connector waits for a restart"
    runtime.restart("crasher")
    worker.converge()
    assert worker.drivers["crasher"].generation == 1


def test_restart_replaces_the_driver(worker, runtime):
    deploy(runtime, "sleeper")
    worker.converge()
    first = worker.drivers["sleeper"].process
    runtime.restart("sleeper")
    converge_until(worker, lambda: first.poll() is not None)
    converge_until(worker, lambda: "sleeper" in worker.drivers)
    assert worker.drivers["sleeper"].generation == 1
    time.sleep(0.1)
    assert worker.drivers["sleeper"].process.poll() is None


def test_redeploy_of_another_revision_replaces_the_driver(worker, runtime):
    deploy(runtime, "sleeper")
    worker.converge()
    first = worker.drivers["sleeper"].process
    runtime.deploy(Deployment("sleeper", "sleeper", 2, {}, TargetState.RUNNING))
    converge_until(worker, lambda: first.poll() is not None)
    converge_until(worker, lambda: "sleeper" in worker.drivers)
    assert worker.drivers["sleeper"].revision == 2
