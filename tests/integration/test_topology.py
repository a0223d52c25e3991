"""The cluster topology of docker/compose.yaml, natively: every role a separate process.

No Docker engine runs on the development machine, so this test starts what
``docker compose up`` would, as local processes on 127.0.0.1:

* PostgreSQL (scripts/postgres.sh, a throwaway data dir), Redis (scripts/redis.sh),
  Kafka (scripts/kafka.sh);
* a Spark standalone master with two one-core workers (from the pyspark package);
* web (gunicorn), Celery worker, Celery beat and two runtime workers, all with
  ``DATABASE_URL`` on PostgreSQL, ``SPARK_MASTER=spark://…`` and one shared
  ``SLUICE_CHECKPOINT_ROOT`` (each runtime worker has a var/ of its own, as a host would).

One channel Kafka → filter → Kafka is created and started through the REST API. Its two
executors must run one on each Spark worker. Then the runtime worker hosting it is killed
with ``kill -9`` together with its driver: the connector must move to the other runtime
worker and resume from its checkpoint on the shared root, so that every selected event of
both batches reaches the sink (at least once: duplicates are counted; a restart from
the earliest offsets instead of the checkpoint would duplicate the whole first batch).

``test_the_topology_is_the_compose_topology`` keeps this test and docker/compose.yaml (and
docker/entrypoint.sh) from drifting apart: every service and role started here must be in
the compose file under the same name, with the same command and environment names.
"""

from __future__ import annotations

import base64
import contextlib
import json
import os
import re
import shutil
import signal
import subprocess
import time
import uuid
from collections import Counter
from collections.abc import Callable, Iterator
from contextlib import ExitStack
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import psycopg
import pytest
import requests
import yaml

from runtime_adapter.checkpoint import latest_committed
from tests.integration.test_walking_skeleton import consume_all, make_topic
from tests.support.orders import PATTERN, produce_range, selected
from tests.support.processes import REPO_ROOT, Service, start_redis, wait_until
from tests.support.spark_cluster import StandaloneCluster, standalone_cluster
from tests.support.stack import Stack, role_command, running_stack

pytestmark = pytest.mark.integration

COMPOSE = REPO_ROOT / "docker" / "compose.yaml"
ENTRYPOINT = REPO_ROOT / "docker" / "entrypoint.sh"

#: compose service → (the name this test's stack gives the process, the entrypoint role).
SLUICE_ROLES = {
    "web": ("web", "web"),
    "celery-worker": ("celery", "celery-worker"),
    "celery-beat": ("beat", "celery-beat"),
    "runtime-worker-1": ("runtime-worker-1", "runtime-worker"),
    "runtime-worker-2": ("runtime-worker-2", "runtime-worker"),
}
#: compose service → what this test starts for it.
INFRASTRUCTURE = {
    "postgres": "scripts/postgres.sh",
    "redis": "scripts/redis.sh",
    "kafka": "scripts/kafka.sh",
    "spark-master": "org.apache.spark.deploy.master.Master",
    "spark-worker-1": "org.apache.spark.deploy.worker.Worker",
    "spark-worker-2": "org.apache.spark.deploy.worker.Worker",
}
#: The program (and its first arguments) each entrypoint role execs, as role_command runs it.
ROLE_PROGRAMS = {
    "web": "gunicorn console.wsgi:application",
    "celery-worker": "celery -A console worker",
    "celery-beat": "celery -A console beat",
    "runtime-worker": "python -m runtime_adapter.host.worker",
}
#: Environment only the runtime workers get (compose: runtime-worker-N's environment).
RUNTIME_WORKER_ENV = ("SLUICE_WORKER_ID", "SLUICE_DRIVER_HOST", "SLUICE_DRIVER_BIND_ADDRESS")

BATCH = 20_000  # events per batch; one in three is selected
MAX_PER_TRIGGER = 10_000


def produce_batch(bootstrap: str, topic: str, batch: int) -> None:
    produce_range(bootstrap, topic, batch * BATCH, (batch + 1) * BATCH, timeout=60)


# One Fernet key for every role, as compose passes it: the console encrypts stage secrets
# with it and the drivers (under the runtime workers) decrypt with it.
TOPOLOGY_SECRETS_KEY = base64.urlsafe_b64encode(os.urandom(32)).decode()


