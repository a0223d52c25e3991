"""System checks for deployment mistakes the settings cannot refuse at import time."""

from __future__ import annotations

from django.conf import settings
from django.core.checks import Warning, register


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
