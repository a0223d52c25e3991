"""The console Django app."""

from __future__ import annotations

from django.apps import AppConfig


class ConsoleConfig(AppConfig):
    name = "console"
    verbose_name = "Sluice"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        # Registers the system checks, the test hook that resets the cached runtime and the
        # audit trail's sign-in signal receivers.
        from console import audit, checks, runtime  # noqa: F401