def common_env(
    *,
    database_url: str,
    redis_url: str,
    kafka: str,
    spark: StandaloneCluster,
    checkpoint_root: Path,
) -> dict[str, str]:
    """What every Sluice role is told: compose's ``x-sluice-env``, with local addresses."""
    return {
        "DATABASE_URL": database_url,
        "REDIS_URL": redis_url,
        "SLUICE_KAFKA_BOOTSTRAP": kafka,
        "SPARK_MASTER": spark.master_url,
        "SLUICE_SPARK_MASTER_UI_URL": spark.ui_url,
        "SLUICE_SECRET_KEY": f"topology-test-{uuid.uuid4().hex}",
        "SLUICE_SECRETS_KEY": TOPOLOGY_SECRETS_KEY,
        "SLUICE_ALLOWED_HOSTS": "127.0.0.1,localhost",
        "SLUICE_CSRF_TRUSTED_ORIGINS": "",
        "SLUICE_CHECKPOINT_ROOT": str(checkpoint_root),
        # compose's data volume, beside the checkpoints one (/var/lib/sluice/{checkpoints,data})
        "SLUICE_FILES_ROOTS": str(checkpoint_root.parent / "data"),
        "SLUICE_LOG_LEVEL": "INFO",
        "SLUICE_DRIVER_MEMORY": "768m",
        "SLUICE_EXECUTOR_MEMORY": "512m",
        "SLUICE_EXECUTOR_CORES": "1",
        "SLUICE_MAX_CORES": "2",  # one executor on each of the two one-core Spark workers
        # No warm driver holding the cluster's two cores while it waits: the channel's driver
        # gets them both, and a driver with no channel left retires at once.
        "SLUICE_WARM_DRIVERS": "0",
        "SLUICE_DRIVER_IDLE_SECONDS": "0",
    }


def runtime_worker_env(index: int, var_dir: Path) -> dict[str, str]:
    """compose's runtime-worker-N environment, natively: a var/ of its own per "host"."""
    var_dir.mkdir(parents=True, exist_ok=True)
    return {
        "SLUICE_WORKER_ID": f"runtime-worker-{index}",
        "SLUICE_DRIVER_HOST": "127.0.0.1",
        "SLUICE_DRIVER_BIND_ADDRESS": "127.0.0.1",
        "SLUICE_VAR_DIR": str(var_dir),
    }


def postgres_database(server_url: str, name: str) -> str:
    """Create database ``name`` (as compose's POSTGRES_DB) and return its URL."""

    def connect() -> psycopg.Connection:
        return psycopg.connect(server_url, autocommit=True, connect_timeout=3)

    with wait_until(connect, 30, interval=0.5, what="PostgreSQL accepting connections") as db:
        db.execute(f'DROP DATABASE IF EXISTS "{name}"')
        db.execute(f'CREATE DATABASE "{name}"')
    return server_url.rsplit("/", 1)[0] + f"/{name}"


@dataclass
class Topology:
    stack: Stack
    spark: StandaloneCluster
    redis: Service
    checkpoint_root: Path
    runtime_vars: dict[str, Path]
    started_at: float
    timings: dict[str, float] = field(default_factory=dict)

    def logs(self) -> str:
        return f"{self.stack.logs()}\n{self.spark.logs()}\n--- redis ---\n{self.redis.log_tail(20)}"

    def driver_log(self, worker_id: str) -> str:
        """The logs of every driver the runtime worker started."""
        folder = self.runtime_vars[worker_id] / "logs" / "drivers"
        return "".join(path.read_text(errors="replace") for path in sorted(folder.glob("*.log")))


def keep_driver_logs(base: Path, logs: Path) -> None:
    """Copy each runtime worker's driver logs next to the other service logs."""
    for path in base.glob("var-runtime-worker-*/logs/drivers/*.log"):
        with contextlib.suppress(OSError):
            shutil.copyfile(path, logs / f"driver-{path.stem}.log")


