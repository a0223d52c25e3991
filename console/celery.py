"""The Celery application: ``celery -A console worker`` and ``celery -A console beat``.

Configuration comes from Django settings (``CELERY_*``); the periodic tasks are
in :mod:`console.schedule`.
"""

from __future__ import annotations

import os

from celery import Celery

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "console.settings")

app = Celery("console")
app.config_from_object("django.conf:settings", namespace="CELERY")
app.autodiscover_tasks()
