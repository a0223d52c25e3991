"""Least privilege on the real runtime: a runtime worker started as root with
``SLUICE_RUNTIME_USER`` runs, and runs its Spark drivers, as that unprivileged user, and a
driver's environment holds none of the console's own secrets.

A real ``python -m runtime_adapter.host.worker`` process (as the Procfile starts it) on the
session's Redis, and a real driver under spark-submit; the connector is deployed through the
runtime adapter, as the console would.
"""

from __future__ import annotations

import os
import pwd
import shutil
import subprocess
import sys
import tempfile
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from pipelines.spec.secrets import derive_key
from runtime_adapter.base import Deployment
from runtime_adapter.group import GroupConfig
from runtime_adapter.host.privileges import RuntimeUser, check_reachable
from runtime_adapter.spark import SparkRuntime
from runtime_adapter.states import State, TargetState
from tests.support.processes import REPO_ROOT, Service, start_service, wait_until
from tests.support.stack import runtime_group_env

pytestmark = pytest.mark.integration

RUNTIME_USER = "sluice"
CONSOLE_SECRET_KEY = "the-console-session-signing-key-" + uuid.uuid4().hex
SPEC = {
    "source": {"type": "generator", "config": {"rate": 5}},
    "transforms": [],
    "sink": {"type": "preview", "config": {"max_events": 10}},
}


@pytest.fixture(scope="module")
def runtime_user() -> RuntimeUser:
    if os.geteuid() != 0:
        pytest.skip("dropping privileges needs a worker started as root")
    try:
        user = RuntimeUser.named(RUNTIME_USER)
    except ValueError as exc:
        pytest.fail(f"{exc} (scripts/ensure-system.sh creates it)")
    try:
        check_reachable(user, [REPO_ROOT, Path(sys.executable), Path(sys.base_prefix)])
    except ValueError as exc:
        pytest.skip(f"this checkout is not readable by other users: {exc}")
    return user


@pytest.fixture(scope="module")
def var_dir() -> Iterator[Path]:
    # Not under pytest's basetemp (0700, root's): the runtime user must reach it.
    path = Path(tempfile.mkdtemp(prefix="sluice-privileges-", dir="/tmp"))
    path.chmod(0o755)
    yield path
    shutil.rmtree(path, ignore_errors=True)


@pytest.fixture(scope="module")
def worker(
    runtime_user: RuntimeUser,
    redis_url: str,
    kafka_bootstrap: str,
    var_dir: Path,
    artifacts_dir: Path,
) -> Iterator[tuple[Service, SparkRuntime]]:
    prefix = f"privileges-{uuid.uuid4().hex[:8]}"
    env = {
        **os.environ,
        **runtime_group_env(prefix),  # it runs channels only as a member of the runtime group
        "SLUICE_KAFKA_BOOTSTRAP": kafka_bootstrap,
        "REDIS_URL": redis_url,
        "SLUICE_REDIS_PREFIX": prefix,
        "SLUICE_VAR_DIR": str(var_dir),
        "SLUICE_WORKER_ID": "privileges-worker",
        "SLUICE_RUNTIME_USER": runtime_user.name,
        "SLUICE_SECRET_KEY": CONSOLE_SECRET_KEY,
        "SLUICE_ADMIN_PASSWORD": "admin-password-no-driver-needs",
        "DATABASE_URL": "postgres://console:db-password@127.0.0.1:1/console",
        "SPARK_MASTER": "local[1]",
        "SLUICE_DRIVER_MEMORY": "512m",
        "SPARK_LOCAL_IP": "127.0.0.1",
    }
    env.pop("SLUICE_SECRETS_KEY", None)
    service = start_service(
        "runtime-unprivileged",
        [sys.executable, "-m", "runtime_adapter.host.worker"],
        artifacts_dir / "least-privilege",
        env,
    )
    try:
        # The console's side of the same runtime group: the group places the channel.
        names = runtime_group_env(prefix)
        group = GroupConfig(
            bootstrap=kafka_bootstrap,
            group_id=names["SLUICE_RUNTIME_GROUP_ID"],
            config_topic=names["SLUICE_RUNTIME_CONFIG_TOPIC"],
            status_topic=names["SLUICE_RUNTIME_STATUS_TOPIC"],
            placement="group",
        )
        yield service, SparkRuntime(redis_url, prefix, group=group)
    finally:
        service.stop()


