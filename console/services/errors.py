"""Errors the services raise; the API maps each to an HTTP status."""

from __future__ import annotations


class ServiceError(Exception):
    """Base class of every error a service raises on purpose."""


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
