"""Start and stop real service processes for tests, on free loopback ports."""

from __future__ import annotations

import contextlib
import os
import signal
import socket
import subprocess
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[2]

NO_SERVICES_ENV = "SLUICE_TEST_NO_SERVICES"
"""Set (by pytest's ``--no-services``, ``make check``) when the run may start no service."""


def refuse_without_services(what: str) -> None:
    """Fail the calling test at once when the run starts no service (``make check``): a test
    that needs ``what`` but carries no marker saying so fails with this message instead of
    waiting for a port that never opens."""
    if os.environ.get(NO_SERVICES_ENV):
        import pytest

        pytest.fail(
            f"this test needs {what}, and this run starts no service (make check, "
            "pytest --no-services): use the fixture that starts it (tests/conftest.py) or mark "
            "the test with what it needs ([tool.pytest.ini_options] markers in pyproject.toml)",
            pytrace=False,
        )


def free_port() -> int:
    """A TCP port on 127.0.0.1 that nothing listens on right now."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def port_open(port: int, host: str = "127.0.0.1") -> bool:
    with socket.socket() as sock:
        sock.settimeout(0.5)
        return sock.connect_ex((host, port)) == 0


def wait_until(
    condition: Callable[[], object], timeout: float, interval: float = 0.25, what: str = ""
) -> object:
    """Poll ``condition`` until it returns something truthy; fail after ``timeout`` seconds."""
    deadline = time.monotonic() + timeout
    last_error: Exception | None = None
    while time.monotonic() < deadline:
        try:
            value = condition()
            if value:
                return value
        except Exception as exc:  # conditions may fail while a service starts
            last_error = exc
        time.sleep(interval)
    raise TimeoutError(f"timed out after {timeout}s waiting for {what or condition}: {last_error}")


@dataclass
class Service:
    """A process started in its own session, with its output in a log file."""

    name: str
    process: subprocess.Popen
    log_path: Path

    def log_tail(self, lines: int = 60) -> str:
        text = self.log_path.read_text(errors="replace") if self.log_path.exists() else ""
        return "\n".join(text.splitlines()[-lines:])

    def alive(self) -> bool:
        return self.process.poll() is None

    def stop(self, timeout: float = 20.0) -> None:
        """SIGTERM the process group, SIGKILL what is left after ``timeout``."""
        if self.process.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(self.process.pid, signal.SIGTERM)
            with contextlib.suppress(subprocess.TimeoutExpired):
                self.process.wait(timeout=timeout)
        with contextlib.suppress(ProcessLookupError):
            os.killpg(self.process.pid, signal.SIGKILL)
        with contextlib.suppress(subprocess.TimeoutExpired):
            self.process.wait(timeout=5)


def start_service(
    name: str, command: Sequence[str], log_dir: Path, env: dict[str, str] | None = None
) -> Service:
    refuse_without_services(name)
    log_dir.mkdir(parents=True, exist_ok=True)
    log_path = log_dir / f"{name}.log"
    with log_path.open("ab") as log_file:
        process = subprocess.Popen(
            list(command),
            cwd=REPO_ROOT,
            env={**os.environ, **(env or {})},
            stdout=log_file,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            start_new_session=True,
        )
    return Service(name, process, log_path)


def start_redis(
    data_dir: Path, log_dir: Path, port: int | None = None, extra_bind: str | None = None
) -> tuple[Service, str]:
    """scripts/redis.sh on ``port`` (a free one by default); restarting on the same port and
    data directory brings back what its append-only file holds. ``extra_bind``: one more
    address it listens on besides loopback (the fault suite's bridge)."""
    port = port or free_port()
    data_dir.mkdir(parents=True, exist_ok=True)
    service = start_service(
        "redis",
        ["bash", "scripts/redis.sh"],
        log_dir,
        {
            "REDIS_PORT": str(port),
            "REDIS_DATA_DIR": str(data_dir),
            "REDIS_EXTRA_BIND": extra_bind or "",
        },
    )
    wait_until(lambda: port_open(port), 30, what=f"redis on port {port}")
    return service, f"redis://127.0.0.1:{port}/0"


def start_victoriametrics(
    data_dir: Path, log_dir: Path, port: int | None = None, env: dict[str, str] | None = None
) -> tuple[Service, str]:
    """scripts/victoriametrics.sh (the history store) on ``port`` (a free one by default);
    restarting on the same data directory brings back every sample. Without
    ``SLUICE_METRICS_TOKEN`` in ``env`` it scrapes nothing: tests import their samples."""
    import urllib.request

    port = port or free_port()
    data_dir.mkdir(parents=True, exist_ok=True)
    service = start_service(
        "victoriametrics",
        ["bash", "scripts/victoriametrics.sh"],
        log_dir,
        {
            "SLUICE_METRICS_TOKEN": "",
            **(env or {}),
            "SLUICE_HISTORY_PORT": str(port),
            "SLUICE_HISTORY_DATA_DIR": str(data_dir),
        },
    )
    url = f"http://127.0.0.1:{port}"

    def ready() -> bool:
        with urllib.request.urlopen(f"{url}/health", timeout=2) as answer:
            return bool(answer.status == 200)

    wait_until(ready, 30, what=f"VictoriaMetrics on port {port}")
    return service, url


def start_kafka(data_dir: Path, log_dir: Path) -> tuple[Service, str]:
    """A single-node KRaft Kafka (scripts/kafka.sh) on free loopback ports, ready for clients."""
    port = free_port()
    service = start_kafka_node(
        "kafka",
        data_dir,
        log_dir,
        {"KAFKA_PORT": str(port), "KAFKA_CONTROLLER_PORT": str(free_port())},
    )
    bootstrap = f"127.0.0.1:{port}"
    wait_kafka_ready(service, port)
    return service, bootstrap


def start_kafka_node(name: str, data_dir: Path, log_dir: Path, env: dict[str, str]) -> Service:
    """scripts/kafka.sh with ``env`` (its ``KAFKA_*`` variables) on ``data_dir``; returns at
    once: :func:`wait_kafka_ready` waits for it to answer."""
    return start_service(
        name, ["bash", "scripts/kafka.sh"], log_dir, {**env, "KAFKA_DATA_DIR": str(data_dir)}
    )


def wait_kafka_ready(service: Service, port: int, timeout: float = 120) -> None:
    """Wait until the broker of ``service`` answers a metadata request on loopback ``port``;
    fails with its log's tail if it exits first."""
    bootstrap = f"127.0.0.1:{port}"

    def ready() -> bool:
        if not service.alive():
            raise RuntimeError(f"{service.name} exited:\n{service.log_tail()}")
        if not port_open(port):  # a client made earlier would log every refused connection
            return False
        from confluent_kafka.admin import AdminClient

        AdminClient({"bootstrap.servers": bootstrap}).list_topics(timeout=2)
        return True

    wait_until(ready, timeout, interval=1.0, what=f"{service.name} on {bootstrap}")


def start_postgres(data_dir: Path, log_dir: Path) -> tuple[Service, str]:
    """scripts/postgres.sh on a free port; ``data_dir`` must be reachable by the server's user
    (not under a private temp folder: as root the server runs as ``postgres``)."""
    port = free_port()
    service = start_service(
        "postgres",
        ["bash", "scripts/postgres.sh"],
        log_dir,
        {"PG_PORT": str(port), "PG_DATA_DIR": str(data_dir)},
    )

    url = f"postgresql://sluice@127.0.0.1:{port}/postgres"

    def ready() -> bool:
        # An open port is not a ready server: while it starts up (or recovers) it refuses every
        # session with "the database system is starting up". Ready is a query answered.
        if not service.alive():
            raise RuntimeError(f"postgres exited:\n{service.log_tail()}")
        if not port_open(port):
            return False
        import psycopg

        try:
            with psycopg.connect(url, connect_timeout=2) as connection:
                connection.execute("SELECT 1")
        except psycopg.OperationalError:
            return False
        return True

    wait_until(ready, 60, what=f"postgres on port {port}")
    return service, url
