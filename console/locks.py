"""Short-lived Redis locks that let periodic work skip instead of overlapping."""

from __future__ import annotations

import functools
from collections.abc import Iterator
from contextlib import contextmanager, suppress

import redis
from django.conf import settings
from django.core.signals import setting_changed
from django.dispatch import receiver


@functools.cache
def redis_client(timeout: float = 5.0) -> redis.Redis:
    """The console's own Redis connection (``settings.REDIS_URL``), one per ``timeout``
    (seconds to connect and per command; request paths that must not hang ask for less)."""
    return redis.Redis.from_url(
        settings.REDIS_URL, socket_timeout=timeout, socket_connect_timeout=timeout
    )


@contextmanager
def single_flight(name: str, ttl: float) -> Iterator[bool]:
    """Try once to take the lock ``sluice:lock:<name>``; yield whether it was taken.

    The lock expires after ``ttl`` seconds, so a crashed holder blocks others for at
    most that long. Raises :class:`redis.exceptions.RedisError` when Redis is down.
    """
    lock = redis_client().lock(f"sluice:lock:{name}", timeout=ttl, blocking=False)
    acquired = lock.acquire(blocking=False)
    try:
        yield acquired
    finally:
        if acquired:
            # Expired while we worked: someone else may hold it now; nothing to release.
            with suppress(redis.exceptions.LockError):
                lock.release()


def next_token(name: str) -> int:
    """A fencing token for the holder of ``sluice:lock:<name>``: one more than any before it
    (a Redis counter). Raises :class:`redis.exceptions.RedisError` when Redis is down."""
    return int(redis_client().incr(f"sluice:lock:{name}:token"))


@receiver(setting_changed)
def _forget_client_on_setting_change(setting: str, **kwargs) -> None:
    if setting == "REDIS_URL":
        redis_client.cache_clear()
