"""Runtime settings, read from the environment (12-factor) with embedded defaults."""

from __future__ import annotations

import os
import socket
import sys
from dataclasses import dataclass
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parent.parent
SPARK_KAFKA_JARS_DIR = REPO_ROOT / ".cache" / "jars" / "spark-kafka"
"""Spark's Kafka connector jars (``scripts/fetch-jars.sh spark-kafka``)."""
FUNCTIONS_JARS_DIR = REPO_ROOT / ".cache" / "jars" / "sluice-spark"
"""Sluice's own Spark functions (``scripts/fetch-jars.sh sluice-spark``)."""


def _env_int(name: str, default: int) -> int:
    raw = os.environ.get(name)
    if raw in (None, ""):
        return default
    try:
        value = int(raw)
    except ValueError as exc:
        raise ValueError(f"{name} must be a whole number, got {raw!r}") from exc
    if value < 1:
        raise ValueError(f"{name} must be at least 1, got {raw!r}")
    return value


def _env_count(name: str, default: int) -> int:
    """A whole number that may be 0."""
    raw = os.environ.get(name)
    if raw in (None, ""):
        return default
    if not raw.strip().isdigit():
        raise ValueError(f"{name} must be a whole number (0 or more), got {raw!r}")
    return int(raw)


def _env_float(name: str, default: float) -> float:
    raw = os.environ.get(name)
    if raw in (None, ""):
        return default
    try:
        return float(raw)
    except ValueError as exc:
        raise ValueError(f"{name} must be a number of seconds, got {raw!r}") from exc


