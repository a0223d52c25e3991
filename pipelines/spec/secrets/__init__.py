"""Secrets in channel specs: find them, hide them, and keep them across edits.

A config field holds a secret when its type is :data:`pipelines.spec.configs.base.Secret`,
which marks it ``"writeOnly": true`` in the plugin's JSON Schema. The schema is the only
source: a secret is found at any depth the schema describes (nested models, ``Optional``,
``dict[str, Secret]``, lists of models), and functions here accept specs that are not valid
(they skip what they cannot place) so they can be used on any request body.

Secrets are write-only. What leaves the console is :func:`redact`-ed: each secret that is
set (any value but ``None``) becomes :data:`SECRET_MARKER`. What comes back goes through
:func:`merge_secrets` before it is validated: a secret sent as the marker, or a secret field
left out, keeps the value stored for the same stage (same position, same type, same
binding; a bus's rule is found by its name wherever it moved); ``null`` clears an optional
secret, and a new value replaces it. So GET-then-PUT of a spec neither leaks nor loses its
secrets. Dict entries and list items are data, not
fields: leaving one out removes it, only the marker keeps it.

A stored secret is bound to where it goes (as EventBridge binds a connection's credentials to
its endpoint): each config model with secrets declares a classmethod
``secret_binding(config) -> dict[str, Any]`` naming the normalised address its secrets
authenticate to (an HTTP origin, a database, a set of Kafka brokers and the identity used
there). When the binding of the stage sent differs from the stored one, the stored secrets of
that stage are not kept: each one sent as the marker or left out is an error naming what
changed, so an editor who points a stage at another host must type the secret again and
cannot have the stored one sent there. A model that declares no binding binds its secrets to
all of its other settings (:func:`secret_binding`): forgetting to declare one fails closed.

Paths are spelled as in spec validation errors: ``source.config.password``,
``transforms[0].config.headers.Authorization``.

Secrets are stored encrypted: :func:`encrypt_secrets` replaces each secret string by
``"enc:v1:<Fernet token>"`` and :func:`decrypt_secrets` turns it back, with a
:class:`SecretBox` built from ``SLUICE_SECRETS_KEY`` (:func:`secret_box_from_env`). The
console saves encrypted specs and hands them to the runtime as they are; the driver decrypts
just before it builds the query, so neither the database nor Redis holds a plaintext secret.
Plaintext values (saved before encryption) are read as they are. What may quote a secret
(traces, logs, lifecycle reasons) goes through :func:`mask_known_secrets` or
:class:`SecretMaskingFilter`.
"""

from pipelines.spec.secrets.at_rest import (
    DEVELOPMENT_SECRET_KEY,
    ENCRYPTED_PREFIX,
    SECRETS_KEY_ENV,
    SecretBox,
    SecretDecryptionError,
    SecretsKeyError,
    decrypt_secrets,
    derive_key,
    encrypt_secrets,
    encrypted_secret_paths,
    is_encrypted,
    plaintext_secret_paths,
    rotate_secrets,
    secret_box_from_env,
)
from pipelines.spec.secrets.masking import (
    MASK,
    MASK_MIN_LENGTH,
    SecretMaskingFilter,
    install_masking_filter,
    mask_known_secrets,
)
from pipelines.spec.secrets.redaction import (
    SECRET_CHANGED_MARKER,
    SECRET_MARKER,
    config_secret_values,
    merge_secrets,
    redact,
    redact_against,
    redact_config,
    scrub,
    secret_binding,
    secret_paths,
    secret_values,
)

__all__ = [
    "DEVELOPMENT_SECRET_KEY",
    "ENCRYPTED_PREFIX",
    "MASK",
    "MASK_MIN_LENGTH",
    "SECRETS_KEY_ENV",
    "SECRET_CHANGED_MARKER",
    "SECRET_MARKER",
    "SecretBox",
    "SecretDecryptionError",
    "SecretMaskingFilter",
    "SecretsKeyError",
    "config_secret_values",
    "decrypt_secrets",
    "derive_key",
    "encrypt_secrets",
    "encrypted_secret_paths",
    "install_masking_filter",
    "is_encrypted",
    "mask_known_secrets",
    "merge_secrets",
    "plaintext_secret_paths",
    "redact",
    "redact_against",
    "redact_config",
    "rotate_secrets",
    "scrub",
    "secret_binding",
    "secret_box_from_env",
    "secret_paths",
    "secret_values",
]
