"""What a Spark standalone master reports about its cluster, from its status page.

The master's web UI serves its state as JSON at ``/json/`` (workers with cores, memory
and heartbeats; running applications). With standby masters (ZooKeeper recovery) every
given URL is asked and the ALIVE one answers for the cluster.
"""

from __future__ import annotations

import http.client
import json
import urllib.error
import urllib.request
from typing import Any

from runtime_adapter.base import SparkApplication, SparkCluster, SparkWorker

#: Seconds to wait for a master's status page: the cluster view must stay quick.
TIMEOUT = 3.0


def _seconds(millis: Any) -> float | None:
    return millis / 1000.0 if isinstance(millis, int | float) and millis > 0 else None


def parse_worker(data: dict[str, Any]) -> SparkWorker:
    return SparkWorker(
        worker_id=str(data.get("id", "")),
        host=str(data.get("host", "")),
        port=data.get("port"),
        state=str(data.get("state", "UNKNOWN")),
        cores=int(data.get("cores", 0)),
        cores_used=int(data.get("coresused", 0)),
        memory_mb=int(data.get("memory", 0)),
        memory_used_mb=int(data.get("memoryused", 0)),
        last_heartbeat=_seconds(data.get("lastheartbeat")),
        web_ui=str(data.get("webuiaddress", "")),
    )


def parse_application(data: dict[str, Any]) -> SparkApplication:
    memory = data.get("memoryperexecutor", data.get("memoryperslave", 0))
    return SparkApplication(
        app_id=str(data.get("id", "")),
        name=str(data.get("name", "")),
        state=str(data.get("state", "UNKNOWN")),
        cores=int(data.get("cores", 0)),
        memory_per_executor_mb=int(memory or 0),
        started_at=_seconds(data.get("starttime")),
    )


def parse_master_status(data: object, master: str, web_ui: str) -> SparkCluster:
    """A master's ``/json/`` document as a :class:`SparkCluster`."""
    if not isinstance(data, dict) or "workers" not in data:
        raise ValueError("not a Spark master status document (no 'workers')")
    return SparkCluster(
        mode="standalone",
        master=master,
        status=str(data.get("status", "UNKNOWN")),
        web_ui=web_ui,
        workers=[parse_worker(worker) for worker in data.get("workers") or []],
        applications=[parse_application(app) for app in data.get("activeapps") or []],
    )


def read_master_status(web_ui: str, timeout: float = TIMEOUT) -> object:
    """The JSON document at ``{web_ui}/json/``, any JSON value (:func:`parse_master_status`
    checks its shape); raises ``OSError`` or ``ValueError``."""
    with urllib.request.urlopen(f"{web_ui}/json/", timeout=timeout) as response:
        return json.loads(response.read().decode("utf-8"))


def master_cluster(master: str, web_uis: list[str], timeout: float = TIMEOUT) -> SparkCluster:
    """Ask each of ``web_uis`` in turn; the first ALIVE master answers for the cluster.

    Never raises: a master that cannot be read gives a cluster with ``error`` saying why.
    """
    if not web_uis:
        return SparkCluster(
            mode="standalone",
            master=master,
            error=f"no web UI address could be derived from {master!r}; "
            "set SLUICE_SPARK_MASTER_UI_URL",
        )
    errors: list[str] = []
    fallback: SparkCluster | None = None
    for web_ui in web_uis:
        try:
            cluster = parse_master_status(read_master_status(web_ui, timeout), master, web_ui)
        except (OSError, ValueError, http.client.HTTPException) as exc:  # URLError: OSError
            reason = exc.reason if isinstance(exc, urllib.error.URLError) else exc
            errors.append(f"{web_ui}/json/: {reason}")
            continue
        if cluster.status == "ALIVE":
            return cluster
        fallback = fallback or cluster
    if fallback is not None:
        return fallback
    return SparkCluster(
        mode="standalone",
        master=master,
        web_ui=web_uis[0],
        error="the Spark master did not answer: " + "; ".join(errors),
    )
