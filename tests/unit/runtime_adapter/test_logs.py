"""Structured logs: ids from the context on every record, text or one JSON object per line."""

from __future__ import annotations

import io
import json
import logging
import os
import subprocess
import sys
import threading
from datetime import datetime

import pytest

from runtime_adapter import logs
from runtime_adapter.base import Deployment
from runtime_adapter.config import REPO_ROOT
from runtime_adapter.host.worker import RuntimeWorker
from runtime_adapter.states import TargetState
from runtime_adapter.store import RedisStore


@pytest.fixture(autouse=True)
def fresh_process_context(monkeypatch):
    """set_process_context is process-wide: give each test its own."""
    monkeypatch.setattr(logs, "_process_context", {})


def make_logger(formatter: logging.Formatter, role: str | None = "test") -> tuple:
    stream = io.StringIO()
    handler = logging.StreamHandler(stream)
    handler.setFormatter(formatter)
    handler.addFilter(logs.ContextFilter(role=role))
    logger = logging.getLogger(f"sluice.test.{id(stream)}")
    logger.handlers = [handler]
    logger.propagate = False
    logger.setLevel(logging.DEBUG)
    return logger, stream


def json_lines(stream: io.StringIO) -> list[dict]:
    text = stream.getvalue()
    assert text.endswith("\n")
    return [json.loads(line) for line in text.splitlines()]


def test_a_json_record_in_a_connector_context_carries_its_ids():
    logger, stream = make_logger(logs.JsonFormatter(), role="runtime-worker")
    logs.set_process_context(worker="w1")

    with logs.log_context(channel="orders", connector="orders-c"):
        logger.info("started driver for %s", "orders-c")
    logger.info("idle")

    inside, outside = json_lines(stream)
    assert list(inside)[:8] == [
        "timestamp",
        "level",
        "logger",
        "message",
        "role",
        "channel",
        "connector",
        "worker",
    ]
    assert inside["level"] == "INFO"
    assert inside["logger"] == logger.name
    assert inside["message"] == "started driver for orders-c"
    assert (inside["role"], inside["channel"], inside["connector"], inside["worker"]) == (
        "runtime-worker",
        "orders",
        "orders-c",
        "w1",
    )
    assert datetime.fromisoformat(inside["timestamp"]).utcoffset().total_seconds() == 0
    assert "channel" not in outside and "connector" not in outside
    assert outside["worker"] == "w1"


def test_every_record_is_one_json_object_on_one_line_with_its_exception():
    logger, stream = make_logger(logs.JsonFormatter())

    logger.warning('two\nlines and a "quote"')
    with logs.log_context(connector="c1"):
        try:
            raise RuntimeError("boom")
        except RuntimeError:
            logger.exception("pass failed")
    logger.info("extra fields too", extra={"rows": 3})

    lines = stream.getvalue().splitlines()
    assert len(lines) == 3
    first, failed, extra = (json.loads(line) for line in lines)
    assert first["message"] == 'two\nlines and a "quote"'
    assert failed["level"] == "ERROR"
    assert failed["connector"] == "c1"
    assert failed["exc_info"].startswith("Traceback (most recent call last):")
    assert failed["exc_info"].endswith("RuntimeError: boom")
    assert extra["rows"] == 3


def test_contexts_nest_and_end_with_their_block():
    with logs.log_context(channel="a", connector="a-1"):
        with logs.log_context(connector="a-2", worker=None):
            assert logs.current_context() == {"channel": "a", "connector": "a-2"}
        assert logs.current_context() == {"channel": "a", "connector": "a-1"}
    assert logs.current_context() == {}


def test_extra_ids_win_over_the_context():
    logger, stream = make_logger(logs.JsonFormatter())

    with logs.log_context(channel="a"):
        logger.info("about b", extra={"channel": "b"})

    assert json_lines(stream)[0]["channel"] == "b"


def test_process_ids_reach_other_threads_block_ids_do_not():
    logger, stream = make_logger(logs.JsonFormatter())
    logs.set_process_context(connector="c1", worker="w1")

    with logs.log_context(channel="only-here"):
        thread = threading.Thread(target=logger.info, args=("from a Spark callback thread",))
        thread.start()
        thread.join()

    [record] = json_lines(stream)
    assert (record["connector"], record["worker"]) == ("c1", "w1")
    assert "channel" not in record


def test_text_format_shows_the_known_ids_in_brackets():
    logger, stream = make_logger(logs.TextFormatter())

    with logs.log_context(channel="orders", connector="orders-c"):
        logger.warning("lagging")
    logger.warning("plain")

    inside, outside = stream.getvalue().splitlines()
    assert inside.endswith(f"WARNING {logger.name} [channel=orders connector=orders-c]: lagging")
    assert outside.endswith(f"WARNING {logger.name}: plain")


@pytest.mark.parametrize(("raw", "expected"), [("", "text"), ("text", "text"), (" JSON ", "json")])
def test_the_log_format_comes_from_the_environment(raw, expected):
    assert logs.log_format({"SLUICE_LOG_FORMAT": raw}) == expected
    assert logs.log_format({}) == "text"


def test_an_unknown_log_format_is_a_clear_error():
    with pytest.raises(ValueError, match="SLUICE_LOG_FORMAT must be 'text' or 'json', got 'xml'"):
        logs.log_format({"SLUICE_LOG_FORMAT": "xml"})


