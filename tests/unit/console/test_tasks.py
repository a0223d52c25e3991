from __future__ import annotations

import pytest
from django.conf import settings

from console import locks, tasks
from console.celery import app
from console.models import LoopFence, Worker
from console.schedule import beat_schedule


class FakeLock:
    def __init__(self, held: set[str], name: str) -> None:
        self.held, self.name = held, name

    def acquire(self, blocking: bool = True) -> bool:
        if self.name in self.held:
            return False
        self.held.add(self.name)
        return True

    def release(self) -> None:
        self.held.discard(self.name)


class FakePipeline:
    """Just enough of a Redis pipeline for :func:`console.metrics.record_reconcile`."""

    def __init__(self, hashes: dict[str, dict[str, float]]) -> None:
        self.hashes = hashes

    def hincrby(self, key: str, field: str, amount: float) -> None:
        fields = self.hashes.setdefault(key, {})
        fields[field] = fields.get(field, 0) + amount

    hincrbyfloat = hincrby

    def hset(self, key: str, field: str, value: str) -> None:
        self.hashes.setdefault(key, {})[field] = float(value)

    def execute(self) -> None:
        pass


class FakeRedis:
    """Just enough of redis.Redis for :func:`console.locks.single_flight` and the
    reconcile metrics."""

    def __init__(self) -> None:
        self.held: set[str] = set()
        self.ttls: dict[str, float] = {}
        self.hashes: dict[str, dict[str, float]] = {}
        self.counters: dict[str, int] = {}

    def lock(self, name: str, timeout: float, blocking: bool) -> FakeLock:
        self.ttls[name] = timeout
        return FakeLock(self.held, name)

    def pipeline(self, transaction: bool = True) -> FakePipeline:
        return FakePipeline(self.hashes)

    def incr(self, name: str) -> int:
        self.counters[name] = self.counters.get(name, 0) + 1
        return self.counters[name]


@pytest.fixture
def redis(monkeypatch) -> FakeRedis:
    fake = FakeRedis()
    monkeypatch.setattr(locks, "redis_client", lambda: fake)
    return fake


def test_beat_runs_reconcile_every_interval_and_drops_stale_runs():
    entry = beat_schedule(2.0)["reconcile"]

    assert entry["task"] == "console.tasks.reconcile"
    assert entry["schedule"] == 2.0
    assert entry["options"]["expires"] == 2.0
    assert beat_schedule(settings.SLUICE_RECONCILE_INTERVAL) == settings.CELERY_BEAT_SCHEDULE


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
    assert redis.held == set()  # released
    assert redis.ttls == {"sluice:lock:reconcile": tasks.reconcile_lock_ttl()}
    assert LoopFence.objects.get(name="reconcile").token == 1, "its writes fenced by its token"
    tasks.reconcile()
    assert LoopFence.objects.get(name="reconcile").token == 2


@pytest.mark.django_db
def test_reconcile_task_skips_while_another_pass_runs(redis, runtime):
    redis.held.add("sluice:lock:reconcile")
    runtime.heartbeat("w1")

    assert tasks.reconcile() is None
    assert not Worker.objects.exists()


@pytest.mark.django_db
def test_reconcile_task_skips_when_the_runtime_is_unreachable(redis, runtime):
    runtime.unavailable = ConnectionError("redis is down")

    assert tasks.reconcile() is None
    assert redis.held == set()
