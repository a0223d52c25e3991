"""Records in Redis written by a newer process than the one reading them.

A cluster is upgraded one process at a time: a driver started from new code may report a
status field a runtime worker (or the console) still running the old code does not know. The
reader must ignore it, not crash; and a runtime worker whose pass fails anyway keeps going
(one that crashed took its drivers down with it).
"""

from __future__ import annotations

import json
import time

from runtime_adapter.host.worker import RuntimeWorker
from runtime_adapter.states import State
from runtime_adapter.store import RedisStore, status_from_json


def test_a_status_with_fields_this_code_does_not_know_still_reads() -> None:
    raw = json.dumps(
        {
            "connector_id": "orders",
            "state": "RUNNING",
            "worker_id": "w1",
            "generation": 2,
            "field_from_the_future": {"x": 1},
            "tasks": [{"task_id": 0, "state": "RUNNING", "worker_id": "w1", "new_task_field": 1}],
            "executors": [
                {"executor_id": "1", "host": "10.0.0.5", "port": 4040, "new_executor_field": 1}
            ],
        }
    )
    status = status_from_json(raw)
    assert (status.connector_id, status.state, status.generation) == ("orders", State.RUNNING, 2)
    assert [task.task_id for task in status.tasks] == [0]
    assert [executor.host for executor in status.executors] == ["10.0.0.5"]


def test_a_heartbeat_with_fields_this_code_does_not_know_still_reads(store: RedisStore) -> None:
    beat = {
        "worker_id": "w9",
        "host": "h",
        "pid": 1,
        "started_at": time.time(),
        "last_heartbeat": time.time(),
        "connectors": ["orders"],
        "field_from_the_future": True,
    }
    store.redis.hset(f"{store.prefix}:workers", "w9", json.dumps(beat))
    [worker] = [w for w in store.workers() if w.worker_id == "w9"]
    assert worker.connectors == ["orders"]


class FlakyWorker(RuntimeWorker):
    """A worker whose first passes fail on something other than Redis."""

    passes = 0

    def converge(self) -> None:
        self.passes += 1
        if self.passes < 3:
            raise TypeError("a record this code cannot read")
        self.running = False


def test_the_worker_loop_survives_a_failed_pass(redis_url: str, prefix: str, worker_config):
    config = worker_config(worker_id="w-flaky", heartbeat_interval=0.05)
    worker = FlakyWorker(config, RedisStore.from_url(redis_url, prefix))
    worker.run()  # returns once the third pass stops it; the failures did not end it
    assert worker.passes == 3
    assert [w.worker_id for w in worker.store.workers()] == ["w-flaky"]
