"""Single sign-on's side of the user records: the user an identity provider vouched for.

:mod:`console.oidc` speaks OpenID Connect with the provider and turns what it says into a
:class:`ProviderIdentity`, bounded and checked; :func:`sign_on` finds the user linked to that
identity (:class:`~console.models.SignOnIdentity`) or creates one, keeps their e-mail and
names as the provider has them, and hands their groups to the teams' sign-in rules
(:func:`console.services.teams.apply_sign_in_groups`) on every sign-in.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field

from django.contrib.auth.models import User
from django.db import transaction
from django.utils import timezone

from console.errors import SignOnRefused
from console.models import SignOnIdentity
from console.services.teams import apply_sign_in_groups

#: The name a user gets when the provider suggests none (then a suffix of its subject's hash).
FALLBACK_USERNAME = "sso"
#: Hex digits of the (issuer, subject) hash that tell two users of one suggested name apart.
SUFFIX_DIGITS = 12


@dataclass(frozen=True)
class ProviderIdentity:
    """Who the provider says signed in, already checked by :mod:`console.oidc`: every text
    fits its field (user name <= 150 characters of Django's allowed ones, or empty; e-mail a
    valid address <= 254 or empty; names <= 150), ``groups`` a list of group names."""

    issuer: str
    subject: str
    username: str = ""
    email: str = ""
    first_name: str = ""
    last_name: str = ""
    groups: list[str] = field(default_factory=list)


def sign_on(identity: ProviderIdentity) -> User:
    """The user ``identity`` is linked to, created (without a usable password) at its first
    sign-on, with e-mail and names updated to the provider's and team memberships brought in
    line with ``identity.groups``, all in one transaction.

    A user is found by the link only, never by name or e-mail. A new user is named after the
    provider's suggestion, or, when that name is taken (a local account, another provider's
    user), the suggestion with a suffix derived from the identity, so the same person always
    gets the same name. Raises :class:`SignOnRefused`, changing nothing, when the linked user
    is disabled or no name is free.
    """
    with transaction.atomic():
        link = (
            SignOnIdentity.objects.select_for_update()
            .select_related("user")
            .filter(issuer=identity.issuer, subject=identity.subject)
            .first()
        )
        if link is None:
            user = User(username=_free_username(identity))
            user.set_unusable_password()
            _copy_profile(user, identity)
            user.save()
            SignOnIdentity.objects.create(
                user=user, issuer=identity.issuer, subject=identity.subject
            )
        else:
            user = link.user
            if not user.is_active:
                raise SignOnRefused("Your Sluice account is disabled; ask an administrator.")
            if _copy_profile(user, identity):
                user.save(update_fields=["email", "first_name", "last_name"])
            link.last_sign_in_at = timezone.now()
            link.save(update_fields=["last_sign_in_at"])
        apply_sign_in_groups(user, list(identity.groups))
    return user


def _copy_profile(user: User, identity: ProviderIdentity) -> bool:
    """Set the user's e-mail and names to the provider's; whether anything changed."""
    profile = {
        "email": identity.email,
        "first_name": identity.first_name,
        "last_name": identity.last_name,
    }
    changed = False
    for name, value in profile.items():
        if getattr(user, name) != value:
            setattr(user, name, value)
            changed = True
    return changed


def _free_username(identity: ProviderIdentity) -> str:
    base = identity.username or FALLBACK_USERNAME
    digest = hashlib.sha256(f"{identity.issuer}\n{identity.subject}".encode()).hexdigest()
    suffix = "-" + digest[:SUFFIX_DIGITS]
    max_length = User._meta.get_field("username").max_length or 150
    candidates = [base] if identity.username else []
    candidates.append(base[: max_length - len(suffix)] + suffix)
    for candidate in candidates:
        if not User.objects.filter(username__iexact=candidate).exists():
            return candidate
    raise SignOnRefused(
        "No user name is free for this account; ask an administrator to rename the "
        f"account {candidates[-1]!r}."
    )
