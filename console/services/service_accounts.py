"""Service accounts: a team's tokens for automation (a CI job, the ``sluice`` CLI, Terraform).

A team admin issues one with a name, one role in the team and an expiry; the token
(``sls_`` + 32 random bytes) is shown once, and only its SHA-256 hash and first characters
are kept, as for ingestion tokens (high-entropy secrets: a fast hash is enough). Each account
acts through a Django user of its own (``svc.<team>.<name>``, no password) that holds the
role in the team, so the API's checks, scoping and audit trail treat it as any member.
Revoking deletes that user: the token stops working at once. Issuing and revoking are in the
audit trail (``team.service_account.issue`` / ``.revoke``).
"""

from __future__ import annotations

import hmac
import secrets
from dataclasses import dataclass
from datetime import timedelta

from django.contrib.auth.models import User
from django.core.exceptions import ValidationError
from django.db import transaction
from django.utils import timezone

from console import permissions
from console.choices import MembershipSource
from console.models import Membership, ServiceAccount, Team, team_name_validator
from console.services.audit_trail import record_audit
from console.services.ingest.tokens import hash_token  # the same SHA-256 of a token

TOKEN_PREFIX = "sls_"
_SHOWN_CHARS = len(TOKEN_PREFIX) + 4
MAX_LIFETIME_DAYS = 366
"""The longest a token lives: automation renews it at least once a year."""
MAX_PER_TEAM = 100
LAST_USED_EVERY = timedelta(minutes=1)
"""``last_used_at`` is written at most this often per account (not a write per request)."""


@dataclass(frozen=True)
class IssuedAccount:
    """An account just issued: ``token`` is shown to the caller this once and never again."""

    account: ServiceAccount
    token: str


def issue(
    team: Team, *, name: str, role: str, expires_in_days: int, by: User | None = None
) -> IssuedAccount:
    """Create a service account of ``team`` with ``role`` for ``expires_in_days`` days.

    Raises :class:`ValidationError` (by field) for a bad or taken name, an unknown role, a
    lifetime outside 1..:data:`MAX_LIFETIME_DAYS` days, or a team that has
    :data:`MAX_PER_TEAM` accounts already; nothing is created then."""
    errors: dict[str, list[str]] = {}
    try:
        team_name_validator(name)
    except ValidationError as exc:
        errors["name"] = list(exc.messages)
    if role not in permissions.ROLES:
        errors["role"] = [f"One of: {', '.join(permissions.ROLES)}."]
    if not 1 <= expires_in_days <= MAX_LIFETIME_DAYS:
        errors["expires_in_days"] = [f"From 1 to {MAX_LIFETIME_DAYS} days."]
    if errors:
        raise ValidationError(errors)
    token = TOKEN_PREFIX + secrets.token_urlsafe(32)
    username = f"svc.{team.name}.{name}"
    with transaction.atomic():
        Team.objects.select_for_update().get(pk=team.pk)  # one count at a time per team
        if ServiceAccount.objects.filter(team=team).count() >= MAX_PER_TEAM:
            raise ValidationError(
                {"name": [f"Team {team.name} has {MAX_PER_TEAM} service accounts: revoke one."]}
            )
        if (
            ServiceAccount.objects.filter(team=team, name=name).exists()
            or User.objects.filter(username=username).exists()
        ):
            raise ValidationError({"name": [f"Team {team.name} has a service account {name!r}."]})
        user = User(username=username, is_active=True)
        user.set_unusable_password()
        user.save()
        Membership.objects.create(
            team=team, user=user, role=role, source=MembershipSource.SERVICE_ACCOUNT
        )
        account = ServiceAccount.objects.create(
            team=team,
            name=name,
            role=role,
            user=user,
            token_hash=hash_token(token),
            token_prefix=token[:_SHOWN_CHARS],
            expires_at=timezone.now() + timedelta(days=expires_in_days),
            created_by=by,
        )
        record_audit(
            action="team.service_account.issue",
            user=by,
            object_type="service_account",
            object_id=username,
            changes={"role": role, "expires_at": account.expires_at.isoformat()},
            team_id=team.pk,
        )
    return IssuedAccount(account, token)


def revoke(account: ServiceAccount, *, by: User | None = None) -> None:
    """End the account: its token stops working at once (its user is deleted with it)."""
    username = account.user.get_username()
    team_id = account.team_id
    with transaction.atomic():
        account.user.delete()  # cascades: the account, its membership, its DRF token if any
        record_audit(
            action="team.service_account.revoke",
            user=by,
            object_type="service_account",
            object_id=username,
            team_id=team_id,
        )


def account_for_token(token: str) -> ServiceAccount | None:
    """The live account whose token ``token`` is (constant-time compare), or ``None``: unknown,
    revoked or expired."""
    if not token.startswith(TOKEN_PREFIX):
        return None
    hashed = hash_token(token)
    account = (
        ServiceAccount.objects.select_related("user", "team").filter(token_hash=hashed).first()
    )
    if account is None or not hmac.compare_digest(account.token_hash, hashed):
        return None
    now = timezone.now()
    if account.expires_at <= now or not account.user.is_active:
        return None
    if account.last_used_at is None or now - account.last_used_at >= LAST_USED_EVERY:
        ServiceAccount.objects.filter(pk=account.pk).update(last_used_at=now)
        account.last_used_at = now
    return account
