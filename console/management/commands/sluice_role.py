"""``manage.py sluice_role``: give users roles, take them away, show who has which.

    manage.py sluice_role alice operator            # alice becomes an operator
    manage.py sluice_role alice viewer editor       # several roles at once
    manage.py sluice_role alice operator --remove   # alice is no longer an operator
    manage.py sluice_role bob viewer --create       # create bob first (password printed once)
    manage.py sluice_role alice                     # show alice's roles
    manage.py sluice_role --list                    # every user with a role

A user given a role also becomes staff, so that they can sign in to the admin too (the
admin shows and allows what their permissions allow, as the API does).
"""

from __future__ import annotations

import os
import secrets

from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand, CommandError
from django.db import transaction

from console.permissions import ROLES, grant_role, revoke_role, roles_of, sync_roles


class Command(BaseCommand):
    help = (
        "Give a user roles (viewer, operator, editor), or take them away with --remove. "
        "Without roles, show the user's roles; --list shows every user with a role."
    )

    def add_arguments(self, parser) -> None:
        parser.add_argument("username", nargs="?", help="The user to change or show.")
        parser.add_argument("roles", nargs="*", metavar="role", help=f"Roles: {', '.join(ROLES)}.")
        parser.add_argument("--remove", action="store_true", help="Take the roles away.")
        parser.add_argument(
            "--create",
            action="store_true",
            help=(
                "Create the user if missing; password from SLUICE_USER_PASSWORD, else "
                "generated and printed once."
            ),
        )
        parser.add_argument(
            "--list", dest="list_users", action="store_true", help="Show every user with a role."
        )

    def handle(self, *args, username=None, roles=(), remove=False, create=False, **options):
        sync_roles()
        if options["list_users"]:
            self._list()
            return
        if not username:
            raise CommandError("Name a user (or use --list).")
        if remove and create:
            raise CommandError("--remove and --create do not go together.")
        unknown = [role for role in roles if role not in ROLES]
        if unknown:
            raise CommandError(
                f"Unknown role(s) {', '.join(unknown)}: the roles are {', '.join(ROLES)}."
            )
        with transaction.atomic():
            user = self._user(username, create=create and bool(roles))
            for role in roles:
                if remove:
                    revoke_role(user, role)
                else:
                    grant_role(user, role)
            if roles and not remove and not user.is_staff:
                user.is_staff = True
                user.save(update_fields=["is_staff"])
        shown = ", ".join(roles_of(user)) or "none"
        extra = " (superuser: may do everything)" if user.is_superuser else ""
        self.stdout.write(f"{user.get_username()}: roles {shown}{extra}")

    def _user(self, username: str, *, create: bool):
        User = get_user_model()
        user = User.objects.filter(**{User.USERNAME_FIELD: username}).first()
        if user is not None:
            return user
        if not create:
            raise CommandError(f"No user '{username}'. Add --create to create it.")
        password = os.environ.get("SLUICE_USER_PASSWORD")
        generated = not password
        if generated:
            password = secrets.token_urlsafe(16)
        user = User.objects.create_user(username, password=password)
        if generated:
            self.stdout.write(
                f"Created user '{username}' with password: {password}\n"
                "This password is shown only once; it can be changed at /admin/password_change/."
            )
        else:
            self.stdout.write(f"Created user '{username}' (password from SLUICE_USER_PASSWORD).")
        return user

    def _list(self) -> None:
        User = get_user_model()
        users = (
            User.objects.filter(groups__name__in=ROLES)
            .distinct()
            .order_by(User.USERNAME_FIELD)
            .prefetch_related("groups")
        )
        for user in users:
            names = {group.name for group in user.groups.all()}
            self.stdout.write(f"{user.get_username()}: {', '.join(r for r in ROLES if r in names)}")
