"""Secrets at rest: the console's :class:`~pipelines.spec.secrets.SecretBox` and spec helpers.

Revisions store specs whose secrets are encrypted (``"enc:v1:<token>"``) with the keys in
``SLUICE_SECRETS_KEY`` (comma-separated; the first encrypts, all decrypt). Unset, a key is
derived from ``SECRET_KEY`` (system check ``console.W003`` with ``check --deploy``). The
runtime builds the same box from its environment (:func:`secret_box_from_env`).
"""

from __future__ import annotations

import functools
from collections.abc import Mapping
from typing import Any

from django.conf import settings
from django.core.signals import setting_changed
from django.dispatch import receiver

from pipelines.spec.secrets import (
    SecretBox,
    SecretDecryptionError,
    SecretsKeyError,
    decrypt_secrets,
    encrypt_secrets,
    is_encrypted,
    secret_values,
)

__all__ = [
    "SecretDecryptionError",
    "SecretsKeyError",
    "decrypt_spec",
    "encrypt_spec",
    "plain_secret_values",
    "secret_box",
]


@functools.cache
def secret_box() -> SecretBox:
    """The process-wide box (built on first use; raises :class:`SecretsKeyError`)."""
    return SecretBox.from_config(settings.SLUICE_SECRETS_KEY, settings.SECRET_KEY)


def encrypt_spec(spec: Mapping[str, Any]) -> dict[str, Any]:
    """``spec`` as a revision stores it: every secret encrypted (already encrypted kept)."""
    return encrypt_secrets(spec, secret_box().encrypt)


def decrypt_spec(spec: Mapping[str, Any]) -> dict[str, Any]:
    """``spec`` with its secrets in plaintext (plaintext ones read as they are)."""
    return decrypt_secrets(spec, secret_box().decrypt)


def plain_secret_values(spec: Mapping[str, Any] | None) -> list[str]:
    """The plaintext values of the secrets set in a stored ``spec``, for masking.

    Never raises: a secret that cannot be decrypted is left out (nothing to mask there:
    no process could have used it).
    """
    if not isinstance(spec, Mapping):
        return []
    try:
        return secret_values(decrypt_spec(spec))
    except (SecretDecryptionError, SecretsKeyError):
        return [v for v in secret_values(spec) if not is_encrypted(v)]


@receiver(setting_changed)
def _forget_box_on_setting_change(setting: str, **kwargs) -> None:
    if setting in {"SLUICE_SECRETS_KEY", "SECRET_KEY"}:
        secret_box.cache_clear()