@pytest.mark.parametrize(
    ("argv", "role"),
    [
        (["/app/.venv/bin/gunicorn", "console.wsgi:application"], "web"),
        (["manage.py", "runserver"], "web"),
        (["/app/.venv/bin/celery", "-A", "console", "worker"], "celery-worker"),
        (["celery", "-A", "console", "beat", "--schedule", "x"], "celery-beat"),
        (["manage.py", "reconcile"], "reconcile"),
    ],
)
def test_the_process_role_is_guessed_from_the_command(monkeypatch, argv, role):
    monkeypatch.delenv("SLUICE_PROCESS_ROLE", raising=False)
    assert logs.process_role(argv) == role


def test_an_explicit_process_role_wins(monkeypatch):
    monkeypatch.setenv("SLUICE_PROCESS_ROLE", "web-eu-1")
    assert logs.process_role(["celery", "worker"]) == "web-eu-1"


def test_configure_logging_replaces_the_root_handlers(monkeypatch, capsys):
    root = logging.getLogger()
    saved = (root.handlers[:], root.level)
    monkeypatch.setenv("SLUICE_LOG_FORMAT", "json")
    try:
        logs.configure_logging("driver", level="INFO")
        logging.getLogger("sluice.driver").info("query started")
        logging.getLogger("sluice.driver").debug("not shown")
    finally:
        root.handlers, root.level = saved
    [record] = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert (record["role"], record["message"]) == ("driver", "query started")


def _run(code: str, **env: str) -> subprocess.CompletedProcess:
    environ = {**os.environ, **env, "PYTHONPATH": str(REPO_ROOT)}
    return subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        env=environ,
        cwd=REPO_ROOT,
        timeout=60,
        check=True,
    )


def test_django_and_celery_processes_log_json_through_the_settings():
    code = (
        "import django, logging; django.setup()\n"
        "from runtime_adapter.logs import log_context\n"
        "with log_context(channel='orders', connector='orders-c'):\n"
        "    logging.getLogger('console.services.reconcile').info('connector RUNNING')\n"
        "logging.getLogger('celery').warning('from celery')\n"
    )
    out = _run(
        code,
        DJANGO_SETTINGS_MODULE="console.settings",
        SLUICE_LOG_FORMAT="json",
        SLUICE_PROCESS_ROLE="celery-worker",
    ).stdout
    reconcile, celery = (json.loads(line) for line in out.splitlines())
    assert reconcile["logger"] == "console.services.reconcile"
    assert (reconcile["channel"], reconcile["connector"], reconcile["role"]) == (
        "orders",
        "orders-c",
        "celery-worker",
    )
    assert (celery["logger"], celery["level"]) == ("celery", "WARNING")


def test_the_driver_logs_its_connector_worker_and_channel(redis_url: str, prefix: str):
    store = RedisStore.from_url(redis_url, prefix)
    store.put_deployment(
        Deployment("orders-c", "orders", 1, {}, TargetState.RUNNING, worker_id="w1", generation=0)
    )
    code = (
        "import sys\n"
        "from runtime_adapter import logs, store\n"
        "from runtime_adapter.host import driver, hosted\n"
        "from runtime_adapter.config import RuntimeConfig\n"
        "logs.configure_logging('driver')\n"
        "logs.set_process_context(worker='w1')  # as driver.main does\n"
        "config = RuntimeConfig.from_env()\n"
        "redis = store.RedisStore.from_url(config.redis_url, config.key_prefix)\n"
        "placement = store.Placement(0, 1, 1.0)\n"
        "connector = hosted.HostedConnector(redis, config, connector_id='orders-c',\n"
        "    worker_id='w1', generation=0, driver_id='w1.d1', placement=placement)\n"
        "connector.start(redis.deployment('orders-c'))  # its own thread\n"
        "connector.done.wait(30)\n"
        "sys.exit(1 if connector.state.name == 'FAILED' else 0)\n"
    )
    with pytest.raises(subprocess.CalledProcessError) as failed:  # the empty spec is invalid
        _run(code, REDIS_URL=redis_url, SLUICE_REDIS_PREFIX=prefix, SLUICE_LOG_FORMAT="json")
    lines = [json.loads(line) for line in failed.value.stdout.splitlines()]
    [error] = [line for line in lines if line["level"] == "ERROR"]
    assert error["logger"] == "sluice.driver"
    assert (error["role"], error["channel"], error["connector"], error["worker"]) == (
        "driver",
        "orders",
        "orders-c",
        "w1",
    )


class _SleeperWorker(RuntimeWorker):
    def driver_command(
        self,
        driver_id: str,
        isolation: str,
        capacity: int,
        name: str,
        cores: int = 0,
        team: str = "",
    ):
        return [sys.executable, "-c", "import time\nwhile True: time.sleep(0.1)"]


def test_the_runtime_worker_logs_launches_with_the_connector_and_channel(
    redis_url: str, prefix: str, worker_config, caplog
):
    config = worker_config(driver_stop_grace=0.5, warm_drivers=0)
    store = RedisStore.from_url(redis_url, prefix)
    store.put_deployment(
        Deployment("orders-c", "orders", 1, {}, TargetState.RUNNING, worker_id="w1")
    )
    worker = _SleeperWorker(config, store)
    caplog.handler.addFilter(logs.ContextFilter())
    try:
        with caplog.at_level(logging.INFO, logger="sluice.worker"):
            worker.converge()
    finally:
        worker.shutdown()
    [started] = [r for r in caplog.records if r.getMessage().startswith("started shared driver")]
    [placed] = [r for r in caplog.records if r.getMessage().startswith("placed orders-c")]
    for record in (started, placed):
        assert (record.channel, record.connector) == ("orders", "orders-c")
