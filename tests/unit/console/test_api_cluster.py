"""``GET /api/v1/cluster/``: runtime workers, the Spark cluster and each channel's executors."""

from __future__ import annotations

import time

import pytest
import redis

from console import services
from runtime_adapter.base import (
    ExecutorInfo,
    SparkApplication,
    SparkCluster,
    SparkWorker,
    WorkerInfo,
)
from runtime_adapter.states import State

pytestmark = pytest.mark.django_db

CLUSTER = "/api/v1/cluster/"
EXECUTORS = [
    ExecutorInfo("driver", "10.0.0.2", 40000, 0, 0, 0, 0, 1000, 2000),
    ExecutorInfo("0", "10.0.0.7", 41000, 1, 2, 40, 1, 4096, 1 << 27),
]


def standalone(now: float) -> SparkCluster:
    return SparkCluster(
        mode="standalone",
        master="spark://10.0.0.1:7077",
        status="ALIVE",
        web_ui="http://10.0.0.1:8080",
        workers=[
            SparkWorker("worker-1", "10.0.0.7", 35000, "ALIVE", 4, 1, 8192, 512, now - 2.5),
            SparkWorker("worker-2", "10.0.0.8", 35001, "DEAD", 4, 0, 8192, 0, now - 120),
        ],
        applications=[SparkApplication("app-1", "sluice-orders", "RUNNING", 1, 512, now - 60)],
    )


def test_requires_authentication(anon):
    assert anon.get(CLUSTER).status_code in (401, 403)


def test_local_mode_lists_runtime_workers_and_channel_executors(api, runtime, spec, dead_worker):
    now = time.time()
    runtime.worker_infos["w1"] = WorkerInfo("w1", "host-1", 101, now - 100, now - 1, ["orders"])
    dead_worker("w0", at=now - 60)  # the control loop's judgment, not the heartbeat's age
    services.start_channel(services.create_channel(name="orders", spec=spec))
    services.create_channel(name="idle", spec=spec)  # never started: no connector
    runtime.report("orders", State.RUNNING, "w1", executors=EXECUTORS[:1])

    body = api.get(CLUSTER).json()

    dead, alive = body["runtime_workers"]
    assert (alive["worker_id"], alive["host"], alive["pid"], alive["state"]) == (
        "w1",
        "host-1",
        101,
        "ALIVE",
    )
    assert alive["connectors"] == ["orders"]
    assert 0.9 <= alive["heartbeat_age"] < 10
    assert alive["last_heartbeat"].endswith("Z") or "+00:00" in alive["last_heartbeat"]
    assert dead["worker_id"] == "w0" and dead["state"] == "DEAD"
    assert body["spark"] == {
        "mode": "local",
        "master": "local[*]",
        "status": None,
        "web_ui": None,
        "error": None,
        "workers": [],
        "applications": [],
    }
    [channel] = body["channels"]
    assert channel["name"] == "orders" and channel["state"] == "RUNNING"
    assert channel["worker_id"] == "w1"
    assert channel["executors"] == [
        {
            "id": "driver",
            "host": "10.0.0.2",
            "port": 40000,
            "cores": 0,
            "active_tasks": 0,
            "completed_tasks": 0,
            "failed_tasks": 0,
            "memory_used": 1000,
            "memory_total": 2000,
        }
    ]


def test_standalone_master_workers_and_executors(api, runtime, spec):
    now = time.time()
    runtime.cluster = standalone(now)
    services.start_channel(services.create_channel(name="orders", spec=spec))
    runtime.report("orders", State.RUNNING, "w1", executors=EXECUTORS, application_id="app-1")

    body = api.get(CLUSTER).json()

    spark = body["spark"]
    assert (spark["mode"], spark["master"], spark["status"], spark["error"]) == (
        "standalone",
        "spark://10.0.0.1:7077",
        "ALIVE",
        None,
    )
    first, second = spark["workers"]
    assert first["worker_id"] == "worker-1" and first["state"] == "ALIVE"
    assert (first["cores"], first["cores_used"], first["memory_mb"], first["memory_used_mb"]) == (
        4,
        1,
        8192,
        512,
    )
    assert 2.0 <= first["heartbeat_age"] < 10 and first["last_heartbeat"]
    assert second["state"] == "DEAD" and second["heartbeat_age"] >= 119
    assert spark["applications"][0]["name"] == "sluice-orders"
    [channel] = body["channels"]
    assert channel["application_id"] == "app-1"
    assert [e["id"] for e in channel["executors"]] == ["driver", "0"]
    assert channel["executors"][1]["active_tasks"] == 2


