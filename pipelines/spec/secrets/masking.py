"""Known secret values masked in text that may quote them: traces, logs, lifecycle reasons
(:func:`mask_known_secrets`, and :class:`SecretMaskingFilter` on every log handler).
"""

from __future__ import annotations

import logging
from collections.abc import Iterable

MASK = "***"
MASK_MIN_LENGTH = 4
"""Shorter secrets are not masked: replacing every ``"ab"`` would garble any text."""


def mask_known_secrets(text: str, secrets: Iterable[str]) -> str:
    """``text`` with each occurrence of each secret of 4 or more characters replaced by
    ``***`` (longest first, so a secret containing another is hidden whole)."""
    if not text:
        return text
    for secret in sorted({s for s in secrets if len(s) >= MASK_MIN_LENGTH}, key=len, reverse=True):
        text = text.replace(secret, MASK)
    return text


class SecretMaskingFilter(logging.Filter):
    """A logging filter that masks known secret values in each record's message.

    Attach it to handlers (it then sees records from every logger); it renders the message
    with its arguments, masks it, and clears the arguments; it formats the exception into
    ``exc_text``, masks it and drops ``exc_info``, so any formatter (plain or JSON) gets
    clean text. Secrets are
    added as they become known with :meth:`add`.
    """

    def __init__(self, secrets: Iterable[str] = ()) -> None:
        super().__init__()
        self.secrets: set[str] = set()
        self.add(secrets)

    def add(self, secrets: Iterable[object]) -> None:  # keeps only strings
        self.secrets.update(s for s in secrets if isinstance(s, str) and len(s) >= MASK_MIN_LENGTH)

    def filter(self, record: logging.LogRecord) -> bool:
        if not self.secrets:
            return True
        message = record.getMessage()
        masked = mask_known_secrets(message, self.secrets)
        if masked != message:
            record.msg, record.args = masked, None
        if record.exc_info:
            # Formatted here and dropped, so no formatter renders the unmasked original.
            record.exc_text = record.exc_text or logging.Formatter().formatException(
                record.exc_info
            )
            record.exc_info = None
        if record.exc_text:
            record.exc_text = mask_known_secrets(record.exc_text, self.secrets)
        if record.stack_info:
            record.stack_info = mask_known_secrets(record.stack_info, self.secrets)
        return True


def install_masking_filter(secrets: Iterable[str] = ()) -> SecretMaskingFilter:
    """Add one :class:`SecretMaskingFilter` to every handler of the root logger (once per
    process) and return it; later calls add ``secrets`` to the same filter."""
    root = logging.getLogger()
    existing = next(
        (f for h in root.handlers for f in h.filters if isinstance(f, SecretMaskingFilter)),
        None,
    )
    masking = existing or SecretMaskingFilter()
    masking.add(secrets)
    for handler in root.handlers:
        if masking not in handler.filters:
            handler.addFilter(masking)
    return masking
