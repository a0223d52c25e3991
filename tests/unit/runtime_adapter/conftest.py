from __future__ import annotations

import uuid

import pytest

from runtime_adapter.spark import SparkRuntime
from runtime_adapter.store import RedisStore


@pytest.fixture
def prefix() -> str:
    """A key prefix of its own per test, so tests sharing one Redis never see each other."""
    return f"test-{uuid.uuid4().hex[:8]}"


@pytest.fixture
def store(redis_url: str, prefix: str) -> RedisStore:
    return RedisStore.from_url(redis_url, prefix)


@pytest.fixture
def runtime(redis_url: str, prefix: str) -> SparkRuntime:
    return SparkRuntime(redis_url, prefix)
