"""Runtime settings, read from the environment (12-factor) with embedded defaults."""

from __future__ import annotations

import os
import socket
import sys
from dataclasses import dataclass
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parent.parent


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
            jars_dir=Path(
                os.environ.get("SLUICE_SPARK_JARS_DIR")
                or REPO_ROOT / ".cache" / "jars" / "spark-kafka"
            ),
            worker_id=os.environ.get("SLUICE_WORKER_ID") or socket.gethostname(),
            heartbeat_interval=_env_float("SLUICE_WORKER_HEARTBEAT_INTERVAL", 1.0),
            driver_stop_grace=_env_float("SLUICE_DRIVER_STOP_GRACE", 20.0),
            driver_memory=os.environ.get("SLUICE_DRIVER_MEMORY", "1g"),
            python=os.environ.get("PYSPARK_PYTHON") or sys.executable,
        )

    def spark_jars(self) -> list[Path]:
        """The Kafka connector jars every driver is started with (never resolved at start)."""
        return sorted(self.jars_dir.glob("*.jar"))
