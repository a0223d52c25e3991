"""``manage.py reconcile``: run one reconcile pass now (what the beat task runs)."""

from __future__ import annotations

from django.core.management.base import BaseCommand, CommandError

from console import tasks


class Command(BaseCommand):
    help = "Run one reconcile pass (skipped when another pass holds the lock)."

    def handle(self, *args, **options) -> None:
        report = tasks.reconcile()
        if report is None:
            raise CommandError("reconcile skipped: another pass is running or the runtime is down")
        self.stdout.write(", ".join(f"{key}={value}" for key, value in report.items()))
