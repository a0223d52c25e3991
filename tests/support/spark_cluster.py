"""A real Spark standalone cluster for tests: one master and N workers from the pyspark
package, on 127.0.0.1 and free ports, with every file they write under one directory.

    with standalone_cluster(tmp_path, log_dir, workers=2) as spark:
        spark.master_url   # spark://127.0.0.1:P  (SPARK_MASTER)
        spark.ui_url       # http://127.0.0.1:U   (SLUICE_SPARK_MASTER_UI_URL)
        spark.status()     # the master's /json/ document
"""

from __future__ import annotations

import json
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tests.support.processes import Service, free_port, start_service, wait_until


def spark_home() -> Path:
    """The pyspark package folder: a complete Spark distribution (bin/, jars/)."""
    import pyspark

    return Path(pyspark.__file__).parent


@dataclass
class StandaloneCluster:
    master_url: str
    ui_url: str
    services: list[Service] = field(default_factory=list)

    def status(self) -> dict[str, Any]:
        with urllib.request.urlopen(f"{self.ui_url}/json/", timeout=5) as response:
            return json.loads(response.read())

    def alive_workers(self) -> list[dict[str, Any]]:
        return [w for w in self.status()["workers"] if w["state"] == "ALIVE"]

    def logs(self) -> str:
        return "\n".join(f"--- {s.name} ---\n{s.log_tail(30)}" for s in self.services)

    def stop(self) -> None:
        for service in reversed(self.services):  # workers (and their executors) first
            service.stop()


@contextmanager
def standalone_cluster(
    base_dir: Path,
    log_dir: Path,
    *,
    workers: int = 2,
    cores: int = 1,
    memory: str = "1g",
    daemon_memory: str = "256m",
    timeout: float = 90,
) -> Iterator[StandaloneCluster]:
    """Start a master and ``workers`` workers (``cores`` and ``memory`` each), wait until the
    master lists them ALIVE, and stop them all (executors included) when the block ends."""
    home = spark_home()
    env = {
        "SPARK_HOME": str(home),
        "SPARK_LOCAL_IP": "127.0.0.1",
        "SPARK_LOG_DIR": str(base_dir / "logs"),
        "SPARK_PID_DIR": str(base_dir / "pids"),
        "SPARK_WORKER_DIR": str(base_dir / "work"),
        "SPARK_DAEMON_MEMORY": daemon_memory,  # the master and worker JVMs themselves
    }
    for name in ("SPARK_LOG_DIR", "SPARK_PID_DIR", "SPARK_WORKER_DIR"):
        Path(env[name]).mkdir(parents=True, exist_ok=True)
    spark_class = str(home / "bin" / "spark-class")
    port, ui_port = free_port(), free_port()
    cluster = StandaloneCluster(f"spark://127.0.0.1:{port}", f"http://127.0.0.1:{ui_port}")
    try:
        master = start_service(
            "spark-master",
            [
                spark_class,
                "org.apache.spark.deploy.master.Master",
                "--host",
                "127.0.0.1",
                "--port",
                str(port),
                "--webui-port",
                str(ui_port),
            ],
            log_dir,
            env,
        )
        cluster.services.append(master)

        def master_up() -> bool:
            if not master.alive():
                raise RuntimeError(f"the Spark master exited:\n{master.log_tail()}")
            return cluster.status()["status"] == "ALIVE"

        wait_until(master_up, timeout, interval=0.5, what="the Spark master")
        for index in range(1, workers + 1):
            work_dir = base_dir / "work" / f"worker-{index}"
            work_dir.mkdir(parents=True, exist_ok=True)
            cluster.services.append(
                start_service(
                    f"spark-worker-{index}",
                    [
                        spark_class,
                        "org.apache.spark.deploy.worker.Worker",
                        cluster.master_url,
                        "--host",
                        "127.0.0.1",
                        "--cores",
                        str(cores),
                        "--memory",
                        memory,
                        "--webui-port",
                        "0",
                        "--work-dir",
                        str(work_dir),
                    ],
                    log_dir,
                    env,
                )
            )

        def workers_up() -> bool:
            for service in cluster.services[1:]:
                if not service.alive():
                    raise RuntimeError(f"{service.name} exited:\n{service.log_tail()}")
            return len(cluster.alive_workers()) == workers

        wait_until(workers_up, timeout, interval=0.5, what=f"{workers} Spark workers")
        yield cluster
    finally:
        cluster.stop()
