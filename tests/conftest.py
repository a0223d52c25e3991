"""Session fixtures: real Redis and (for integration tests) a real Kafka broker."""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.support.processes import REPO_ROOT, start_kafka, start_postgres, start_redis

os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")


@pytest.fixture(scope="session")
def artifacts_dir() -> Path:
    """Logs of the services tests start, kept after the run for diagnosis."""
    path = Path(os.environ.get("SLUICE_TEST_ARTIFACTS", REPO_ROOT / "test-artifacts"))
    path.mkdir(parents=True, exist_ok=True)
    return path


@pytest.fixture(scope="session")
def redis_url(tmp_path_factory: pytest.TempPathFactory, artifacts_dir: Path) -> Iterator[str]:
    """A real redis-server on a free loopback port, for the whole session."""
    service, url = start_redis(tmp_path_factory.mktemp("redis"), artifacts_dir)
    try:
        yield url
    finally:
        service.stop()


@pytest.fixture(scope="session")
def kafka_bootstrap(tmp_path_factory: pytest.TempPathFactory, artifacts_dir: Path) -> Iterator[str]:
    """A real single-node KRaft Kafka broker on free loopback ports, for the whole session."""
    service, bootstrap = start_kafka(tmp_path_factory.mktemp("kafka"), artifacts_dir)
    try:
        yield bootstrap
    finally:
        service.stop()


@pytest.fixture(scope="session")
def postgres_url(artifacts_dir: Path) -> Iterator[str]:
    """A throwaway PostgreSQL (scripts/postgres.sh) on a free loopback port: superuser
    ``sluice``, trust authentication, database ``postgres``; removed after the session."""
    data_dir = Path(tempfile.mkdtemp(prefix="sluice-pg-"))  # reachable by the postgres user
    try:
        service, url = start_postgres(data_dir, artifacts_dir)
        try:
            yield url
        finally:
            service.stop()
    finally:
        shutil.rmtree(data_dir, ignore_errors=True)
