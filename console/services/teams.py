"""Teams' memberships kept from a single sign-on's groups.

A site admin's :class:`~console.models.SignInGroupRule` rows say which group gives which role
in which team. At every sign-in the identity provider's groups replace the user's
``sign-in`` memberships with what the rules give now: a group added gives its roles at once,
a group removed takes them away at the next sign-in. Memberships an admin gave by hand
(``local``) are never touched. Each change is in the audit trail (``team.roles``).
"""

from __future__ import annotations

from collections.abc import Iterable

from django.contrib.auth.models import User
from django.db import transaction

from console import permissions
from console.choices import MembershipSource
from console.models import SIGN_IN_GROUP_MAX_LENGTH, Membership, SignInGroupRule, Team
from console.services.audit_trail import record_audit

MAX_SIGN_IN_GROUPS = 1000
"""The most groups one sign-in may report; more is refused (``ValueError``)."""


def apply_sign_in_groups(
    user: User, groups: Iterable[str]
) -> tuple[set[tuple[str, str]], set[tuple[str, str]]]:
    """Give ``user`` the roles the site's rules give for ``groups`` (the identity provider's
    groups claim, as reported at this sign-in), and take away the sign-in roles no group gives
    any more. Returns ``(added, removed)``, each a set of ``(team name, role)``.

    Raises ``ValueError`` when ``groups`` is not a list of strings of at most
    :data:`SIGN_IN_GROUP_MAX_LENGTH` characters, or holds more than
    :data:`MAX_SIGN_IN_GROUPS`: nothing is changed then.
    """
    names = _checked(groups)
    with transaction.atomic():
        wanted = set(SignInGroupRule.objects.filter(group__in=names).values_list("team_id", "role"))
        held = {(m.team_id, m.role): m for m in Membership.objects.filter(user=user)}
        stale = [
            m
            for key, m in held.items()
            if m.source == MembershipSource.SIGN_IN and key not in wanted
        ]
        fresh = sorted(wanted - set(held))
        Membership.objects.filter(pk__in=[m.pk for m in stale]).delete()
        Membership.objects.bulk_create(
            Membership(user=user, team_id=team, role=role, source=MembershipSource.SIGN_IN)
            for team, role in fresh
        )
        team_names = dict(
            Team.objects.filter(
                pk__in={m.team_id for m in stale} | {t for t, _ in fresh}
            ).values_list("pk", "name")
        )
        added = {(team_names[team], role) for team, role in fresh}
        removed = {(team_names[m.team_id], m.role) for m in stale}
        if added or removed:
            record_audit(
                action="team.roles",
                user=user,
                object_type="user",
                object_id=user.get_username(),
                changes={
                    "added": sorted(f"{role} in {team}" for team, role in added),
                    "removed": sorted(f"{role} in {team}" for team, role in removed),
                    "via": "sign-in groups",
                },
            )
    permissions.forget_cached_roles(user)
    return added, removed


def _checked(groups: Iterable[str]) -> list[str]:
    if isinstance(groups, str | bytes) or not isinstance(groups, Iterable):
        raise ValueError("the groups claim must be a list of strings")
    names = list(groups)
    if len(names) > MAX_SIGN_IN_GROUPS:
        raise ValueError(f"the groups claim has {len(names)} groups; at most {MAX_SIGN_IN_GROUPS}")
    for index, name in enumerate(names):
        if not isinstance(name, str):
            raise ValueError(f"groups[{index}] is not a string")
        if len(name) > SIGN_IN_GROUP_MAX_LENGTH:
            raise ValueError(
                f"groups[{index}] is longer than {SIGN_IN_GROUP_MAX_LENGTH} characters"
            )
    return names
