"""The Celery application: ``celery -A console worker`` and ``celery -A console beat``.

Configuration comes from Django settings (``CELERY_*``); the periodic tasks are
in :mod:`console.schedule`.
"""

from __future__ import annotations

import gc
import os
from typing import Any

from celery import Celery
from celery.signals import worker_init

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "console.settings")

app = Celery("console")
app.config_from_object("django.conf:settings", namespace="CELERY")
app.autodiscover_tasks()


@worker_init.connect
def freeze_the_startup_heap(**_: Any) -> None:
    """Move every object alive once the worker has started (Django, its apps, the libraries:
    hundreds of thousands) out of the cyclic garbage collector's sight, before the pool forks
    its processes, which inherit it. A full collection then scans only what the tasks made:
    at 5,000 channels each one had taken 150-340 ms of a control-loop pass, every tenth pass
    or so (``make bench-control``). Those objects are never freed before the process exits."""
    gc.collect()
    gc.freeze()
