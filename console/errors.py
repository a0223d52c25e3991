"""Errors the services and the selectors raise on purpose; the API maps each to an HTTP
status (:mod:`console.api.exceptions`), the admin to a message.

A module of its own below both layers, so a selector raises them without importing the
services. :func:`runtime_errors` is the one place the runtime adapter's errors
(:mod:`runtime_adapter.base`) become the console's own.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator
from contextlib import contextmanager

from runtime_adapter import base as runtime_base

logger = logging.getLogger(__name__)


class ServiceError(Exception):
    """Base class of every error a service or a selector raises on purpose."""


class InvalidSpec(ServiceError):
    """The channel spec does not validate; nothing was saved.

    ``errors`` maps a path inside the spec (``"transforms[0].config.pattern"``,
    ``""`` for the spec as a whole) to its messages.
    """

    def __init__(self, errors: dict[str, list[str]]) -> None:
        super().__init__("invalid channel spec")
        self.errors = errors


class RuntimeUnavailable(ServiceError):
    """The runtime could not be reached; the request changed nothing."""


class InvalidTransition(ServiceError):
    """The channel cannot make this change from where it is (for example pause a STOPPED
    channel); nothing changed. The message says why."""


class QuotaExceeded(ServiceError):
    """The team has reached one of its quotas (:mod:`console.services.quotas`); the request
    changed nothing. ``quota`` names the :class:`~console.models.Team` field (``max_channels``,
    ``max_running_channels``, ``max_realtime_cores``), ``used`` is what the team holds now."""

    UNITS = {
        "max_channels": "channels",
        "max_running_channels": "running channels",
        "max_realtime_cores": "real-time cores",
    }

    def __init__(self, team: str, quota: str, limit: int, used: int, needed: int = 1) -> None:
        what = self.UNITS.get(quota, quota)
        message = f"Team {team} has reached its quota of {limit} {what} ({quota})."
        if quota == "max_realtime_cores":
            message = (
                f"Team {team} has reached its quota of {limit} {what} ({quota}): it holds "
                f"{used} and this channel needs {needed} (one per source partition)."
            )
        super().__init__(message)
        self.team = team
        self.quota = quota
        self.limit = limit
        self.used = used
        self.needed = needed


class SignOnRefused(ServiceError):
    """A single sign-on is refused (what the identity provider said about the user is not
    acceptable, or the provider could not be asked); nobody was signed in. The message, for
    the user, says why and never repeats a token or a secret."""


@contextmanager
def runtime_errors(action: str = "") -> Iterator[None]:
    """Run runtime calls: the runtime's errors leave the block as the services' own.

    :class:`runtime_adapter.base.RuntimeUnavailable` becomes :class:`RuntimeUnavailable`
    ("the runtime is unavailable: …", logged as a warning when ``action`` names the call),
    :class:`runtime_adapter.base.OffsetsError` (a request the runtime cannot serve)
    :class:`InvalidTransition`; both with the runtime's error chained.
    """
    try:
        yield
    except runtime_base.RuntimeUnavailable as exc:
        if action:
            logger.warning("runtime unavailable: %s failed: %s", action, exc)
        raise RuntimeUnavailable(f"the runtime is unavailable: {exc}") from exc
    except runtime_base.OffsetsError as exc:
        raise InvalidTransition(str(exc)) from exc


class RegistryError(ServiceError):
    """A schema registry request refused, with Confluent Schema Registry's HTTP status and
    error code (40401 subject not found, 409 incompatible, 42201 invalid schema…)."""

    def __init__(self, status: int, error_code: int, message: str) -> None:
        super().__init__(message)
        self.status = status
        self.error_code = error_code
        self.message = message