@pytest.fixture(scope="module")
def topology(
    postgres_url: str,
    kafka_bootstrap: str,
    tmp_path_factory: pytest.TempPathFactory,
    artifacts_dir: Path,
) -> Iterator[Topology]:
    started_at = time.monotonic()
    logs = artifacts_dir / "topology"
    base = tmp_path_factory.mktemp("topology")
    with ExitStack() as cleanup:
        cleanup.callback(keep_driver_logs, base, logs)  # runs last, after every process stopped
        # Redis of its own (compose: redis, append-only), PostgreSQL database "sluice".
        redis, redis_url = start_redis(base / "redis", logs)
        cleanup.callback(redis.stop)
        database_url = postgres_database(postgres_url, "sluice")
        spark = cleanup.enter_context(
            standalone_cluster(base / "spark", logs, workers=2, cores=1, memory="1g")
        )
        checkpoint_root = base / "shared" / "checkpoints"  # the compose "checkpoints" volume
        env = common_env(
            database_url=database_url,
            redis_url=redis_url,
            kafka=kafka_bootstrap,
            spark=spark,
            checkpoint_root=checkpoint_root,
        )
        env.update(SLUICE_RECONCILE_INTERVAL="1", SLUICE_ADMIN_PASSWORD="topology-secret")
        stack = cleanup.enter_context(
            running_stack(
                redis_url=redis_url,
                kafka=kafka_bootstrap,
                var=base / "var-console",
                log_dir=logs,
                runtime_workers=0,
                extra_env=env,
            )
        )
        runtime_vars = {}
        for index in (1, 2):
            worker_id = f"runtime-worker-{index}"
            runtime_vars[worker_id] = base / f"var-{worker_id}"
            stack.start(worker_id, runtime_worker_env(index, runtime_vars[worker_id]))
        topology = Topology(stack, spark, redis, checkpoint_root, runtime_vars, started_at)
        topology.timings["stack up"] = time.monotonic() - started_at
        yield topology


def test_the_topology_is_the_compose_topology() -> None:
    """Every service and role the topology test starts is in docker/compose.yaml under the
    same name, with the entrypoint role whose program the test runs, and the same env names."""
    compose = yaml.safe_load(COMPOSE.read_text())
    services = compose["services"]
    missing = sorted((set(SLUICE_ROLES) | set(INFRASTRUCTURE)) - set(services))
    assert not missing, f"docker/compose.yaml lacks {missing}"

    entrypoint = ENTRYPOINT.read_text()
    for service, (stack_name, role) in SLUICE_ROLES.items():
        assert services[service]["command"] == [role], (service, services[service]["command"])
        # The entrypoint's role execs the program role_command starts for the test.
        case = entrypoint.split(f"\n  {role})\n", 1)
        assert len(case) == 2, f"docker/entrypoint.sh has no role {role!r}"
        body = case[1].split(";;", 1)[0]
        program = ROLE_PROGRAMS[role]
        assert f"exec {program}" in " ".join(body.split()), (role, body)
        fake = Stack("http://127.0.0.1:8000", "", "", "", {"SLUICE_VAR_DIR": "/v"}, Path())
        command = role_command(stack_name, fake)
        name = Path(command[0]).name
        words = ["python" if name.startswith("python") else name, *command[1:]]
        assert " ".join(words).startswith(program), (role, command)

    for service, program in INFRASTRUCTURE.items():
        command = services[service].get("command") or []
        if program.startswith("org.apache.spark"):
            # The Spark services run the Sluice image's spark-master / spark-worker role.
            assert command == [service.rstrip("-12")], (service, command)
            body = entrypoint.split(f"\n  {command[0]})\n", 1)[1].split(";;", 1)[0]
            assert program in body, (service, body)
        else:
            assert service in program, (service, program)  # scripts/<service>.sh

    # Environment: the test tells each role what compose tells it, by the same names.
    common = set(compose["x-sluice-env"])
    spark = StandaloneCluster("spark://127.0.0.1:7077", "http://127.0.0.1:8080")
    tested = set(
        common_env(database_url="", redis_url="", kafka="", spark=spark, checkpoint_root=Path("/c"))
    )
    # running_stack tells every role its web's own registry URL (tests/support/stack.py).
    tested.add("SLUICE_SCHEMA_REGISTRY_URL")
    assert tested <= common, f"not in compose's x-sluice-env: {sorted(tested - common)}"
    # What compose sets and the test does not must be an optional setting left at its default.
    for name in sorted(common - tested):
        value = str(compose["x-sluice-env"][name])
        assert re.fullmatch(r"\$\{\w+:-[^}]*\}", value), f"compose sets {name}={value}, not here"
    for index in (1, 2):
        env = services[f"runtime-worker-{index}"]["environment"]
        assert env["SLUICE_WORKER_ID"] == f"runtime-worker-{index}"
        assert set(RUNTIME_WORKER_ENV) <= set(env), env
        assert set(runtime_worker_env(index, Path("/tmp"))) - {"SLUICE_VAR_DIR"} == set(
            RUNTIME_WORKER_ENV
        )
    # One checkpoint volume shared by both runtime workers and web, at SLUICE_CHECKPOINT_ROOT.
    root = compose["x-sluice-env"]["SLUICE_CHECKPOINT_ROOT"]
    for service in ("runtime-worker-1", "runtime-worker-2", "web"):
        assert f"checkpoints:{root}" in services[service]["volumes"], service


