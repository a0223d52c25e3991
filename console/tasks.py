"""Celery tasks: thin wrappers that take ids, call a service and are safe to repeat."""

from __future__ import annotations

import dataclasses
import logging
from typing import Any

import redis
from celery import shared_task
from django.conf import settings

from console import metrics, services
from console.locks import next_token, single_flight
from console.services.discovery import collect_samples
from console.services.parked_lag import refresh_parked_lag
from console.services.run_executor import execute_runs
from runtime_adapter.base import RuntimeUnavailable

logger = logging.getLogger(__name__)


def collect_discovered() -> None:
    """Merge the events sampled for schema discovery; never fails the reconcile pass."""
    try:
        changed = collect_samples()
    except (RuntimeUnavailable, redis.RedisError):
        raise
    except Exception:  # a bad sample must not stop the control loop
        logger.exception("schema discovery: could not merge the sampled events")
        return
    for channel, version in changed.items():
        logger.info("schema discovery: %s changed shape (version %s)", channel, version)


@shared_task(name="console.tasks.refresh_lag", ignore_result=True)
def refresh_lag() -> int:
    """The stopped channels' lag from their brokers' end offsets (beat, every 10 s), one
    refresh at a time, beside the control loop; the number of tasks changed."""
    with single_flight("refresh-lag", 60.0) as acquired:
        if not acquired:
            return 0
        changed = refresh_parked_lag()
    if changed:
        logger.info("lag of stopped channels: %d tasks refreshed", changed)
    return changed


def reconcile_lock_ttl() -> float:
    """How long a reconcile pass may hold its lock: a few periods, at least 10 s."""
    return max(10.0, 5 * settings.SLUICE_RECONCILE_INTERVAL)


@shared_task(name="console.tasks.reconcile", ignore_result=True)
def reconcile() -> dict[str, Any] | None:
    """Run one reconcile pass unless another one is running.

    Returns the pass's report, or ``None`` when it skipped (lock held) or the runtime
    was unreachable; the next scheduled run is the retry.
    """
    report = None
    try:
        with single_flight("reconcile", reconcile_lock_ttl()) as acquired:
            if not acquired:
                logger.info("reconcile skipped: another pass is running")
                return None
            token = next_token("reconcile")
            with metrics.timed_reconcile():
                report = services.reconcile(token=token)
            execute_runs()
            collect_discovered()
    except (RuntimeUnavailable, redis.RedisError) as exc:  # the lock is the console's Redis
        logger.warning("reconcile skipped: runtime unavailable: %s", exc)
        if report is None:  # no pass looked: that time does not count against the workers
            services.note_runtime_unreadable()
        return None
    if report.events or report.placements:
        logger.info("reconcile: %s", report)
    return dataclasses.asdict(report)
