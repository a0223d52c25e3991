"""Sluice on a real Spark standalone cluster: a master and two workers from the pyspark
package on 127.0.0.1, two runtime workers, and two channels whose executors run on the
standalone workers.

* Kafka → filter → Kafka: the Kafka source and sink run on executors, so the connector jars
  the driver was started with (``--jars``) must have reached them.
* generator → preview next to it: with ``SLUICE_MAX_CORES=1`` each connector takes one of the
  two one-core workers, so the second channel is not starved by the first.
* ``GET /api/v1/cluster/`` lists both Spark workers ALIVE with cores and memory, both
  runtime workers, and each channel's Spark application and executors.
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.integration.test_walking_skeleton import (
    consume_all,
    make_topic,
    produce,
    wait_for_state,
)
from tests.support.processes import wait_until
from tests.support.spark_cluster import StandaloneCluster, standalone_cluster
from tests.support.stack import Stack, running_stack

pytestmark = pytest.mark.integration

EVENTS = 2_000


@pytest.fixture(scope="module")
def spark(tmp_path_factory: pytest.TempPathFactory, artifacts_dir: Path) -> Iterator:
    with standalone_cluster(
        tmp_path_factory.mktemp("spark"), artifacts_dir / "spark-standalone", workers=2
    ) as cluster:
        yield cluster


@pytest.fixture(scope="module")
def cluster_stack(
    spark: StandaloneCluster,
    redis_url: str,
    kafka_bootstrap: str,
    tmp_path_factory: pytest.TempPathFactory,
    artifacts_dir: Path,
) -> Iterator[Stack]:
    # A Redis database of its own: the session's other stacks (and their Celery queues)
    # share this Redis server.
    isolated_redis = redis_url.rsplit("/", 1)[0] + "/3"
    with running_stack(
        redis_url=isolated_redis,
        kafka=kafka_bootstrap,
        var=tmp_path_factory.mktemp("var-standalone"),
        log_dir=artifacts_dir / "stack-standalone",
        runtime_workers=2,
        extra_env={
            "SPARK_MASTER": spark.master_url,
            "SLUICE_SPARK_MASTER_UI_URL": spark.ui_url,
            "SLUICE_DRIVER_MEMORY": "768m",
            "SLUICE_EXECUTOR_MEMORY": "512m",
            "SLUICE_EXECUTOR_CORES": "1",
            "SLUICE_MAX_CORES": "1",
            # No warm driver holding a core of the two while it waits, and a driver with no
            # channel left retires at once: stopping the channels gives the cores back.
            "SLUICE_WARM_DRIVERS": "0",
            "SLUICE_DRIVER_IDLE_SECONDS": "0",
            # One channel on each runtime worker (a driver each, on a one-core Spark worker
            # each): the console's least-loaded placement spreads two channels for sure; the
            # group's puts them where their names' slots are owned.
            "SLUICE_RUNTIME_PLACEMENT": "console",
        },
    ) as stack:
        yield stack


def kafka_spec(bootstrap: str, source: str, sink: str) -> dict:
    return {
        "source": {
            "type": "kafka",
            "config": {
                "bootstrap_servers": bootstrap,
                "topics": [source],
                "starting_offsets": "earliest",
                "format": "json",
            },
        },
        "transforms": [{"type": "filter", "config": {"pattern": {"data": {"kind": ["keep"]}}}}],
        "sink": {
            "type": "kafka",
            "config": {"bootstrap_servers": bootstrap, "topic": sink, "format": "json"},
        },
    }


GENERATOR_SPEC = {
    "source": {"type": "generator", "config": {"rate": 5}},
    "transforms": [],
    "sink": {"type": "preview", "config": {"max_events": 20}},
}


def start(stack: Stack, name: str, spec: dict) -> None:
    http = stack.session()
    created = http.post(f"{stack.api}/channels/", json={"name": name, "spec": spec}, timeout=10)
    assert created.status_code == 201, created.text
    assert http.post(f"{stack.api}/channels/{name}/start", timeout=10).status_code == 202


def remote_executors(channel: dict) -> list[dict]:
    """The executors a standalone worker launched (not the driver's own entry)."""
    return [e for e in channel["executors"] if e["id"] != "driver"]


def test_channels_run_on_a_standalone_cluster_and_the_cluster_view_shows_it(
    cluster_stack: Stack, spark: StandaloneCluster
):
    stack = cluster_stack
    http = stack.session()
    source, sink = "standalone-in", "standalone-out"
    make_topic(stack.kafka, source, 2)
    make_topic(stack.kafka, sink, 1)
    payloads = [{"seq": seq, "kind": "keep" if seq % 2 else "drop"} for seq in range(EVENTS)]
    produce(stack.kafka, source, [json.dumps(p).encode() for p in payloads])
    expected = sorted(p["seq"] for p in payloads if p["kind"] == "keep")

    started_at = time.monotonic()
    start(stack, "on-standalone", kafka_spec(stack.kafka, source, sink))
    start(stack, "standalone-tail", GENERATOR_SPEC)
    wait_for_state(stack, "on-standalone", "RUNNING", 240)
    wait_for_state(stack, "standalone-tail", "RUNNING", 240)
    print(
        f"\ndeploy -> both RUNNING on the standalone master: {time.monotonic() - started_at:.1f}s"
    )

    # Events flow through executors on the standalone workers (Kafka jars included).
    values = consume_all(stack.kafka, sink, len(expected), timeout=240)
    seqs = sorted(json.loads(value)["seq"] for value in values)
    assert seqs == expected
    print(f"deploy -> {len(values)} events in the sink: {time.monotonic() - started_at:.1f}s")

    def tail() -> list | None:
        events = http.get(f"{stack.api}/channels/standalone-tail/preview", timeout=5).json()
        return events["events"] or None

    wait_until(tail, 120, interval=1, what="events in the second channel's live tail")

    # The cluster view: both Spark workers, both runtime workers, each channel's executors.
    def cluster_complete() -> dict | None:
        response = http.get(f"{stack.api}/cluster/", timeout=10)
        assert response.status_code == 200, response.text
        body = response.json()
        channels = {c["name"]: c for c in body["channels"]}
        done = len(channels) == 2 and all(remote_executors(c) for c in channels.values())
        return body if done else None

    try:
        body = wait_until(cluster_complete, 60, interval=1, what="executors in the cluster view")
    except TimeoutError:
        last = http.get(f"{stack.api}/cluster/", timeout=10).json()
        pytest.fail(f"cluster view incomplete: {last}\n{stack.logs()}\n{spark.logs()}")

    spark_view = body["spark"]
    assert spark_view["mode"] == "standalone" and spark_view["error"] is None
    assert spark_view["master"] == spark.master_url and spark_view["status"] == "ALIVE"
    workers = spark_view["workers"]
    assert len(workers) == 2 and {w["state"] for w in workers} == {"ALIVE"}
    for worker in workers:
        assert worker["host"] == "127.0.0.1"
        assert (worker["cores"], worker["memory_mb"]) == (1, 1024)
        # One connector per one-core worker: spark.cores.max keeps each to one executor.
        assert (worker["cores_used"], worker["memory_used_mb"]) == (1, 512), workers
        assert worker["last_heartbeat"] and worker["heartbeat_age"] < 60
    apps = {app["name"]: app for app in spark_view["applications"]}
    drivers = {c["name"]: c["driver_id"] for c in body["channels"]}
    assert len(set(drivers.values())) == 2, drivers  # one shared driver on each runtime worker
    assert {f"sluice-{driver}" for driver in drivers.values()} <= apps.keys()

    runtime_workers = {w["worker_id"]: w for w in body["runtime_workers"]}
    assert {"it-worker-1", "it-worker-2"} <= runtime_workers.keys()
    assert all(w["state"] == "ALIVE" for w in runtime_workers.values())
    hosted = sorted(c for w in runtime_workers.values() for c in w["connectors"])
    assert hosted == ["on-standalone", "standalone-tail"]

    for channel in body["channels"]:
        assert channel["state"] == "RUNNING"
        assert channel["application_id"] == apps[f"sluice-{channel['driver_id']}"]["app_id"]
        [executor] = remote_executors(channel)
        assert executor["host"] == "127.0.0.1" and executor["cores"] == 1
        assert executor["memory_total"] > 0
        assert {"active_tasks", "memory_used", "completed_tasks"} <= executor.keys()

    for name in ("on-standalone", "standalone-tail"):
        assert http.post(f"{stack.api}/channels/{name}/stop", timeout=10).status_code == 202
    for name in ("on-standalone", "standalone-tail"):
        wait_for_state(stack, name, "STOPPED", 90)

    def cores_released() -> bool:
        return all(w["coresused"] == 0 for w in spark.status()["workers"])

    wait_until(cores_released, 60, interval=1, what="the standalone workers' cores released")
