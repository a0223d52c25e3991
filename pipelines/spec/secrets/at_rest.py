"""Secrets encrypted at rest: :class:`SecretBox` (Fernet keys from ``SLUICE_SECRETS_KEY``, the
first encrypts, all decrypt) and the spec-wide :func:`encrypt_secrets`,
:func:`decrypt_secrets` and :func:`rotate_secrets`.
"""

from __future__ import annotations

import base64
import hashlib
import os
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from cryptography.fernet import Fernet, InvalidToken, MultiFernet

from pipelines.spec.secrets.finding import (
    get_at,
    json_copy,
    loc_path,
    secret_locations,
    set_at,
    walk_secrets,
)

ENCRYPTED_PREFIX = "enc:v1:"
"""Starts every encrypted secret value; what follows is a Fernet token."""

SECRETS_KEY_ENV = "SLUICE_SECRETS_KEY"
"""Comma-separated Fernet keys: the first encrypts, all decrypt (list the new key first)."""

DEVELOPMENT_SECRET_KEY = "django-insecure-sluice-development-key-do-not-use-in-production"
"""The console's development ``SECRET_KEY`` (``console.settings.DEV_SECRET_KEY``), which the
runtime cannot import: with neither key set, both sides derive the same fallback key from it."""


class SecretsKeyError(ValueError):
    """``SLUICE_SECRETS_KEY`` is malformed (a key is not a Fernet key)."""


class SecretDecryptionError(ValueError):
    """An encrypted secret cannot be decrypted with any configured key."""


def is_encrypted(value: Any) -> bool:
    """Whether ``value`` is a secret as :meth:`SecretBox.encrypt` writes it."""
    return isinstance(value, str) and value.startswith(ENCRYPTED_PREFIX)


def derive_key(secret: str) -> bytes:
    """A Fernet key derived from ``secret`` (the fallback when no key is configured)."""
    digest = hashlib.sha256(b"sluice-secrets-at-rest:" + secret.encode()).digest()
    return base64.urlsafe_b64encode(digest)


class SecretBox:
    """Encrypts and decrypts secret values with a list of Fernet keys (MultiFernet).

    The first key encrypts; every key decrypts, so keys rotate by putting a new one first
    and keeping the old ones until ``manage.py encrypt_secrets --rotate`` has run.
    """

    def __init__(self, keys: Sequence[str | bytes], *, derived: bool = False) -> None:
        if not keys:
            raise SecretsKeyError(f"{SECRETS_KEY_ENV} holds no key")
        fernets = []
        for position, key in enumerate(keys, start=1):
            try:
                fernets.append(Fernet(key))
            except (ValueError, TypeError):
                raise SecretsKeyError(
                    f"{SECRETS_KEY_ENV}: key {position} is not a Fernet key (32 url-safe "
                    'base64-encoded bytes; make one with `python -c "from cryptography.fernet '
                    'import Fernet; print(Fernet.generate_key().decode())"`)'
                ) from None
        self._fernet = MultiFernet(fernets)
        self.derived = derived
        """Whether the key was derived from the secret key (no ``SLUICE_SECRETS_KEY``)."""

    @classmethod
    def from_config(cls, keys: str | None, fallback_secret: str) -> SecretBox:
        """Keys from a ``SLUICE_SECRETS_KEY`` value; unset or blank, one derived from
        ``fallback_secret`` (the console's ``SECRET_KEY``)."""
        listed = [key.strip() for key in (keys or "").split(",") if key.strip()]
        if listed:
            return cls(listed)
        return cls([derive_key(fallback_secret)], derived=True)

    def encrypt(self, value: str) -> str:
        """``value`` encrypted with the first key, tagged with :data:`ENCRYPTED_PREFIX`."""
        return ENCRYPTED_PREFIX + self._fernet.encrypt(value.encode()).decode()

    def decrypt(self, value: str) -> str:
        """The plaintext of ``value``; a value without the prefix (plaintext) as it is.

        Raises :class:`SecretDecryptionError` when no configured key opens it.
        """
        if not is_encrypted(value):
            return value
        try:
            return self._fernet.decrypt(value[len(ENCRYPTED_PREFIX) :].encode()).decode()
        except (InvalidToken, UnicodeDecodeError):
            raise SecretDecryptionError(
                f"a stored secret cannot be decrypted with the keys in {SECRETS_KEY_ENV}: "
                "the key it was encrypted with is missing (keep old keys listed after the "
                "new one while rotating)"
            ) from None

    def rotate(self, value: str) -> str:
        """``value`` encrypted with the first key (plaintext is encrypted)."""
        if not is_encrypted(value):
            return self.encrypt(value)
        try:
            token = self._fernet.rotate(value[len(ENCRYPTED_PREFIX) :].encode())
        except InvalidToken:
            return self.encrypt(self.decrypt(value))  # raises the clear error
        return ENCRYPTED_PREFIX + token.decode()


def secret_box_from_env(environ: Mapping[str, str] | None = None) -> SecretBox:
    """The :class:`SecretBox` of a process without Django settings (the runtime).

    Uses ``SLUICE_SECRETS_KEY``, else derives the key from ``SLUICE_SECRET_KEY`` or the
    development key, exactly as the console does from its ``SECRET_KEY``.
    """
    env = os.environ if environ is None else environ
    fallback = env.get("SLUICE_SECRET_KEY") or DEVELOPMENT_SECRET_KEY
    return SecretBox.from_config(env.get(SECRETS_KEY_ENV), fallback)


def encrypt_secrets(spec: Mapping[str, Any], encrypt: Callable[[str], str]) -> dict[str, Any]:
    """A copy of ``spec`` with each secret string set replaced by ``encrypt(value)``.

    Values already encrypted (:func:`is_encrypted`) are kept, so this is idempotent; values
    that are not strings are left alone (validation refuses them).
    """
    return _map_secrets(spec, lambda value: value if is_encrypted(value) else encrypt(value))


def decrypt_secrets(spec: Mapping[str, Any], decrypt: Callable[[str], str]) -> dict[str, Any]:
    """A copy of ``spec`` with each encrypted secret replaced by ``decrypt(value)``.

    Plaintext secrets (stored before encryption) are kept as they are.
    """
    return _map_secrets(spec, lambda value: decrypt(value) if is_encrypted(value) else value)


def rotate_secrets(spec: Mapping[str, Any], rotate: Callable[[str], str]) -> dict[str, Any]:
    """A copy of ``spec`` with every secret string set, encrypted or not, replaced by
    ``rotate(value)`` (:meth:`SecretBox.rotate`: re-encrypted with the first key)."""
    return _map_secrets(spec, rotate)


def plaintext_secret_paths(spec: Mapping[str, Any]) -> list[str]:
    """Paths of the secrets set in ``spec`` whose values are plaintext strings."""
    return [
        loc_path(loc)
        for loc in secret_locations(spec, walk_secrets)
        if isinstance(get_at(spec, loc), str)
        and get_at(spec, loc)
        and not is_encrypted(get_at(spec, loc))
    ]


def encrypted_secret_paths(spec: Mapping[str, Any]) -> list[str]:
    """Paths of the secrets set in ``spec`` whose values are encrypted."""
    return [
        loc_path(loc)
        for loc in secret_locations(spec, walk_secrets)
        if is_encrypted(get_at(spec, loc))
    ]


def _map_secrets(spec: Mapping[str, Any], change: Callable[[str], str]) -> dict[str, Any]:
    data = json_copy(spec)
    for loc in secret_locations(data, walk_secrets):
        value = get_at(data, loc)
        if isinstance(value, str) and value:
            set_at(data, loc, change(value))
    return data
