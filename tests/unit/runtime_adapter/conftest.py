from __future__ import annotations

import uuid
from dataclasses import replace
from pathlib import Path

import pytest

from runtime_adapter.config import RuntimeConfig
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
def runtime(redis_url: str, prefix: str, tmp_path: Path) -> SparkRuntime:
    """Its checkpoint root is the test's own: deleting a connector removes its checkpoint."""
    return SparkRuntime(redis_url, prefix, checkpoint_root=tmp_path / "checkpoints")


@pytest.fixture
def worker_config(redis_url: str, prefix: str, tmp_path: Path):
    """A runtime worker's config on the test Redis and a var/ of its own; keyword arguments
    override fields (``worker_id`` defaults to ``w1``; no spare driver unless asked for: the
    tests count drivers)."""

    def make(**overrides) -> RuntimeConfig:
        fields = {"worker_id": "w1", "spare_drivers": 0, **overrides}
        return replace(
            RuntimeConfig.from_env(),
            redis_url=redis_url,
            key_prefix=prefix,
            var_dir=tmp_path,
            **fields,
        )

    return make
