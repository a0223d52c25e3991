"""``manage.py ensure_admin``: make sure the superuser ``admin`` exists.

The password comes from ``SLUICE_ADMIN_PASSWORD``; without it one is generated
and printed once, when the user is created. An existing user is left untouched,
so the command is safe to run at every start.
"""

from __future__ import annotations

import os
import secrets

from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand
from django.db import transaction

USERNAME = "admin"


class Command(BaseCommand):
    help = "Create the superuser 'admin' if it does not exist (password: SLUICE_ADMIN_PASSWORD)."

    def handle(self, *args, **options) -> None:
        User = get_user_model()
        with transaction.atomic():
            if User.objects.filter(**{User.USERNAME_FIELD: USERNAME}).exists():
                self.stdout.write(f"Superuser '{USERNAME}' already exists.")
                return
            password = os.environ.get("SLUICE_ADMIN_PASSWORD")
            generated = not password
            if generated:
                password = secrets.token_urlsafe(16)
            User.objects.create_superuser(USERNAME, email="", password=password)
        if generated:
            self.stdout.write(
                f"Created superuser '{USERNAME}' with password: {password}\n"
                "This password is shown only once; set SLUICE_ADMIN_PASSWORD to choose one."
            )
        else:
            self.stdout.write(
                f"Created superuser '{USERNAME}' (password from SLUICE_ADMIN_PASSWORD)."
            )
