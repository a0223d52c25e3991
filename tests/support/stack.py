"""The Sluice stack as real processes: web, Celery worker and beat, runtime workers.

Each role is started exactly as the Procfile starts it, against a given Redis and Kafka,
with a database and var/ of its own. Used by the integration tests (the ``stack`` fixture),
the fault tests and ``make bench-control``.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

import redis
import requests

from tests.support.processes import REPO_ROOT, Service, free_port, start_service, wait_until

VENV_BIN = Path(sys.executable).parent


@dataclass
class Stack:
    base_url: str
    token: str
    kafka: str
    redis_url: str
    env: dict[str, str]
    log_dir: Path
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

    def start(self, name: str, extra_env: dict[str, str] | None = None) -> Service:
        """(Re)start the role ``name`` (``web``, ``celery``, ``beat``, ``runtime-N``)."""
        self.services[name] = start_service(
            name, role_command(name, self), self.log_dir, {**self.env, **(extra_env or {})}
        )
        return self.services[name]


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


def web_command(port: int | str, workers: int = 2, threads: int = 4) -> list[str]:
    """The console's gunicorn, as the Procfile starts it (from the repository root)."""
    return [
        str(VENV_BIN / "gunicorn"),
        "console.wsgi:application",
        "--config",
        "console/gunicorn.conf.py",
        "--bind",
        f"127.0.0.1:{port}",
        "--workers",
        str(workers),
        "--threads",
        str(threads),
    ]


def role_command(name: str, stack: Stack) -> list[str]:
    """The command line of a role, as in the Procfile."""
    if name == "web":
        return web_command(stack.base_url.rsplit(":", 1)[1])
    if name == "celery":
        return [
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
        ]
    if name == "beat":
        schedule = Path(stack.env["SLUICE_VAR_DIR"]) / "celerybeat-schedule"
        return [
            str(VENV_BIN / "celery"),
            "-A",
            "console",
            "beat",
            "--loglevel",
            "INFO",
            "--schedule",
            str(schedule),
        ]
    if name.startswith("runtime"):
        return [sys.executable, "-m", "runtime_adapter.host.worker"]
    raise ValueError(f"unknown role {name!r}")


def driver_pids(driver_id: str) -> list[int]:
    """The JVM of a Spark driver (``spark-submit … --driver-id ID``), by its id."""
    pattern = f"org.apache.spark.deploy.SparkSubmit.*--driver-id {driver_id} "
    found = subprocess.run(["pgrep", "-f", pattern], capture_output=True, text=True, check=False)
    return [int(pid) for pid in found.stdout.split()]


def kill_driver(stack: Stack, channel: str) -> str:
    """``kill -9`` the JVM of the Spark driver running a channel's query; returns its id."""
    status = stack.session().get(f"{stack.api}/channels/{channel}/status", timeout=5).json()
    driver_id = status.get("driver_id")
    if not driver_id:
        raise RuntimeError(f"{channel} reports no driver: {status}")
    pids = driver_pids(driver_id)
    if not pids:
        raise RuntimeError(f"no process of driver {driver_id} (running {channel}) found")
    for pid in pids:
        os.kill(pid, signal.SIGKILL)
    return driver_id


def restart_web(stack: Stack, extra_env: dict[str, str]) -> None:
    """Restart the stack's web server with ``extra_env`` added, and wait until it answers."""
    stack.services["web"].stop()
    stack.start("web", extra_env)
    wait_until(
        lambda: requests.get(f"{stack.base_url}/healthz", timeout=2).status_code == 200,
        60,
        what="the restarted web server",
    )


def runtime_env(index: int) -> dict[str, str]:
    """What distinguishes runtime worker ``index`` (1-based) from the others."""
    return {"SLUICE_WORKER_ID": f"it-worker-{index}"}