def committed_total(http: requests.Session, stack: Stack, channel: str) -> int:
    """The sum of a channel's committed source offsets, as ``GET …/offsets`` reads them from
    its checkpoint."""
    response = http.get(f"{stack.api}/channels/{channel}/offsets", timeout=10)
    assert response.status_code == 200, response.text
    return sum(entry["offset"]["offset"] for entry in response.json()["offsets"])


def driver_pids(worker_id: str) -> list[int]:
    """The JVMs of the Spark drivers a runtime worker started (``--driver-id <worker>.dN``)."""
    pattern = f"org.apache.spark.deploy.SparkSubmit.*--driver-id {worker_id}[.]d[0-9]+ "
    found = subprocess.run(["pgrep", "-f", pattern], capture_output=True, text=True, check=False)
    return [int(pid) for pid in found.stdout.split()]


def listeners_off_loopback(sessions: set[int]) -> list[str]:
    """Listening TCP sockets of the processes in ``sessions`` not bound to 127.0.0.1."""
    found = subprocess.run(["ss", "-ltnpH"], capture_output=True, text=True, check=True)
    wrong = []
    for line in found.stdout.splitlines():
        fields = line.split()
        address = fields[3].rsplit(":", 1)[0]
        for pid in re.findall(r"pid=(\d+)", line):
            try:
                ours = os.getsid(int(pid)) in sessions
            except ProcessLookupError:
                continue
            if ours and address not in ("127.0.0.1", "[::ffff:127.0.0.1]"):
                wrong.append(line)
    return wrong


def kill_host(topology: Topology, worker_id: str, channel: str) -> None:
    """``kill -9`` a runtime worker and its channel's driver (JVM and Python), as if the host
    went away: neither gets to report anything."""
    groups = {os.getpgid(pid) for pid in driver_pids(worker_id)}
    assert groups, f"no driver process of {worker_id} (running {channel}) found"
    worker = topology.stack.services[worker_id]
    os.killpg(worker.process.pid, signal.SIGKILL)
    for group in groups:
        os.killpg(group, signal.SIGKILL)


