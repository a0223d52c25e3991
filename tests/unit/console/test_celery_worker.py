"""The Celery worker's start: the heap it starts with is frozen out of the garbage
collector's sight (its full collections had taken 150-340 ms of a control-loop pass)."""

from __future__ import annotations

import gc

from celery.signals import worker_init

from console.celery import app, freeze_the_startup_heap


def test_the_heap_at_the_workers_start_is_frozen_before_the_pool_forks() -> None:
    assert freeze_the_startup_heap in [ref() for _, ref in worker_init.receivers]
    gc.unfreeze()
    try:
        worker_init.send(sender=app)
        assert gc.get_freeze_count() > 10_000  # Django, its apps, the libraries
    finally:
        gc.unfreeze()
