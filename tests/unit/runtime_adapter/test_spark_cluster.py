"""Spark standalone support: the driver's spark-submit options, the master's status page,
and the executors a driver reports. A real master and workers run in tests/integration."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import pytest

from runtime_adapter.base import ConnectorStatus, Deployment, ExecutorInfo
from runtime_adapter.config import RuntimeConfig
from runtime_adapter.host.executors import ExecutorWatch, executor_from_summary
from runtime_adapter.host.worker import DRIVER_SCRIPT, RuntimeWorker, local_cores, memory_mb
from runtime_adapter.spark import SparkRuntime
from runtime_adapter.spark_master import master_cluster, parse_master_status
from runtime_adapter.states import State, TargetState
from runtime_adapter.store import status_from_json, status_to_json
from tests.support.http_server import Answer, RecordingServer, refused_url

#: Recorded from a Spark 4.2.0 master's /json/ (a second worker, marked DEAD, added by hand).
SAMPLE = json.loads((Path(__file__).parent / "data" / "spark_master_status.json").read_text())
DEPLOYMENT = Deployment("orders", "orders", 1, {}, TargetState.RUNNING, worker_id="w1")


def config(monkeypatch: pytest.MonkeyPatch, **env: str) -> RuntimeConfig:
    for name in (
        "SPARK_MASTER",
        "SLUICE_EXECUTOR_CORES",
        "SLUICE_EXECUTOR_MEMORY",
        "SLUICE_MAX_CORES",
        "SLUICE_DRIVER_HOST",
        "SLUICE_DRIVER_BIND_ADDRESS",
        "SLUICE_SPARK_MASTER_UI_URL",
        "SLUICE_DRIVER_MEMORY",
        "SLUICE_SHARED_DRIVER_MEMORY",
        "SLUICE_DRIVER_HEAP_LIMIT_PERCENT",
        "SLUICE_DRIVER_RSS_LIMIT_MB",
    ):
        monkeypatch.delenv(name, raising=False)
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    return RuntimeConfig.from_env()


def shared_driver_command(cfg: RuntimeConfig, isolation: str = "shared") -> list[str]:
    worker = RuntimeWorker(cfg, store=None)  # type: ignore[arg-type]
    return worker.driver_command("w1.d1", isolation, 50, "sluice-w1.d1")


def conf_values(command: list[str]) -> dict[str, str]:
    pairs = [command[i + 1] for i, arg in enumerate(command) if arg == "--conf"]
    return dict(pair.split("=", 1) for pair in pairs)


def option(command: list[str], name: str) -> str | None:
    return command[command.index(name) + 1] if name in command else None


# -- configuration and the spark-submit command -------------------------------------------------


def test_local_default_keeps_everything_on_the_loopback(monkeypatch):
    cfg = config(monkeypatch)
    command = shared_driver_command(cfg)

    assert cfg.spark_master == "local[*]" and not cfg.standalone
    assert option(command, "--master") == "local[*]"
    confs = conf_values(command)
    assert confs["spark.driver.host"] == confs["spark.driver.bindAddress"] == "127.0.0.1"
    assert "spark.cores.max" not in confs and "--executor-memory" not in command
    assert cfg.master_ui_urls() == []
    # One pool per connector's jobs, shared fairly; the driver knows who it is.
    assert confs["spark.scheduler.mode"] == "FAIR"
    # Its status store keeps few SQL executions, jobs and stages (nothing reads them).
    for name in (
        "spark.sql.ui.retainedExecutions",
        "spark.ui.retainedJobs",
        "spark.ui.retainedStages",
    ):
        assert confs[name] == "50"
    assert command[-12:] == [
        "--driver-id",
        "w1.d1",
        "--worker-id",
        cfg.worker_id,
        "--isolation",
        "shared",
        "--capacity",
        "50",
        "--memory",
        "2g",
        "--cores",
        "0",
    ]


def test_a_team_s_driver_is_told_its_team(monkeypatch):
    cfg = config(monkeypatch, SPARK_MASTER="local[*]")
    worker = RuntimeWorker(cfg, store=None)  # type: ignore[arg-type]
    command = worker.driver_command("w1.d2", "shared", 50, "sluice-w1.d2", team="payments")
    assert option(command, "--team") == "payments"
    assert command.index("--team") > command.index(str(DRIVER_SCRIPT)), "the driver's argument"


def test_a_driver_s_cores_as_its_team_s_driver_quota_counts_them(monkeypatch):
    assert [local_cores(m, 4) for m in ("local[*]", "local[3]", "local[2,5]", "local")] == [
        4,
        3,
        2,
        1,
    ]
    cfg = replace(config(monkeypatch, SPARK_MASTER="local[*]"), worker_cores=6)
    worker = RuntimeWorker(cfg, store=None)  # type: ignore[arg-type]
    assert (worker.driver_cores(), worker.driver_cores(cores=2)) == (6, 2)
    standalone = config(monkeypatch, SPARK_MASTER="spark://m:7077", SLUICE_MAX_CORES="3")
    worker = RuntimeWorker(standalone, store=None)  # type: ignore[arg-type]
    assert (worker.driver_cores(), worker.driver_cores(cores=2)) == (3, 2)


def test_a_real_time_driver_gets_exactly_its_cores(monkeypatch):
    cfg = config(monkeypatch, SPARK_MASTER="local[*]")
    worker = RuntimeWorker(cfg, store=None)  # type: ignore[arg-type]
    command = worker.driver_command("w1.d2", "dedicated", 1, "sluice-rt", cores=3)
    assert option(command, "--master") == "local[3]" and command[-1] == "3"
    cfg = config(monkeypatch, SPARK_MASTER="spark://127.0.0.1:7077", SLUICE_MAX_CORES="1")
    worker = RuntimeWorker(cfg, store=None)  # type: ignore[arg-type]
    confs = conf_values(worker.driver_command("w1.d2", "dedicated", 1, "sluice-rt", cores=3))
    assert confs["spark.cores.max"] == "3"


def test_shared_and_dedicated_drivers_get_their_own_memory(monkeypatch):
    cfg = config(monkeypatch, SLUICE_DRIVER_MEMORY="900m", SLUICE_SHARED_DRIVER_MEMORY="3g")
    assert option(shared_driver_command(cfg), "--driver-memory") == "3g"
    assert option(shared_driver_command(cfg, "dedicated"), "--driver-memory") == "900m"


def test_every_driver_loads_the_memory_watch_with_its_limits(monkeypatch):
    cfg = config(monkeypatch, SLUICE_DRIVER_MEMORY="900m", SLUICE_SHARED_DRIVER_MEMORY="3g")
    if not any(cfg.functions_dir.glob("*.jar")):
        pytest.fail("Sluice's Spark functions are missing (make jars)")
    shared = conf_values(shared_driver_command(cfg))
    assert shared["spark.plugins"] == "io.sluice.spark.MemoryWatch"
    assert shared["spark.sluice.memoryWatch.heapFraction"] == "0.85"
    assert shared["spark.sluice.memoryWatch.rssMiB"] == str(2 * 3072 + 1024)  # by default
    dedicated = conf_values(shared_driver_command(cfg, "dedicated"))
    assert dedicated["spark.sluice.memoryWatch.rssMiB"] == str(2 * 900 + 1024)
    cfg = config(
        monkeypatch, SLUICE_DRIVER_HEAP_LIMIT_PERCENT="70", SLUICE_DRIVER_RSS_LIMIT_MB="5000"
    )
    confs = conf_values(shared_driver_command(cfg))
    assert confs["spark.sluice.memoryWatch.heapFraction"] == "0.7"
    assert confs["spark.sluice.memoryWatch.rssMiB"] == "5000"


@pytest.mark.parametrize(
    ("size", "mb"),
    [("2g", 2048), ("512m", 512), ("1536", 1536), ("4096k", 4), ("1T", 1048576), ("x", 0)],
)
def test_spark_memory_sizes_read_in_mib(size, mb):
    assert memory_mb(size) == mb


def test_standalone_sizes_executors_and_caps_cores(monkeypatch):
    cfg = config(
        monkeypatch,
        SPARK_MASTER="spark://127.0.0.1:7077",
        SLUICE_EXECUTOR_CORES="2",
        SLUICE_EXECUTOR_MEMORY="512m",
        SLUICE_MAX_CORES="4",
    )
    command = shared_driver_command(cfg)

    assert option(command, "--master") == "spark://127.0.0.1:7077"
    assert option(command, "--executor-memory") == "512m"
    confs = conf_values(command)
    assert confs["spark.executor.cores"] == "2"
    assert confs["spark.cores.max"] == "4"
    # Executors reach the driver at the address of the route to the master.
    assert confs["spark.driver.host"] == "127.0.0.1"
    # The Kafka connector jars go with --jars: the driver serves them to its executors.
    jars = ",".join(str(path) for path in cfg.spark_jars())
    assert option(command, "--jars") == (jars or None)


def test_standalone_defaults_take_one_executor_core(monkeypatch):
    cfg = config(monkeypatch, SPARK_MASTER="spark://127.0.0.1:7077")
    confs = conf_values(RuntimeWorker(cfg, store=None).standalone_options())  # type: ignore[arg-type]

    assert (cfg.executor_cores, cfg.executor_memory, cfg.max_cores) == (1, "1g", 1)
    assert confs["spark.cores.max"] == "1"


def test_max_cores_is_never_below_one_executor(monkeypatch):
    cfg = config(
        monkeypatch,
        SPARK_MASTER="spark://127.0.0.1:7077",
        SLUICE_EXECUTOR_CORES="2",
        SLUICE_MAX_CORES="1",
    )
    confs = conf_values(RuntimeWorker(cfg, store=None).standalone_options())  # type: ignore[arg-type]
    assert confs["spark.cores.max"] == "2"


def test_driver_address_can_be_set(monkeypatch):
    cfg = config(
        monkeypatch,
        SPARK_MASTER="spark://10.0.0.5:7077",
        SLUICE_DRIVER_HOST="runtime-1.internal",
        SLUICE_DRIVER_BIND_ADDRESS="0.0.0.0",
    )
    confs = conf_values(shared_driver_command(cfg))

    assert confs["spark.driver.host"] == "runtime-1.internal"
    assert confs["spark.driver.bindAddress"] == "0.0.0.0"


def test_master_addresses_and_ui_urls(monkeypatch):
    cfg = config(monkeypatch, SPARK_MASTER="spark://m1:7077,m2:7078")
    assert cfg.master_addresses() == [("m1", 7077), ("m2", 7078)]
    assert cfg.master_ui_urls() == ["http://m1:8080", "http://m2:8080"]

    cfg = config(
        monkeypatch,
        SPARK_MASTER="spark://m1:7077",
        SLUICE_SPARK_MASTER_UI_URL="http://ui-1:18080/, http://ui-2:18080",
    )
    assert cfg.master_ui_urls() == ["http://ui-1:18080", "http://ui-2:18080"]


@pytest.mark.parametrize("value", ["0", "two", "-1"])
def test_bad_core_counts_are_refused(monkeypatch, value):
    with pytest.raises(ValueError, match="SLUICE_EXECUTOR_CORES"):
        config(monkeypatch, SLUICE_EXECUTOR_CORES=value)


# -- the master's status page ------------------------------------------------------------------


def test_recorded_master_status_parses():
    cluster = parse_master_status(SAMPLE, "spark://127.0.0.1:17077", "http://127.0.0.1:18080")

    assert (cluster.mode, cluster.status, cluster.error) == ("standalone", "ALIVE", None)
    alive, dead = cluster.workers
    assert alive.worker_id == "worker-20261121154430-127.0.0.1-40519"
    assert (alive.host, alive.port, alive.state) == ("127.0.0.1", 40519, "ALIVE")
    assert (alive.cores, alive.cores_used, alive.memory_mb, alive.memory_used_mb) == (
        1,
        1,
        1024,
        512,
    )
    assert alive.last_heartbeat == pytest.approx(1795275932.365)
    assert alive.web_ui == "http://127.0.0.1:38751"
    assert dead.state == "DEAD" and dead.cores_used == 0
    [app] = cluster.applications
    assert (app.app_id, app.name, app.state, app.cores) == (
        "app-20261121154458-0000",
        "sluice-orders",
        "RUNNING",
        1,
    )
    assert app.memory_per_executor_mb == 512
    assert app.started_at == pytest.approx(1795275898.153)


def test_master_cluster_reads_the_json_page():
    body = json.dumps(SAMPLE).encode()
    with RecordingServer(lambda request: Answer(200, body)) as server:
        cluster = master_cluster("spark://127.0.0.1:17077", [server.url])

    assert [request.path for request in server.requests] == ["/json/"]
    assert cluster.error is None and len(cluster.workers) == 2
    assert cluster.web_ui == server.url


def test_a_master_that_does_not_answer_is_an_error_not_an_exception():
    url = refused_url()
    cluster = master_cluster("spark://127.0.0.1:17077", [url], timeout=1)

    assert cluster.mode == "standalone" and cluster.workers == []
    assert cluster.error.startswith("the Spark master did not answer")
    assert f"{url}/json/" in cluster.error


@pytest.mark.parametrize(
    "answer", [Answer(500, b"oops"), Answer(200, b"<html>not json</html>"), Answer(200, b"{}")]
)
def test_a_page_that_is_not_a_master_status_is_an_error(answer):
    with RecordingServer(lambda request: answer) as server:
        cluster = master_cluster("spark://127.0.0.1:17077", [server.url])
    assert cluster.error and cluster.workers == []


def test_the_alive_master_answers_for_standby_ones():
    standby = json.dumps({**SAMPLE, "status": "STANDBY", "workers": []}).encode()
    alive = json.dumps(SAMPLE).encode()
    with (
        RecordingServer(lambda request: Answer(200, standby)) as first,
        RecordingServer(lambda request: Answer(200, alive)) as second,
    ):
        cluster = master_cluster("spark://a:7077,b:7077", [first.url, second.url])
    assert cluster.status == "ALIVE" and cluster.web_ui == second.url


def test_runtime_reports_local_mode_without_asking_anyone(monkeypatch, redis_url, prefix):
    config(monkeypatch, SPARK_MASTER="local[2]")
    cluster = SparkRuntime(redis_url, prefix).spark_cluster()
    assert (cluster.mode, cluster.master, cluster.workers, cluster.error) == (
        "local",
        "local[2]",
        [],
        None,
    )


def test_runtime_asks_the_configured_master_ui(monkeypatch, redis_url, prefix):
    body = json.dumps(SAMPLE).encode()
    with RecordingServer(lambda request: Answer(200, body)) as server:
        config(
            monkeypatch,
            SPARK_MASTER="spark://127.0.0.1:17077",
            SLUICE_SPARK_MASTER_UI_URL=server.url,
        )
        cluster = SparkRuntime(redis_url, prefix).spark_cluster()
    assert cluster.status == "ALIVE" and len(cluster.workers) == 2


# -- executors in the connector status -----------------------------------------------------------


def test_status_with_executors_round_trips():
    executor = ExecutorInfo("0", "10.0.0.7", 40211, 1, 2, 30, 0, 4096, 1 << 27)
    status = ConnectorStatus(
        "orders", State.RUNNING, "w1", executors=[executor], application_id="app-1"
    )
    again = status_from_json(status_to_json(status))
    assert again.executors == [executor] and again.application_id == "app-1"


def test_a_status_written_before_executors_existed_still_reads():
    old = {
        "connector_id": "orders",
        "state": "RUNNING",
        "worker_id": "w1",
        "generation": 0,
        "trace": "",
        "updated_at": 1.0,
        "tasks": [],
        "progress": None,
        "dead_letters": 0,
    }
    status = status_from_json(json.dumps(old))
    assert status.executors == [] and status.application_id is None


def test_store_keeps_reported_executors(runtime, store):
    runtime.deploy(replace(DEPLOYMENT))
    executor = ExecutorInfo("driver", "127.0.0.1", 41000, 0, 0, 0, 0, 100, 200)
    assert store.report(ConnectorStatus("orders", State.RUNNING, "w1", executors=[executor]))
    assert runtime.status(["orders"])["orders"].executors == [executor]


class Summary:
    """Stands in for a py4j ExecutorSummary proxy."""

    def __init__(self, **values):
        self.values = values

    def __getattr__(self, name):
        return lambda: self.values[name]


def summary(**overrides) -> Summary:
    values = {
        "id": "1",
        "hostPort": "127.0.0.1:34195",
        "totalCores": 1,
        "activeTasks": 1,
        "completedTasks": 11,
        "failedTasks": 0,
        "memoryUsed": 43605,
        "maxMemory": 133378867,
    }
    return Summary(**{**values, **overrides})


def test_executor_summary_becomes_plain_data():
    assert executor_from_summary(summary()) == ExecutorInfo(
        "1", "127.0.0.1", 34195, 1, 1, 11, 0, 43605, 133378867
    )
    ipv6 = executor_from_summary(summary(hostPort="[::1]:5000"))
    assert (ipv6.host, ipv6.port) == ("::1", 5000)


class FakeContext:
    """A SparkContext whose JVM status store lists ``summaries`` (or fails)."""

    def __init__(self, summaries):
        self.summaries = summaries
        self._jsc = self

    def sc(self):
        return self

    def statusStore(self):
        return self

    def executorList(self, active_only):
        if isinstance(self.summaries, Exception):
            raise self.summaries
        return self

    def size(self):
        return len(self.summaries)

    def apply(self, index):
        return self.summaries[index]


def test_executor_watch_orders_rereads_and_survives_failures():
    context = FakeContext([summary(id="10"), summary(id="driver", totalCores=0), summary(id="2")])
    watch = ExecutorWatch(interval=0)

    assert [e.executor_id for e in watch.current(context)] == ["driver", "2", "10"]
    context.summaries = RuntimeError("py4j gateway gone")
    assert [e.executor_id for e in watch.current(context)] == ["driver", "2", "10"]
    assert watch.current(None) == watch.executors


def test_executor_watch_reads_at_most_every_interval():
    context = FakeContext([summary(id="0")])
    watch = ExecutorWatch(interval=60)
    watch.current(context)
    context.summaries = [summary(id="0"), summary(id="1")]
    assert len(watch.current(context)) == 1
