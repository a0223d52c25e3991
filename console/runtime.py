"""The one accessor for the runtime adapter the console talks to.

``get_runtime()`` builds the class named by ``settings.SLUICE_RUNTIME`` once,
with ``redis_url=settings.REDIS_URL`` and ``prefix=settings.SLUICE_REDIS_PREFIX`` (and
``group=settings.SLUICE_RUNTIME_GROUP``, the runtime's Kafka group, when membership is on),
and caches it. Tests swap in a fake with
``set_runtime(fake)`` and restore the configured one with ``set_runtime(None)``;
``override_settings`` of either setting also drops the cached instance.
"""

from __future__ import annotations

import inspect
import threading
from typing import Any

from django.conf import settings
from django.core.signals import setting_changed
from django.dispatch import receiver
from django.utils.module_loading import import_string

from runtime_adapter.base import RuntimeAdapter

_lock = threading.Lock()
_runtime: RuntimeAdapter | None = None


def get_runtime() -> RuntimeAdapter:
    """The process-wide runtime adapter (built on first use)."""
    global _runtime
    if _runtime is None:
        with _lock:
            if _runtime is None:
                runtime_class = import_string(settings.SLUICE_RUNTIME)
                options: dict[str, Any] = {
                    "redis_url": settings.REDIS_URL,
                    "prefix": settings.SLUICE_REDIS_PREFIX,
                }
                if settings.SLUICE_RUNTIME_GROUP is not None and takes_group(runtime_class):
                    options["group"] = settings.SLUICE_RUNTIME_GROUP
                _runtime = runtime_class(**options)
    return _runtime


def takes_group(runtime_class: type) -> bool:
    """Whether a runtime adapter's class is built with the runtime's Kafka group (``group``,
    as :class:`~runtime_adapter.spark.SparkRuntime` is); another runtime need not be."""
    return "group" in inspect.signature(runtime_class).parameters


def set_runtime(runtime: RuntimeAdapter | None) -> None:
    """Use ``runtime`` from now on; ``None`` rebuilds the configured one on next use."""
    global _runtime
    with _lock:
        _runtime = runtime


@receiver(setting_changed)
def _forget_runtime_on_setting_change(setting: str, **kwargs) -> None:
    if setting in {"SLUICE_RUNTIME", "REDIS_URL", "SLUICE_REDIS_PREFIX", "SLUICE_RUNTIME_GROUP"}:
        set_runtime(None)