def runtime_group_env(name: str) -> dict[str, str]:
    """A runtime group (and its topics) of a stack's own on a shared Kafka."""
    return {
        "SLUICE_RUNTIME_GROUP_ID": f"sluice-runtime-{name}",
        "SLUICE_RUNTIME_CONFIG_TOPIC": f"sluice.runtime.{name}.config",
        "SLUICE_RUNTIME_STATUS_TOPIC": f"sluice.runtime.{name}.status",
    }


@contextmanager
def running_stack(
    *,
    redis_url: str,
    kafka: str,
    var: Path,
    log_dir: Path,
    runtime_workers: int = 1,
    extra_env: dict[str, str] | None = None,
    port: int | None = None,
) -> Iterator[Stack]:
    """Start web, Celery worker and beat and ``runtime_workers`` runtime workers; stop them
    all (in reverse order) when the block ends. The web server listens on ``port`` (a free
    one by default: one chosen ahead when something must know the console's address before
    it starts, such as an identity provider's redirect URIs)."""
    env = {
        "SLUICE_VAR_DIR": str(var),
        "DATABASE_URL": f"sqlite:///{var}/sluice.sqlite3",
        "REDIS_URL": redis_url,
        "SLUICE_KAFKA_BOOTSTRAP": kafka,
        "SLUICE_RECONCILE_INTERVAL": "1",
        "SLUICE_WORKER_ID": "it-worker-1",
        "SLUICE_ADMIN_PASSWORD": "integration-secret",
        "SPARK_MASTER": "local[2]",
        "SLUICE_DRIVER_MEMORY": "768m",
        "SLUICE_SHARED_DRIVER_MEMORY": "1g",
        "SPARK_LOCAL_IP": "127.0.0.1",
        # HTTP sinks of integration tests post to test servers on loopback, which the SSRF
        # guard refuses unless allowed (web validates specs, runtime workers connect).
        "SLUICE_HTTP_SINK_ALLOW": "127.0.0.1,localhost",
        # JDBC sinks of integration tests write to a throwaway PostgreSQL on loopback.
        "SLUICE_JDBC_SINK_ALLOW": "127.0.0.1,localhost",
        # Files stages of tests live in pytest's temp folders (tests/conftest.py makes the
        # base one the files root); outside pytest, the folder holding var/.
        "SLUICE_FILES_ROOTS": os.environ.get("SLUICE_FILES_ROOTS") or str(var.parent),
        # Stacks of one test session share its Kafka: each is a runtime of its own there
        # (its workers' ids repeat from stack to stack; membership is by group).
        **runtime_group_env(var.name),
        **(extra_env or {}),
    }
    # A stack starts from an empty Redis database: what an earlier stack on the same server
    # left there (a deployment, a queued task) would otherwise be taken up by this one.
    redis.Redis.from_url(env["REDIS_URL"]).flushdb()
    manage(env, "migrate", "--noinput", "-v", "0")
    manage(env, "ensure_admin")
    token = manage(env, "drf_create_token", "admin").split()[2]
    stack = Stack(f"http://127.0.0.1:{port or free_port()}", token, kafka, redis_url, env, log_dir)
    # Drivers read Sluice's own schema registry (Kafka stages in a wire format) on this web.
    env.setdefault("SLUICE_SCHEMA_REGISTRY_URL", f"{stack.base_url}/schema-registry")
    try:
        for name in ("web", "celery", "beat"):
            stack.start(name)
        if runtime_workers == 1:
            stack.start("runtime")
        else:
            for index in range(1, runtime_workers + 1):
                stack.start(f"runtime-{index}", runtime_env(index))
        try:
            wait_until(
                lambda: requests.get(f"{stack.base_url}/healthz", timeout=2).status_code == 200,
                60,
                what="the web server",
            )
        except TimeoutError as exc:
            raise TimeoutError(f"{exc}\n{stack.logs()}") from None
        yield stack
    finally:
        for service in reversed(list(stack.services.values())):
            service.stop()
