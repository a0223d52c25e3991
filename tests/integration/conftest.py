"""The whole embedded stack as real processes: web, Celery worker and beat, a runtime worker.

Each role is started exactly as the Procfile starts it, against the session's
real Redis and Kafka, with a database and var/ of its own.
"""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import pytest
import requests

from tests.support.processes import (
    REPO_ROOT,
    Service,
    free_port,
    start_service,
    wait_until,
)

pytestmark = pytest.mark.integration
VENV_BIN = Path(sys.executable).parent


@dataclass
class Stack:
    base_url: str
    token: str
    kafka: str
    redis_url: str
    env: dict[str, str]
    services: dict[str, Service] = field(default_factory=dict)

    @property
    def api(self) -> str:
        return f"{self.base_url}/api/v1"

    def session(self) -> requests.Session:
        http = requests.Session()
        http.headers["Authorization"] = f"Token {self.token}"
        return http

    def logs(self) -> str:
        return "\n".join(
            f"--- {name} ---\n{service.log_tail(40)}" for name, service in self.services.items()
        )


def manage(env: dict[str, str], *args: str) -> str:
    result = subprocess.run(
        [sys.executable, "manage.py", *args],
        cwd=REPO_ROOT,
        env={**os.environ, **env},
        capture_output=True,
        text=True,
        check=False,
    )
    assert result.returncode == 0, f"manage.py {' '.join(args)} failed:\n{result.stderr}"
    return result.stdout


@pytest.fixture(scope="session")
def stack(
    redis_url: str,
    kafka_bootstrap: str,
    tmp_path_factory: pytest.TempPathFactory,
    artifacts_dir: Path,
) -> Iterator[Stack]:
    var = tmp_path_factory.mktemp("var")
    port = free_port()
    env = {
        "SLUICE_VAR_DIR": str(var),
        "DATABASE_URL": f"sqlite:///{var}/sluice.sqlite3",
        "REDIS_URL": redis_url,
        "SLUICE_KAFKA_BOOTSTRAP": kafka_bootstrap,
        "SLUICE_RECONCILE_INTERVAL": "1",
        "SLUICE_WORKER_ID": "it-worker-1",
        "SLUICE_ADMIN_PASSWORD": "integration-secret",
        "SPARK_MASTER": "local[2]",
        "SLUICE_DRIVER_MEMORY": "768m",
        "SPARK_LOCAL_IP": "127.0.0.1",
    }
    manage(env, "migrate", "--noinput", "-v", "0")
    manage(env, "ensure_admin")
    token_output = manage(env, "drf_create_token", "admin")
    token = token_output.split()[2]
    logs = artifacts_dir / "stack"
    commands = {
        "web": [
            str(VENV_BIN / "gunicorn"),
            "console.wsgi:application",
            "--bind",
            f"127.0.0.1:{port}",
            "--workers",
            "2",
            "--threads",
            "4",
        ],
        "celery": [
            str(VENV_BIN / "celery"),
            "-A",
            "console",
            "worker",
            "--loglevel",
            "INFO",
            "--concurrency",
            "2",
            "--without-gossip",
            "--without-mingle",
        ],
        "beat": [
            str(VENV_BIN / "celery"),
            "-A",
            "console",
            "beat",
            "--loglevel",
            "INFO",
            "--schedule",
            str(var / "celerybeat-schedule"),
        ],
        "runtime": [sys.executable, "-m", "runtime_adapter.worker"],
    }
    stack = Stack(f"http://127.0.0.1:{port}", token, kafka_bootstrap, redis_url, env)
    try:
        for name, command in commands.items():
            stack.services[name] = start_service(name, command, logs, env)
        wait_until(
            lambda: requests.get(f"{stack.base_url}/healthz", timeout=2).status_code == 200,
            60,
            what="the web server",
        )
        yield stack
    finally:
        for service in reversed(list(stack.services.values())):
            service.stop()
