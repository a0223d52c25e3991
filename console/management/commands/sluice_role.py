"""``manage.py sluice_role``: give users roles in a team, take them away, show who has which.

    manage.py sluice_role alice operator                  # operator in the default team
    manage.py sluice_role alice viewer editor --team pay  # several roles in the team pay
    manage.py sluice_role alice operator --remove         # no longer an operator (default team)
    manage.py sluice_role bob viewer --create             # create bob first (password printed once)
    manage.py sluice_role alice                           # alice's roles, team by team
    manage.py sluice_role --list                          # every user with a role, team by team
    manage.py sluice_role alice admin --team pay --create-team  # create the team pay first

A user given a role also becomes staff, so that they can sign in to the admin too (the
admin shows and allows what their permissions allow, as the API does).
"""

from __future__ import annotations

import os
import secrets

from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand, CommandError
from django.db import transaction

from console.models import DEFAULT_TEAM, Membership, Team
from console.permissions import ROLES, grant_role, revoke_role


class Command(BaseCommand):
    help = (
        "Give a user roles (viewer, operator, editor, admin) in a team, or take them away with "
        "--remove. Without roles, show the user's roles; --list shows every user with a role."
    )

    def add_arguments(self, parser) -> None:
        parser.add_argument("username", nargs="?", help="The user to change or show.")
        parser.add_argument("roles", nargs="*", metavar="role", help=f"Roles: {', '.join(ROLES)}.")
        parser.add_argument("--remove", action="store_true", help="Take the roles away.")
        parser.add_argument(
            "--team", default=DEFAULT_TEAM, help=f"The team (default: {DEFAULT_TEAM})."
        )
        parser.add_argument(
            "--create-team", action="store_true", help="Create the team if it does not exist."
        )
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
            team = self._team(options["team"], create=options["create_team"] and bool(roles))
            for role in roles:
                if remove:
                    revoke_role(user, role, team)
                else:
                    grant_role(user, role, team)
            if roles and not remove and not user.is_staff:
                user.is_staff = True
                user.save(update_fields=["is_staff"])
        extra = " (superuser: may do everything)" if user.is_superuser else ""
        self.stdout.write(f"{user.get_username()}: roles {self._shown(user) or 'none'}{extra}")

    @staticmethod
    def _team(name: str, *, create: bool) -> Team:
        team = Team.objects.filter(name=name).first()
        if team is not None:
            return team
        if not create:
            raise CommandError(f"No team '{name}'. Add --create-team to create it.")
        team = Team(name=name)
        team.full_clean()
        team.save()
        return team

    @staticmethod
    def _shown(user) -> str:
        """``editor, viewer in default; admin in pay`` (roles in :data:`ROLES` order)."""
        held: dict[str, set[str]] = {}
        for team, role in Membership.objects.filter(user=user).values_list("team__name", "role"):
            held.setdefault(team, set()).add(role)
        return "; ".join(
            f"{', '.join(r for r in ROLES if r in roles)} in {team}"
            for team, roles in sorted(held.items())
        )

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
        users = User.objects.filter(team_memberships__isnull=False).distinct()
        for user in users.order_by(User.USERNAME_FIELD):
            self.stdout.write(f"{user.get_username()}: {self._shown(user)}")
