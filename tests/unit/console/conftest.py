from __future__ import annotations

import copy
import time
import uuid
from datetime import UTC, datetime
from pathlib import Path

import pytest
from rest_framework.authtoken.models import Token
from rest_framework.test import APIClient

from console import services
from console.choices import WorkerState
from console.models import Worker
from console.permissions import ROLES, grant_role
from console.runtime import set_runtime
from console.services.ingest.kafka import set_ingest_kafka
from runtime_adapter.base import WorkerInfo
from runtime_adapter.spark import SparkRuntime
from tests.unit.console.fake_ingest import FakeIngestKafka
from tests.unit.console.fakes import FakeRuntime

#: A spec the real ``pipelines.spec`` accepts.
VALID_SPEC = {
    "source": {
        "type": "kafka",
        "config": {"bootstrap_servers": "localhost:9092", "topics": ["orders"]},
    },
    "transforms": [
        {"type": "filter", "config": {"pattern": {"data": {"amount": [{"numeric": [">", 100]}]}}}}
    ],
    "sink": {
        "type": "kafka",
        "config": {"bootstrap_servers": "localhost:9092", "topic": "big-orders"},
    },
}


@pytest.fixture
def spec() -> dict:
    return copy.deepcopy(VALID_SPEC)


@pytest.fixture(autouse=True)
def no_runtime_group(settings) -> None:
    """A real runtime built from the settings here (tests that give it a Redis) joins no
    Kafka group: the console's tests have no broker, and the group's placement is tested
    with one (tests/unit/runtime_adapter/test_group_placement.py, tests/faults)."""
    settings.SLUICE_RUNTIME_GROUP = None


@pytest.fixture(autouse=True)
def runtime() -> FakeRuntime:
    """Every console test talks to a fresh in-memory runtime, never to Redis."""
    fake = FakeRuntime()
    set_runtime(fake)
    yield fake
    set_runtime(None)


@pytest.fixture(autouse=True)
def ingest_kafka() -> FakeIngestKafka:
    """Every console test writes ingested events to an in-memory Kafka, never a real one."""
    fake = FakeIngestKafka()
    set_ingest_kafka(fake)
    yield fake
    set_ingest_kafka(None)


@pytest.fixture
def user(django_user_model):
    """A user in every role (viewer, operator, editor), not a superuser: the API tests
    exercise the whole API; tests/unit/console/test_roles.py checks each role alone."""
    alice = django_user_model.objects.create_user("alice", password="s3cret-pass")
    for role in ROLES:
        grant_role(alice, role)
    return alice


@pytest.fixture
def api(user) -> APIClient:
    """A client authenticated with a DRF token, as scripts would be."""
    client = APIClient()
    token = Token.objects.create(user=user)
    client.credentials(HTTP_AUTHORIZATION=f"Token {token.key}")
    return client


@pytest.fixture
def anon() -> APIClient:
    return APIClient()


@pytest.fixture(autouse=True)
def fast_password_hashing(settings):
    """Real hashers cost ~0.3 s per password; these tests are not about hashing."""
    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]


@pytest.fixture
def dead_worker(runtime: FakeRuntime):
    """Register a worker the control loop already holds DEAD (its heartbeat, sent at ``at``,
    is the one the loop last saw and stopped seeing change): liveness is the loop's own
    observation, so a heartbeat's age alone makes nobody dead."""

    def register(worker_id: str, at: float | None = None) -> Worker:
        runtime.heartbeat(worker_id, at=at)
        info = runtime.worker_infos[worker_id]
        return Worker.objects.create(
            worker_id=worker_id,
            host=info.host,
            pid=info.pid,
            started_at=datetime.fromtimestamp(info.started_at, tz=UTC),
            last_heartbeat=datetime.fromtimestamp(info.last_heartbeat, tz=UTC),
            state=WorkerState.DEAD,
        )

    return register


@pytest.fixture
def spark_runtime(redis_url: str, tmp_path: Path, runtime):
    """The real Spark runtime instead of the in-memory one (``runtime`` installs that first)."""
    real = SparkRuntime(
        redis_url, f"test-{uuid.uuid4().hex[:8]}", checkpoint_root=tmp_path / "checkpoints"
    )
    set_runtime(real)
    yield real
    set_runtime(None)


class Clock:
    """The console's clock (passes run at ``now``) and the workers' heartbeats, written to
    the store as the runtime workers write them."""

    def __init__(self, runtime: SparkRuntime) -> None:
        self.runtime = runtime
        self.now = time.time()

    def heartbeat(self, *worker_ids: str, skew: float = 0.0) -> None:
        for worker_id in worker_ids:
            self.runtime.store.heartbeat(
                WorkerInfo(worker_id, f"{worker_id}.example", 1, self.now - 60, self.now + skew)
            )

    def reconcile(self, advance: float = 1.0):
        self.now += advance
        return services.reconcile(runtime=self.runtime, now=self.now)


@pytest.fixture
def clock(spark_runtime) -> Clock:
    return Clock(spark_runtime)