def test_each_runtime_worker_shows_its_drivers_and_the_channels_they_host(
    api, admin_client, runtime, spec
):
    now = time.time()
    runtime.heartbeat("w1", at=now - 1)
    for name in ("orders", "payments", "audit"):
        services.start_channel(services.create_channel(name=name, spec=spec))
    runtime.host_driver("w1-shared-1", "w1", ["payments", "orders"], capacity=50, at=now - 2)
    runtime.host_driver(
        "w1-dedicated-audit",
        "w1",
        ["audit", "deleted-long-ago"],
        isolation="dedicated",
        capacity=1,
        memory="2g",
        at=now - 3,
        application_id="local-1700000000",
    )
    runtime.report("orders", State.RUNNING, "w1", driver_id="w1-shared-1")
    runtime.report("audit", State.RUNNING, "w1", driver_id="w1-dedicated-audit")

    body = api.get(CLUSTER).json()

    [worker] = body["runtime_workers"]
    dedicated, shared = worker["drivers"]
    assert shared["driver_id"] == "w1-shared-1"
    assert (shared["isolation"], shared["capacity"], shared["memory"], shared["cores"]) == (
        "shared",
        50,
        "1g",
        0,
    )
    assert shared["channels"] == shared["connectors"] == ["orders", "payments"]
    assert 1.9 <= shared["heartbeat_age"] < 10 and shared["pid"] > 0
    assert shared["application_id"] is None
    assert (dedicated["isolation"], dedicated["capacity"], dedicated["memory"]) == (
        "dedicated",
        1,
        "2g",
    )
    assert dedicated["application_id"] == "local-1700000000"
    # A connector the console does not know belongs to no team: only a site admin sees it
    # (by id, not as a channel).
    assert dedicated["connectors"] == dedicated["channels"] == ["audit"]
    drivers = {c["name"]: c["driver_id"] for c in body["channels"]}
    assert drivers == {"audit": "w1-dedicated-audit", "orders": "w1-shared-1"}
    [as_admin] = admin_client.get(CLUSTER).json()["runtime_workers"]
    assert as_admin["drivers"][0]["connectors"] == ["audit", "deleted-long-ago"]
    assert as_admin["drivers"][0]["channels"] == ["audit"]


def test_a_worker_without_drivers_has_an_empty_list(api, runtime):
    runtime.heartbeat("w1")

    [worker] = api.get(CLUSTER).json()["runtime_workers"]

    assert worker["drivers"] == []


def test_a_master_that_does_not_answer_is_reported_not_a_failure(api, runtime):
    runtime.cluster = SparkCluster(
        mode="standalone",
        master="spark://10.0.0.1:7077",
        error="the Spark master did not answer: http://10.0.0.1:8080/json/: refused",
    )

    response = api.get(CLUSTER)

    assert response.status_code == 200
    assert response.json()["spark"]["error"].startswith("the Spark master did not answer")
    assert response.json()["spark"]["workers"] == []


def test_an_unreachable_runtime_is_503(api, runtime):
    runtime.unavailable = redis.exceptions.ConnectionError("connection refused")
    response = api.get(CLUSTER)
    assert response.status_code == 503


def test_schema_describes_the_cluster_view(anon):
    schema = anon.get("/api/schema/", {"format": "json"}).json()
    operation = schema["paths"]["/api/v1/cluster/"]["get"]
    assert operation["operationId"] == "cluster_retrieve"
    assert set(operation["responses"]) == {"200", "503"}
    components = schema["components"]["schemas"]
    assert {"runtime_workers", "spark", "channels"} <= components["Cluster"]["properties"].keys()
    assert {"cores", "cores_used", "memory_mb", "last_heartbeat"} <= components["SparkWorker"][
        "properties"
    ].keys()
    assert {"id", "host", "cores", "active_tasks", "memory_used"} <= components["Executor"][
        "properties"
    ].keys()
    assert "drivers" in components["ClusterRuntimeWorker"]["required"]
    assert {"driver_id", "isolation", "capacity", "memory", "heartbeat_age", "channels"} <= (
        components["ClusterDriver"]["properties"].keys()
    )
    assert "driver_id" in components["ClusterChannel"]["properties"]
