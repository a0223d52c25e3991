"""The whole embedded stack as real processes: web, Celery worker and beat, a runtime worker.

Each role is started exactly as the Procfile starts it, against the session's
real Redis and Kafka, with a database and var/ of its own.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.support.stack import Stack, manage, running_stack

__all__ = ["Stack", "manage"]

pytestmark = pytest.mark.integration


@pytest.fixture(scope="session")
def stack(
    redis_url: str,
    kafka_bootstrap: str,
    tmp_path_factory: pytest.TempPathFactory,
    artifacts_dir: Path,
) -> Iterator[Stack]:
    with running_stack(
        redis_url=redis_url,
        kafka=kafka_bootstrap,
        var=tmp_path_factory.mktemp("var"),
        log_dir=artifacts_dir / "stack",
    ) as stack:
        yield stack
