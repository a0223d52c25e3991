"""The Celery beat schedule: every periodic task of the console, in one place.

Kept free of Django imports so that :mod:`console.settings` can build
``CELERY_BEAT_SCHEDULE`` from it.
"""

from __future__ import annotations

from typing import Any


def beat_schedule(reconcile_interval: float) -> dict[str, dict[str, Any]]:
    """The periodic tasks, given the reconcile period in seconds.

    Each run ``expires`` after one period: while no Celery worker consumes the queue, the
    ticks beat keeps sending are discarded on arrival instead of running as a backlog.
    """
    return {
        "reconcile": {
            "task": "console.tasks.reconcile",
            "schedule": reconcile_interval,
            "options": {"expires": reconcile_interval},
        },
    }