@dataclass(frozen=True)
class RuntimeConfig:
    """Everything a runtime worker and its drivers need to know about their host."""

    redis_url: str
    key_prefix: str
    spark_master: str
    var_dir: Path
    checkpoint_root: Path
    jars_dir: Path
    worker_id: str
    heartbeat_interval: float
    driver_stop_grace: float
    driver_memory: str
    python: str
    executor_cores: int = 1
    executor_memory: str = "1g"
    max_cores: int = 1
    driver_host: str | None = None
    driver_bind_address: str | None = None
    spark_master_ui_url: str | None = None
    functions_dir: Path = FUNCTIONS_JARS_DIR
    runtime_user: str | None = None
    """Started as root, the worker drops to this user (``SLUICE_RUNTIME_USER``)."""
    shared_driver_memory: str = "2g"
    """Memory of a shared driver (``SLUICE_SHARED_DRIVER_MEMORY``); ``driver_memory`` is a
    dedicated driver's."""
    channels_per_driver: int = 50
    """The most connectors one shared driver hosts (``SLUICE_CHANNELS_PER_DRIVER``)."""
    warm_drivers: int = 1
    """Shared drivers kept running even with no connector, ready for the next one
    (``SLUICE_WARM_DRIVERS``; 0 keeps none)."""
    driver_idle_seconds: float = 60.0
    """How long a shared driver beyond the warm ones lives without a connector
    (``SLUICE_DRIVER_IDLE_SECONDS``)."""
    driver_session_timeout: float = 30.0
    """A driver silent this long (no heartbeat) is killed and its connectors FAILED
    (``SLUICE_DRIVER_SESSION_TIMEOUT``)."""
    driver_start_timeout: float = 180.0
    """How long a new driver may take to send its first heartbeat."""
    worker_cores: int = os.cpu_count() or 1
    """Cores this runtime worker's real-time queries may hold, one per source partition each
    (``SLUICE_WORKER_CORES``; default: the host's)."""

    @classmethod
    def from_env(cls) -> RuntimeConfig:
        var_dir = Path(os.environ.get("SLUICE_VAR_DIR") or REPO_ROOT / "var")
        return cls(
            redis_url=os.environ.get("REDIS_URL", "redis://127.0.0.1:6379/0"),
            key_prefix=os.environ.get("SLUICE_REDIS_PREFIX", "sluice"),
            spark_master=os.environ.get("SPARK_MASTER", "local[*]"),
            var_dir=var_dir,
            checkpoint_root=Path(
                os.environ.get("SLUICE_CHECKPOINT_ROOT") or var_dir / "checkpoints"
            ),
            jars_dir=Path(os.environ.get("SLUICE_SPARK_JARS_DIR") or SPARK_KAFKA_JARS_DIR),
            worker_id=os.environ.get("SLUICE_WORKER_ID") or socket.gethostname(),
            heartbeat_interval=_env_float("SLUICE_WORKER_HEARTBEAT_INTERVAL", 1.0),
            driver_stop_grace=_env_float("SLUICE_DRIVER_STOP_GRACE", 20.0),
            driver_memory=os.environ.get("SLUICE_DRIVER_MEMORY", "1g"),
            python=os.environ.get("PYSPARK_PYTHON") or sys.executable,
            executor_cores=_env_int("SLUICE_EXECUTOR_CORES", 1),
            executor_memory=os.environ.get("SLUICE_EXECUTOR_MEMORY") or "1g",
            max_cores=_env_int("SLUICE_MAX_CORES", _env_int("SLUICE_EXECUTOR_CORES", 1)),
            driver_host=os.environ.get("SLUICE_DRIVER_HOST") or None,
            driver_bind_address=os.environ.get("SLUICE_DRIVER_BIND_ADDRESS") or None,
            spark_master_ui_url=os.environ.get("SLUICE_SPARK_MASTER_UI_URL") or None,
            functions_dir=Path(os.environ.get("SLUICE_SPARK_FUNCTIONS_DIR") or FUNCTIONS_JARS_DIR),
            runtime_user=os.environ.get("SLUICE_RUNTIME_USER") or None,
            shared_driver_memory=os.environ.get("SLUICE_SHARED_DRIVER_MEMORY") or "2g",
            channels_per_driver=_env_int("SLUICE_CHANNELS_PER_DRIVER", 50),
            warm_drivers=_env_count("SLUICE_WARM_DRIVERS", 1),
            driver_idle_seconds=_env_float("SLUICE_DRIVER_IDLE_SECONDS", 60.0),
            driver_session_timeout=_env_float("SLUICE_DRIVER_SESSION_TIMEOUT", 30.0),
            driver_start_timeout=_env_float("SLUICE_DRIVER_START_TIMEOUT", 180.0),
            worker_cores=_env_int("SLUICE_WORKER_CORES", os.cpu_count() or 1),
        )

    @property
    def standalone(self) -> bool:
        """True when drivers run their executors on a Spark standalone master."""
        return self.spark_master.startswith("spark://")

    def master_addresses(self) -> list[tuple[str, int]]:
        """The ``(host, port)`` of each master in ``spark://h1:p1,h2:p2`` (standby masters
        included); empty unless :attr:`standalone`."""
        if not self.standalone:
            return []
        addresses = []
        for part in self.spark_master.removeprefix("spark://").split(","):
            host, _, port = part.strip().rpartition(":")
            if host and port.isdigit():
                addresses.append((host.strip("[]"), int(port)))
        return addresses

    def master_ui_urls(self) -> list[str]:
        """Where the master's status page (``/json/``) is asked: ``SLUICE_SPARK_MASTER_UI_URL``
        (comma-separated for standby masters), else port 8080 of each master host."""
        if self.spark_master_ui_url:
            return [url.strip().rstrip("/") for url in self.spark_master_ui_url.split(",")]
        return [f"http://{host}:8080" for host, _ in self.master_addresses()]

    def resolved_driver_host(self) -> str:
        """The address executors use to reach a driver on this host.

        ``SLUICE_DRIVER_HOST`` when set; under ``local[*]`` 127.0.0.1; on a standalone master
        the local address of the route to the master (what the master's side of the network
        sees), found without sending anything.
        """
        if self.driver_host:
            return self.driver_host
        for host, port in self.master_addresses():
            try:
                with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as probe:
                    probe.connect((host, port))  # UDP connect: picks a route, sends nothing
                    return probe.getsockname()[0]
            except OSError:
                continue
        return "127.0.0.1"

    def spark_jars(self) -> list[Path]:
        """The jars every driver is started with (never resolved at start): Spark's Kafka
        connector and Sluice's own Spark functions (:mod:`pipelines.native`)."""
        return sorted(self.jars_dir.glob("*.jar")) + sorted(self.functions_dir.glob("*.jar"))
