"""Sluice's control plane: the Django project and app in one package.

The Celery app is imported here so that ``@shared_task`` binds to it whenever
Django starts (the standard Celery + Django layout).
"""

from console.celery import app as celery_app

__all__ = ["celery_app"]