def _uid_of(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("Uid:"):
            real, effective, saved, _fs = (int(field) for field in line.split()[1:])
            assert real == effective == saved, f"pid {pid} keeps another uid: {line}"
            return real
    raise AssertionError(f"no Uid line for pid {pid}")


def _environ_of(pid: int) -> dict[str, str]:
    raw = Path(f"/proc/{pid}/environ").read_bytes().split(b"\0")
    pairs = (entry.decode(errors="replace").partition("=") for entry in raw if entry)
    return {name: value for name, _, value in pairs}


def _driver_pids(driver_id: str) -> list[int]:
    found = subprocess.run(
        ["pgrep", "-f", f"driver.py --driver-id {driver_id} "],
        capture_output=True,
        text=True,
        check=False,
    )
    return [int(pid) for pid in found.stdout.split()]


def test_worker_and_driver_run_unprivileged_without_the_console_secrets(
    worker: tuple[Service, SparkRuntime], runtime_user: RuntimeUser, var_dir: Path
) -> None:
    service, runtime = worker
    wait_until(
        lambda: any(info.worker_id == "privileges-worker" for info in runtime.workers()),
        60,
        what="the unprivileged worker's heartbeat (see its log in test-artifacts)",
    )
    assert _uid_of(service.process.pid) == runtime_user.uid, "the worker kept root"

    connector = f"least-privilege-{uuid.uuid4().hex[:6]}"
    runtime.deploy(
        Deployment(connector, connector, 1, SPEC, TargetState.RUNNING, "privileges-worker")
    )

    def running() -> bool:
        status = runtime.status([connector]).get(connector)
        assert status is None or status.state is not State.FAILED, status and status.trace
        return status is not None and status.state is State.RUNNING

    wait_until(running, 120, what=f"{connector} RUNNING (see the worker's log in test-artifacts)")
    driver_id = runtime.status([connector])[connector].driver_id
    pids = _driver_pids(driver_id)
    assert pids, f"no process of driver {driver_id} found"
    for pid in pids:  # spark-submit's JVM and the Python driver it runs
        assert _uid_of(pid) == runtime_user.uid, f"driver pid {pid} runs as {_uid_of(pid)}"
        env = _environ_of(pid)
        for withheld in ("SLUICE_SECRET_KEY", "SLUICE_ADMIN_PASSWORD", "DATABASE_URL"):
            assert withheld not in env, f"{withheld} reached driver pid {pid}"
        assert CONSOLE_SECRET_KEY not in "\0".join(env.values())
        # It can still decrypt its stages' secrets: the derived key, never the secret key.
        assert env["SLUICE_SECRETS_KEY"] == derive_key(CONSOLE_SECRET_KEY).decode()
        assert env["HOME"] == runtime_user.home

    checkpoints = var_dir / "checkpoints"
    written = wait_until(
        lambda: [path for path in checkpoints.rglob("*") if path.is_file()],
        60,
        what="the driver's first checkpoint files",
    )
    owners = {pwd.getpwuid(path.stat().st_uid).pw_name for path in written}
    assert owners == {runtime_user.name}, f"checkpoint files owned by {owners}"
    runtime.set_target_state(connector, TargetState.STOPPED)

    def stopped() -> bool:
        status = runtime.status([connector]).get(connector)
        hosts = [d for d in runtime.drivers() if connector in d.connectors]
        return status is not None and status.state is State.STOPPED and not hosts

    wait_until(stopped, 60, what="the query stopped")
