"""Short-lived Redis locks that let periodic work skip instead of overlapping."""

from __future__ import annotations

import functools
import logging
import os
import socket
import uuid
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from typing import cast

import redis
from django.conf import settings
from django.core.signals import setting_changed
from django.dispatch import receiver

logger = logging.getLogger(__name__)


@functools.cache
def redis_client(timeout: float = 5.0) -> redis.Redis:
    """The console's own Redis connection (``settings.REDIS_URL``), one per ``timeout``
    (seconds to connect and per command; request paths that must not hang ask for less)."""
    return redis.Redis.from_url(
        settings.REDIS_URL, socket_timeout=timeout, socket_connect_timeout=timeout
    )


_RELEASE_IF_HELD_BY = """
if redis.call('get', KEYS[1]) == ARGV[1] then return redis.call('del', KEYS[1]) end
return 0
"""


@functools.cache
def _this_process_space() -> str:
    """The host and PID namespace this process's PIDs mean something in: two processes with
    the same space can tell whether the other is alive (``os.kill(pid, 0)``)."""
    try:
        namespace = os.readlink("/proc/self/ns/pid")
    except OSError:
        namespace = "pid:[?]"
    return f"{socket.gethostname()}|{namespace}"


def holder() -> str:
    """A lock token that names its holder: ``<host>|<pid namespace>|<pid>|<random>``."""
    return f"{_this_process_space()}|{os.getpid()}|{uuid.uuid4().hex}"


def held_by_the_dead(token: bytes | str | None) -> bool:
    """Whether a lock's token (:func:`holder`) names a process of this host and PID
    namespace that no longer exists. Anything else (another host, a live process, a token
    of another form, a reused PID) counts as alive: the lock then waits for its expiry."""
    if token is None:
        return False
    text = token.decode(errors="replace") if isinstance(token, bytes) else token
    space, _, rest = text.rpartition("|")[0].rpartition("|")
    if space != _this_process_space() or not rest.isdigit():
        return False
    pid = int(rest)
    if pid == os.getpid():
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    except PermissionError:  # alive, another user's
        return False
    return False


@contextmanager
def single_flight(name: str, ttl: float) -> Iterator[bool]:
    """Try once to take the lock ``sluice:lock:<name>``; yield whether it was taken.

    A holder that died without releasing it (a Celery pool process killed by a signal:
    its ``finally`` never ran) is released at once when it was a process of this host; one
    on another host blocks others until the lock expires, at most ``ttl`` seconds. Raises
    :class:`redis.exceptions.RedisError` when Redis is down.
    """
    client = redis_client()
    key = f"sluice:lock:{name}"
    lock = client.lock(key, timeout=ttl, blocking=False)
    acquired = lock.acquire(blocking=False, token=holder())
    if not acquired:
        token = cast("bytes | None", client.get(key))
        if (
            token is not None
            and held_by_the_dead(token)
            and client.eval(_RELEASE_IF_HELD_BY, 1, key, token)
        ):
            logger.warning("lock %s: its holder died holding it (%s); taken over", name, token)
            acquired = lock.acquire(blocking=False, token=holder())
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
