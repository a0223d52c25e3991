"""Failures and secrets as a driver reports them: a readable trace, no secret in it."""

from __future__ import annotations

import re
from typing import Any

TRACE_LIMIT = 20_000

# The most useful line of a Spark failure: a user-raised error or the innermost cause.
_SUMMARY_PATTERNS = (
    re.compile(r"\[USER_RAISED_EXCEPTION\]\s*(?P<msg>.+?)(?:\s+SQLSTATE: \w+)?$", re.M),
    re.compile(r"^Caused by: (?P<msg>.+)$", re.M),
)


def decrypted_spec(spec: dict[str, Any]) -> tuple[dict[str, Any], list[str]]:
    """A deployment's spec with its secrets decrypted, and their values (for masking).

    Secrets travel encrypted (through Redis, as the console stores them); the key comes
    from this process's environment (``SLUICE_SECRETS_KEY``, as the console's). Raises
    ``ValueError`` with a clear message when a secret cannot be decrypted.
    """
    from pipelines.spec.secrets import decrypt_secrets, secret_box_from_env, secret_values

    plain = decrypt_secrets(spec, secret_box_from_env().decrypt)
    return plain, secret_values(plain)


def mask_secrets(text: str, secrets: list[str]) -> str:
    """``text`` with the known secret values replaced by ``***``."""
    if not text or not secrets:
        return text
    from pipelines.spec.secrets import mask_known_secrets

    return mask_known_secrets(text, secrets)


# The JVM errors Spark's executor answers by exiting the JVM (``Utils.isFatalError``: a
# ``VirtualMachineError``), after it has failed the task: the query may end with the error a
# moment before the driver's JVM does. Spark's own ``SparkOutOfMemoryError`` is not one.
_JVM_FATAL = re.compile(
    r"(?<![\w.])java\.lang\.(OutOfMemoryError|StackOverflowError|InternalError|UnknownError)\b"
)


def fatal_to_the_jvm(text: str) -> bool:
    """Whether a query's failure is one that ends its driver's JVM too."""
    return _JVM_FATAL.search(text) is not None


def summarize_failure(text: str) -> str:
    """The one line an operator needs first, taken from a long Spark/Java trace."""
    for pattern in _SUMMARY_PATTERNS:
        found = list(pattern.finditer(text))
        if found:
            return found[-1].group("msg").strip()
    first = text.strip().splitlines()
    return first[0] if first else "unknown failure"


def format_trace(summary: str, detail: str) -> str:
    """A readable first line, then the full detail, bounded in size."""
    text = f"{summary}\n\n{detail.strip()}" if detail.strip() != summary else summary
    if len(text) > TRACE_LIMIT:
        text = text[:TRACE_LIMIT] + "\n… (trace truncated)"
    return text
