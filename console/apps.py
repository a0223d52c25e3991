"""The console Django app."""

from __future__ import annotations

from django.apps import AppConfig
from django.db.models.signals import post_migrate


class ConsoleConfig(AppConfig):
    name = "console"
    verbose_name = "Sluice"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        # Registers the system checks, the test hook that resets the cached runtime and the
        # audit trail's sign-in signal receivers.
        from console import audit, checks, runtime  # noqa: F401

        post_migrate.connect(sync_role_groups, sender=self, dispatch_uid="sluice_sync_roles")


def sync_role_groups(sender, using: str = "default", **kwargs) -> None:
    """After ``migrate``: the role groups get exactly the permissions the code gives them.

    A signal, not a data migration: permissions only exist once post_migrate has created
    them, and a role changed in code reaches every database at its next migrate.
    """
    from console.permissions import sync_roles

    sync_roles(using=using)