def test_a_channel_runs_across_the_topology_and_moves_with_its_checkpoint(
    topology: Topology,
) -> None:
    stack, spark = topology.stack, topology.spark
    http = stack.session()
    timings = topology.timings
    suffix = uuid.uuid4().hex[:6]
    channel = f"topology-{suffix}"  # unique: drivers are found by it among all processes
    source, sink = f"topology-in-{suffix}", f"topology-out-{suffix}"
    make_topic(stack.kafka, source, 2)
    make_topic(stack.kafka, sink, 2)

    def status() -> dict:
        response = http.get(f"{stack.api}/channels/{channel}/status", timeout=5)
        assert response.status_code == 200, response.text
        return response.json()

    def wait(condition: Callable[[], Any], timeout: float, what: str) -> Any:
        try:
            return wait_until(condition, timeout, interval=0.5, what=what)
        except TimeoutError as exc:
            pytest.fail(f"{exc}\nlast status: {status()}\n{topology.logs()}")

    # 1. Create and start through the REST API; wait RUNNING.
    spec = {
        "source": {
            "type": "kafka",
            "config": {
                "bootstrap_servers": stack.kafka,
                "topics": [source],
                "starting_offsets": "earliest",
                "format": "json",
                "max_events_per_trigger": MAX_PER_TRIGGER,
            },
        },
        "transforms": [{"type": "filter", "config": {"pattern": PATTERN}}],
        "sink": {
            "type": "kafka",
            "config": {"bootstrap_servers": stack.kafka, "topic": sink, "format": "json"},
        },
    }
    produce_batch(stack.kafka, source, 0)
    created_at = time.monotonic()
    created = http.post(f"{stack.api}/channels/", json={"name": channel, "spec": spec}, timeout=10)
    assert created.status_code == 201, created.text
    started = http.post(f"{stack.api}/channels/{channel}/start", timeout=10)
    assert started.status_code == 202, started.text
    first = wait(lambda: (s := status())["state"] == "RUNNING" and s, 180, "the channel RUNNING")
    timings["create -> RUNNING"] = time.monotonic() - created_at
    host = first["worker_id"]
    assert host in ("runtime-worker-1", "runtime-worker-2"), first
    other = ({"runtime-worker-1", "runtime-worker-2"} - {host}).pop()

    # 2. The cluster view: both runtime workers, the host of the channel, its executors one on
    #    each Spark worker (asked of each worker's own status page).
    def cluster_ready() -> dict | None:
        body = http.get(f"{stack.api}/cluster/", timeout=10).json()
        [view] = [c for c in body["channels"] if c["name"] == channel]
        executors = [e for e in view["executors"] if e["id"] != "driver"]
        return body if len(executors) == 2 and view["application_id"] else None

    body = wait(cluster_ready, 90, "two executors of the channel in the cluster view")
    [view] = [c for c in body["channels"] if c["name"] == channel]
    assert view["state"] == "RUNNING" and view["worker_id"] == host, view
    runtime_workers = {w["worker_id"]: w for w in body["runtime_workers"]}
    assert set(runtime_workers) == {"runtime-worker-1", "runtime-worker-2"}, runtime_workers
    assert all(w["state"] == "ALIVE" for w in runtime_workers.values()), runtime_workers
    assert runtime_workers[host]["connectors"] == [channel]
    assert runtime_workers[other]["connectors"] == []
    spark_view = body["spark"]
    assert spark_view["mode"] == "standalone" and spark_view["error"] is None, spark_view
    assert spark_view["master"] == spark.master_url
    workers = spark_view["workers"]
    assert len(workers) == 2 and {w["state"] for w in workers} == {"ALIVE"}, workers
    executor_ids = {e["id"] for e in view["executors"] if e["id"] != "driver"}
    on_worker = {}
    for worker in workers:
        with requests.get(f"{worker['web_ui']}/json/", timeout=5) as answer:
            mine = [
                str(e["id"])
                for e in answer.json()["executors"]
                if e["appid"] == view["application_id"]
            ]
        assert len(mine) == 1, (worker, mine)
        on_worker[worker["worker_id"]] = mine[0]
    assert set(on_worker.values()) == executor_ids, (on_worker, executor_ids)

    # Every process started here (executors and the driver included) listens on 127.0.0.1.
    services = [*stack.services.values(), *spark.services, topology.redis]
    sessions = {service.process.pid for service in services}  # each leads its own session
    sessions |= {os.getsid(pid) for worker in topology.runtime_vars for pid in driver_pids(worker)}
    wrong = listeners_off_loopback(sessions)
    assert not wrong, "listening beyond 127.0.0.1:\n" + "\n".join(wrong)

    # 3. The first batch flows through.
    expected_first = [seq for seq in range(BATCH) if selected(seq)]
    values = consume_all(stack.kafka, sink, len(expected_first), timeout=120)
    first_seqs = Counter(json.loads(v)["seq"] for v in values)
    assert sorted(first_seqs) == expected_first, (
        f"lost {len(set(expected_first) - set(first_seqs))}"
    )
    timings["create -> first batch in the sink"] = time.monotonic() - created_at
    # The checkpoint's folder is the channel's checkpoint key: <name>.<random hex>.
    [checkpoint] = topology.checkpoint_root.glob(f"{channel}.*")
    assert (checkpoint / "commits").is_dir(), f"no checkpoint at {checkpoint}"
    for var_dir in topology.runtime_vars.values():
        assert not (var_dir / "checkpoints").exists(), f"a checkpoint under {var_dir}"
    # web reads the offsets from the shared root too: the whole first batch is committed.
    wait(lambda: committed_total(http, stack, channel) == BATCH, 30, "the first batch committed")
    batch_before = latest_committed(checkpoint).batch_id

    # 4. kill -9 the runtime worker hosting it, and its driver: it moves to the other one.
    killed_at = time.monotonic()
    kill_host(topology, host, channel)
    wait(lambda: status()["worker_id"] == other, 60, f"the channel assigned to {other}")
    timings["kill -9 -> assigned to the other worker"] = time.monotonic() - killed_at
    wait(
        lambda: (s := status())["worker_id"] == other and s["state"] == "RUNNING",
        150,
        f"the channel RUNNING on {other}",
    )
    timings["kill -9 -> RUNNING on the other worker"] = time.monotonic() - killed_at

    # 5. A second batch: everything of both batches arrives, at least once.
    produce_batch(stack.kafka, source, 1)
    expected = [seq for seq in range(2 * BATCH) if selected(seq)]
    values = consume_all(stack.kafka, sink, len(expected), timeout=120)
    seqs = Counter(json.loads(v)["seq"] for v in values)
    lost = set(expected) - set(seqs)
    assert not lost, f"lost {len(lost)} events, e.g. {sorted(lost)[:10]}\n{topology.logs()}"
    assert set(seqs) == set(expected), "unexpected events in the sink"
    duplicates = sum(count - 1 for count in seqs.values())
    timings["kill -9 -> second batch in the sink"] = time.monotonic() - killed_at

    # Resumed from the checkpoint, not from the earliest offsets (which would have duplicated
    # the whole first batch; the kill came after it was committed) ...
    assert duplicates < len(expected_first), f"{duplicates} duplicates: not resumed"
    # ... the new driver's query continued the checkpoint's batch numbering ...
    wait(lambda: committed_total(http, stack, channel) == 2 * BATCH, 30, "both batches committed")
    batch_after = latest_committed(checkpoint).batch_id
    assert batch_after > batch_before, (batch_before, batch_after)
    # ... and its log, in the new host's var/, says it ran from the shared checkpoint.
    new_log = topology.driver_log(other)
    assert f"checkpoint {checkpoint}" in new_log, new_log[-3000:]

    # The cluster view shows the move: the old host DEAD, two executors of the new driver.
    def moved_in_view() -> dict | None:
        body = http.get(f"{stack.api}/cluster/", timeout=10).json()
        [view] = [c for c in body["channels"] if c["name"] == channel]
        executors = [e for e in view["executors"] if e["id"] != "driver"]
        return body if view["worker_id"] == other and len(executors) == 2 else None

    body = wait(moved_in_view, 60, "the moved channel's two executors in the cluster view")
    runtime_workers = {w["worker_id"]: w for w in body["runtime_workers"]}
    assert runtime_workers[host]["state"] == "DEAD", runtime_workers
    assert runtime_workers[other]["state"] == "ALIVE", runtime_workers
    assert runtime_workers[other]["connectors"] == [channel], runtime_workers

    # 6. The lifecycle tells the move: the old worker missed its session timeout, the
    #    connector was taken over by the other one (the owner of its slot now).
    lifecycle = http.get(f"{stack.api}/channels/{channel}/lifecycle/?limit=200", timeout=5)
    assert lifecycle.status_code == 200, lifecycle.text
    reasons = [event["reason"] for event in lifecycle.json()["results"]]
    move = [r for r in reasons if f"worker {host}" in r and f"taken over by worker {other}" in r]
    assert move, reasons
    worker_events = http.get(f"{stack.api}/workers/{host}/", timeout=5)
    assert worker_events.status_code == 200, worker_events.text
    assert worker_events.json()["state"] == "DEAD", worker_events.json()

    # 7. A graceful stop of the runtime worker now hosting it (SIGTERM, what `docker compose
    #    stop` sends) stops its driver without reporting the channel FAILED.
    stopping_at = time.monotonic()
    stack.services[other].stop(timeout=40)
    assert not driver_pids(other), "a driver outlived its runtime worker"
    timings["graceful stop of the runtime worker"] = time.monotonic() - stopping_at
    seen = set()
    deadline = time.monotonic() + 4  # a few reconcile passes (every second)
    while time.monotonic() < deadline:
        seen.add(status()["state"])
        time.sleep(0.5)
    events = http.get(f"{stack.api}/channels/{channel}/lifecycle/?limit=200", timeout=5).json()
    failed = [e for e in events["results"] if e["to_state"] == "FAILED"]
    assert "FAILED" not in seen and not failed, (seen, failed, topology.driver_log(other))

    timings["total"] = time.monotonic() - topology.started_at
    report = {
        "timings_s": {k: round(v, 1) for k, v in timings.items()},
        "events": 2 * BATCH,
        "selected": len(expected),
        "duplicates": duplicates,
        "moved": f"{host} -> {other}",
        "move_reason": move[0],
        "batch_before_move": batch_before,
        "batch_after": batch_after,
    }
    artifacts = Path(topology.stack.log_dir)
    (artifacts / "topology-report.json").write_text(json.dumps(report, indent=2))
    print(f"\ntopology: {json.dumps(report)}")
