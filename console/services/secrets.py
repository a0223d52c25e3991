"""Secrets at rest in saved revisions: encrypt the plaintext ones, re-encrypt after a key
rotation (``manage.py encrypt_secrets``)."""

from __future__ import annotations

from dataclasses import dataclass

from django.db import transaction

from console.crypto import secret_box
from console.models import Revision
from pipelines.spec.secrets import (
    encrypt_secrets,
    encrypted_secret_paths,
    plaintext_secret_paths,
    rotate_secrets,
)


@dataclass(frozen=True)
class EncryptionReport:
    """What :func:`encrypt_stored_secrets` found and did."""

    revisions: int
    """Revisions looked at."""
    changed: int
    """Revisions rewritten (or that would be, with ``dry_run``)."""
    plaintext: int
    """Plaintext secrets found (now encrypted)."""
    rotated: int
    """Encrypted secrets re-encrypted with the first key (``rotate`` only)."""


def encrypt_stored_secrets(*, rotate: bool = False, dry_run: bool = False) -> EncryptionReport:
    """Encrypt every plaintext secret of every saved revision, with the first key of
    ``SLUICE_SECRETS_KEY``; with ``rotate``, re-encrypt the encrypted ones with it too.

    Idempotent: a second run changes nothing (without ``rotate``). A revision's spec is
    rewritten in place: it means the same, only its secrets' stored form changes. Raises
    :class:`pipelines.spec.secrets.SecretDecryptionError` (nothing more is changed) when
    rotating a secret that no configured key opens.
    """
    box = secret_box()
    revisions = changed = plaintext = rotated = 0
    with transaction.atomic():
        for revision in Revision.objects.select_for_update().only("pk", "spec").iterator():
            revisions += 1
            found = len(plaintext_secret_paths(revision.spec))
            encrypted = len(encrypted_secret_paths(revision.spec)) if rotate else 0
            if not found and not encrypted:
                continue
            if rotate:
                spec = rotate_secrets(revision.spec, box.rotate)
            else:
                spec = encrypt_secrets(revision.spec, box.encrypt)
            changed += 1
            plaintext += found
            rotated += encrypted
            if not dry_run:
                Revision.objects.filter(pk=revision.pk).update(spec=spec)
    return EncryptionReport(revisions, changed, plaintext, rotated)
