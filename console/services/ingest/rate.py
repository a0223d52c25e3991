"""The HTTP ingestion rate limit: a token bucket per channel in Redis, shared by all web processes.

A channel accepts ``Channel.ingest_rate_limit`` events per second (``SLUICE_INGEST_RATE_LIMIT``
when unset) with bursts of ``SLUICE_INGEST_BURST_SECONDS`` worth of that rate. Every event of
a request costs one token, valid or not, and a request takes all of its tokens or none (one
Lua script, atomic): a refused request writes nothing.

Redis down: the limit *fails open*. Ingestion keeps working without a limit (a warning is
logged, at most once a minute per process), because Kafka, not Redis, is what ingestion needs
to be durable, and producers hold a per-channel token anyway. Size limits still apply.
"""

from __future__ import annotations

import functools
import logging
import math
import time
from dataclasses import dataclass

import redis
from django.conf import settings
from django.core.signals import setting_changed
from django.dispatch import receiver

from console import locks
from console.errors import ServiceError
from console.models import Channel

logger = logging.getLogger(__name__)

# KEYS[1] the bucket; ARGV: rate (tokens/s), burst (capacity), cost. Redis's own clock, so
# web processes on different hosts agree. Returns {taken 0/1, tokens left, seconds to wait}.
_TAKE = """
local rate = tonumber(ARGV[1])
local burst = tonumber(ARGV[2])
local cost = tonumber(ARGV[3])
local clock = redis.call('TIME')
local now = tonumber(clock[1]) + tonumber(clock[2]) / 1000000
local state = redis.call('HMGET', KEYS[1], 'tokens', 'at')
local tokens = tonumber(state[1])
local at = tonumber(state[2])
if tokens == nil or at == nil then
  tokens = burst
  at = now
end
tokens = math.min(burst, tokens + math.max(0, now - at) * rate)
local taken = 0
local wait = 0
if cost <= tokens then
  tokens = tokens - cost
  taken = 1
else
  wait = (cost - tokens) / rate
end
redis.call('HSET', KEYS[1], 'tokens', tostring(tokens), 'at', tostring(now))
redis.call('PEXPIRE', KEYS[1], math.ceil(burst / rate * 1000) + 1000)
return {taken, tostring(tokens), tostring(wait)}
"""

_WARN_EVERY = 60.0
_last_warning = 0.0


class IngestRateLimited(ServiceError):
    """The request's events are over the channel's rate limit; nothing was written."""

    def __init__(self, message: str, *, retry_after: float) -> None:
        super().__init__(message)
        self.retry_after = retry_after


class IngestOverBurst(ServiceError):
    """The request holds more events than the channel's burst: it can never be accepted whole."""


@dataclass(frozen=True)
class RateLimit:
    """A channel's limit: ``rate`` events/s, at most ``burst`` at once."""

    rate: int
    burst: int


def channel_rate_limit(channel: Channel) -> RateLimit | None:
    """The channel's limit; ``None`` when ingestion is not limited."""
    rate = channel.ingest_rate_limit or settings.SLUICE_INGEST_RATE_LIMIT
    if not rate:
        return None
    burst = max(1, math.ceil(rate * settings.SLUICE_INGEST_BURST_SECONDS))
    return RateLimit(rate=rate, burst=burst)


def _client() -> redis.Redis:
    # Short timeouts: a hung Redis must not hold up every ingestion request (fail open fast).
    return locks.redis_client(timeout=0.5)


@functools.cache
def _script(client: redis.Redis):
    return client.register_script(_TAKE)


def bucket_key(channel: Channel) -> str:
    return f"{settings.SLUICE_REDIS_PREFIX}:ingest:rate:{channel.name}"


def take(channel: Channel, cost: int) -> None:
    """Take ``cost`` tokens from the channel's bucket, all or none.

    Raises :class:`IngestOverBurst` when ``cost`` is more than the burst (retrying cannot help)
    and :class:`IngestRateLimited` (with ``retry_after`` seconds) when the bucket holds fewer
    tokens now. Returns quietly when there is no limit or Redis cannot be reached.
    """
    limit = channel_rate_limit(channel)
    if limit is None or cost <= 0:
        return
    if cost > limit.burst:
        raise IngestOverBurst(
            f"{cost} events in one request; channel {channel.name!r} accepts {limit.rate} "
            f"events/s in bursts of at most {limit.burst}: send smaller batches"
        )
    client = _client()
    try:
        taken, left, wait = _script(client)(
            keys=[bucket_key(channel)], args=[limit.rate, limit.burst, cost], client=client
        )
    except redis.exceptions.RedisError as exc:
        _warn_unlimited(exc)
        return
    if int(taken):
        return
    retry_after = float(wait)
    raise IngestRateLimited(
        f"channel {channel.name!r} accepts {limit.rate} events/s (bursts of {limit.burst}); "
        f"this request of {cost} events is over the {int(float(left))} left now: nothing was "
        f"written, retry in {retry_after:.2f} s",
        retry_after=retry_after,
    )


def _warn_unlimited(exc: Exception) -> None:
    global _last_warning
    now = time.monotonic()
    if now - _last_warning >= _WARN_EVERY:
        _last_warning = now
        logger.warning("ingestion rate limit not enforced: Redis is unavailable (%s)", exc)


@receiver(setting_changed)
def _forget_script_on_setting_change(setting: str, **kwargs) -> None:
    if setting == "REDIS_URL":  # the client is locks.redis_client's, which forgets it too
        _script.cache_clear()
