"""The Celery beat schedule: every periodic task of the console, in one place.

Kept free of Django imports so that :mod:`console.settings` can build
``CELERY_BEAT_SCHEDULE`` from it.
"""

from __future__ import annotations

from typing import Any

LAG_REFRESH_SECONDS = 10.0
"""How often the stopped channels' lag is read from their brokers
(``console.services.parked_lag``)."""


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
        # Beside the control loop, never in it: a stopped channel's unreachable brokers must
        # not slow the passes every channel depends on.
        "refresh-stopped-lag": {
            "task": "console.tasks.refresh_lag",
            "schedule": LAG_REFRESH_SECONDS,
            "options": {"expires": LAG_REFRESH_SECONDS},
        },
    }
