from __future__ import annotations

from console.runtime import get_runtime, set_runtime
from runtime_adapter.base import RuntimeAdapter
from tests.unit.console.fakes import FakeRuntime


class Recorder:
    def __init__(self, redis_url: str, prefix: str) -> None:
        self.redis_url = redis_url
        self.prefix = prefix


def test_the_configured_runtime_is_built_once_with_redis_url_and_prefix(settings):
    settings.SLUICE_RUNTIME = f"{__name__}.Recorder"
    settings.REDIS_URL = "redis://runtime.example:6379/3"
    settings.SLUICE_REDIS_PREFIX = "tenant-a"

    runtime = get_runtime()

    assert isinstance(runtime, Recorder)
    assert runtime.redis_url == "redis://runtime.example:6379/3"
    assert runtime.prefix == "tenant-a"
    assert get_runtime() is runtime


class GroupRecorder(Recorder):
    def __init__(self, redis_url: str, prefix: str, group: object = None) -> None:
        super().__init__(redis_url, prefix)
        self.group = group


def test_a_runtime_that_takes_the_runtime_group_is_given_it(settings):
    settings.SLUICE_RUNTIME = f"{__name__}.GroupRecorder"
    group = object()
    settings.SLUICE_RUNTIME_GROUP = group
    try:
        assert get_runtime().group is group  # type: ignore[attr-defined]
    finally:
        set_runtime(None)


def test_a_test_can_swap_the_runtime(settings, runtime):
    settings.SLUICE_RUNTIME = f"{__name__}.Recorder"
    replacement = object()

    set_runtime(replacement)

    assert get_runtime() is replacement


def test_the_fake_runtime_the_console_tests_use_is_a_runtime_adapter():
    """Every call of the protocol, its ``*_many`` calls included, so a service that calls one
    is tested against the fake as it runs against the real runtime."""
    assert isinstance(FakeRuntime(), RuntimeAdapter)
