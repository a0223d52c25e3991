from __future__ import annotations

import os
import signal
import subprocess
import sys
from collections.abc import Iterator

import pytest
import redis as redis_lib
from django.conf import settings

from console import locks, tasks
from console.celery import app
from console.models import LoopFence, Worker
from console.schedule import beat_schedule

LOCK = "sluice:lock:reconcile"


@pytest.fixture
def redis(monkeypatch, redis_url: str) -> Iterator[redis_lib.Redis]:
    """The session's real Redis as the console's (the loop's lock, its token, metrics)."""
    client = redis_lib.Redis.from_url(redis_url)
    monkeypatch.setattr(locks, "redis_client", lambda timeout=5.0: client)
    client.delete(LOCK, f"{LOCK}:token")
    yield client
    client.delete(LOCK, f"{LOCK}:token")


def a_process_holding(redis_url: str, key: str) -> subprocess.Popen[str]:
    """Another process of this host that takes ``key`` as single_flight would and keeps it."""
    program = (
        "import sys, time, redis\n"
        "from console.locks import holder\n"
        "redis.Redis.from_url(sys.argv[1]).set(sys.argv[2], holder(), px=600_000)\n"
        "print('held', flush=True)\n"
        "time.sleep(600)\n"
    )
    process = subprocess.Popen(
        [sys.executable, "-c", program, redis_url, key], stdout=subprocess.PIPE, text=True
    )
    assert process.stdout is not None and process.stdout.readline().strip() == "held"
    return process


def test_beat_runs_reconcile_every_interval_and_drops_stale_runs():
    entry = beat_schedule(2.0)["reconcile"]

    assert entry["task"] == "console.tasks.reconcile"
    assert entry["schedule"] == 2.0
    assert entry["options"]["expires"] == 2.0
    assert beat_schedule(settings.SLUICE_RECONCILE_INTERVAL) == settings.CELERY_BEAT_SCHEDULE


def test_beat_refreshes_the_stopped_channels_lag_beside_the_loop():
    entry = beat_schedule(2.0)["refresh-stopped-lag"]

    assert entry["task"] == "console.tasks.refresh_lag"
    assert entry["schedule"] == entry["options"]["expires"] == 10.0


def test_the_celery_app_knows_the_task():
    app.loader.import_default_modules()

    assert "console.tasks.reconcile" in app.tasks
    assert app.conf.beat_schedule["reconcile"]["task"] == "console.tasks.reconcile"


@pytest.mark.django_db
def test_reconcile_task_runs_a_pass_under_a_short_lock(redis, runtime):
    runtime.heartbeat("w1")

    result = tasks.reconcile()

    assert result["workers_alive"] == 1
    assert Worker.objects.filter(worker_id="w1").exists()
    assert redis.get(LOCK) is None  # released
    assert LoopFence.objects.get(name="reconcile").token == 1, "its writes fenced by its token"
    tasks.reconcile()
    assert LoopFence.objects.get(name="reconcile").token == 2


@pytest.mark.django_db
def test_reconcile_task_skips_while_another_pass_runs(redis, redis_url, runtime):
    other = a_process_holding(redis_url, LOCK)
    try:
        runtime.heartbeat("w1")

        assert tasks.reconcile() is None
        assert not Worker.objects.exists()
        assert 0 < redis.pttl(LOCK) <= 600_000, "the other pass's lock is left alone"
    finally:
        other.kill()
        other.wait()


@pytest.mark.django_db
def test_a_pass_that_died_holding_the_lock_does_not_stop_the_next(redis, redis_url, runtime):
    """A Celery pool process killed mid-pass (librdkafka aborted one) never ran its
    ``finally``: the next pass on this host sees the holder is gone and takes the lock at
    once instead of skipping until it expires."""
    dead = a_process_holding(redis_url, LOCK)
    os.kill(dead.pid, signal.SIGKILL)
    dead.wait()
    runtime.heartbeat("w1")

    assert tasks.reconcile() is not None
    assert Worker.objects.filter(worker_id="w1").exists()
    assert redis.get(LOCK) is None


def test_a_holder_on_another_host_or_unknown_counts_as_alive():
    here = locks.holder()
    assert not locks.held_by_the_dead(here), "this very process"
    assert not locks.held_by_the_dead(None)
    assert not locks.held_by_the_dead(b"0b6e0c2c9f4e4b1a")  # an older token: no holder named
    space = here.rsplit("|", 2)[0]
    assert not locks.held_by_the_dead(f"elsewhere|pid:[1]|{2**22 + 1}|x")
    assert not locks.held_by_the_dead(f"{space}|1|x"), "PID 1 is alive"
    assert locks.held_by_the_dead(f"{space}|{2**22 + 1}|x"), "past pid_max: no such process"


@pytest.mark.django_db
def test_reconcile_task_skips_when_the_runtime_is_unreachable(redis, runtime):
    runtime.unavailable = ConnectionError("redis is down")

    assert tasks.reconcile() is None
    assert redis.get(LOCK) is None
