"""Session fixtures: real Redis and (for integration tests) a real Kafka broker."""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from pipelines.spec.paths import FILES_ROOTS_ENV
from tests.support.processes import (
    REPO_ROOT,
    start_kafka,
    start_postgres,
    start_redis,
    start_victoriametrics,
)

os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")


@pytest.fixture(scope="session", autouse=True)
def files_root(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """pytest's base temp directory is the files root (``SLUICE_FILES_ROOTS``) of the session:
    files stages and SQLite databases of tests live in ``tmp_path`` folders, and the stacks
    tests start inherit it. Tests that need other roots set the variable themselves."""
    root = tmp_path_factory.getbasetemp()
    previous = os.environ.get(FILES_ROOTS_ENV)
    os.environ[FILES_ROOTS_ENV] = str(root)
    try:
        yield root
    finally:
        if previous is None:
            os.environ.pop(FILES_ROOTS_ENV, None)
        else:
            os.environ[FILES_ROOTS_ENV] = previous


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
def history_store(tmp_path_factory: pytest.TempPathFactory, artifacts_dir: Path) -> Iterator[str]:
    """A real VictoriaMetrics (the history store, scripts/victoriametrics.sh) on a free loopback
    port, for the whole session; it scrapes nothing (tests import their samples)."""
    service, url = start_victoriametrics(tmp_path_factory.mktemp("history"), artifacts_dir)
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
