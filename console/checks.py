"""System checks for deployment mistakes the settings cannot refuse at import time."""

from __future__ import annotations

from django.conf import settings
from django.core.checks import Error, Warning, register


@register(deploy=True)
def secret_key_is_set(app_configs, **kwargs) -> list[Warning]:
    """Warn (``console.W001``, with ``check --deploy``) while the development key is in use.

    A deploy check, like Django's own ``security.W009``: development and the test
    command run with the embedded key on purpose.
    """
    from console.settings import DEV_SECRET_KEY

    if settings.SECRET_KEY != DEV_SECRET_KEY:
        return []
    return [
        Warning(
            "SLUICE_SECRET_KEY is not set: using the insecure development key.",
            hint="Set SLUICE_SECRET_KEY to a long random string outside development.",
            id="console.W001",
        )
    ]


@register(deploy=True)
def trusted_origins_use_https(app_configs, **kwargs) -> list[Warning]:
    """Warn (``console.W002``) about plain-http CSRF trusted origins while ``SLUICE_HTTPS`` is on.

    With HTTPS on, browsers only reach the console over https, so an ``http://`` origin is a
    typo that makes every form and API write from that origin fail CSRF checks.
    """
    if not getattr(settings, "SLUICE_HTTPS", False):
        return []
    plain = [origin for origin in settings.CSRF_TRUSTED_ORIGINS if origin.startswith("http://")]
    if not plain:
        return []
    return [
        Warning(
            f"SLUICE_CSRF_TRUSTED_ORIGINS lists plain-http origins: {', '.join(plain)}.",
            hint="With SLUICE_HTTPS=true the console is reached over https: use https:// origins.",
            id="console.W002",
        )
    ]


@register(deploy=True)
def secrets_key_is_set(app_configs, **kwargs) -> list[Warning]:
    """Warn (``console.W003``, with ``check --deploy``) while secrets in stage configs are
    encrypted with a key derived from ``SECRET_KEY`` (``SLUICE_SECRETS_KEY`` unset).

    A deploy check like ``console.W001``, and not with ``SLUICE_DEBUG``: development runs
    with the derived key on purpose.
    """
    if settings.DEBUG or settings.SLUICE_SECRETS_KEY.strip():
        return []
    return [
        Warning(
            "SLUICE_SECRETS_KEY is not set: secrets in stage configs are encrypted with a "
            "key derived from SLUICE_SECRET_KEY.",
            hint=(
                'Set SLUICE_SECRETS_KEY to a Fernet key (python -c "from cryptography.fernet '
                'import Fernet; print(Fernet.generate_key().decode())"), then run '
                "manage.py encrypt_secrets --rotate."
            ),
            id="console.W003",
        )
    ]


@register()
def secrets_key_is_valid(app_configs, **kwargs) -> list[Error]:
    """Refuse (``console.E001``) a ``SLUICE_SECRETS_KEY`` that holds a malformed key."""
    from pipelines.spec.secrets import SecretBox, SecretsKeyError

    try:
        SecretBox.from_config(settings.SLUICE_SECRETS_KEY, settings.SECRET_KEY)
    except SecretsKeyError as exc:
        return [Error(str(exc), id="console.E001")]
    return []
