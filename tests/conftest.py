"""Session fixtures: real Redis and (for integration tests) a real Kafka broker; the markers
saying which tests need a service, and ``--no-services`` (``make check``) that runs the others."""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from pipelines.spec.paths import FILES_ROOTS_ENV
from tests.support.processes import (
    NO_SERVICES_ENV,
    REPO_ROOT,
    start_kafka,
    start_postgres,
    start_redis,
    start_victoriametrics,
)
from tests.support.spark import refuse_spark_jvms

os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")

SERVICE_FIXTURES = {
    "redis_url": "redis",
    "kafka_bootstrap": "kafka",
    "postgres_url": "postgres",
    "history_store": "history_store",
    "spark": "spark",
}
"""The fixtures that start a service, and the marker a test using one (itself or through
another fixture) is given: what a test needs is read from what it asks for, never kept by hand."""

SERVICE_MARKERS = ("integration", "compose", "faults", *SERVICE_FIXTURES.values())
"""Markers of tests that need a service: ``--no-services`` leaves them out."""


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption(
        "--no-services",
        action="store_true",
        help="run only the tests that need no service (no Redis, Kafka, PostgreSQL, "
        "VictoriaMetrics or Spark JVM; make check): a test that tries to start one fails at once",
    )


def pytest_configure(config: pytest.Config) -> None:
    if config.getoption("--no-services"):
        os.environ[NO_SERVICES_ENV] = "1"
        refuse_spark_jvms()


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Mark each test with the services its fixtures start; with ``--no-services``, deselect
    every test marked as needing one (``-m`` still narrows what is left)."""
    for item in items:
        for fixture, marker in SERVICE_FIXTURES.items():
            if fixture in getattr(item, "fixturenames", ()):
                item.add_marker(marker)
    if not config.getoption("--no-services"):
        return
    kept = [item for item in items if not needs_a_service(item)]
    if len(kept) < len(items):
        config.hook.pytest_deselected(items=[item for item in items if needs_a_service(item)])
        items[:] = kept


def needs_a_service(item: pytest.Item) -> bool:
    return any(item.get_closest_marker(marker) for marker in SERVICE_MARKERS)


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
