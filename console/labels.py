"""Channel labels: Kubernetes' key/value rules, so a fleet is sorted the way operators
already label their pods (``team=payments``, ``app.kubernetes.io/part-of=checkout``).

A key is an optional DNS-subdomain prefix and a ``/``, then a name of at most 63 characters:
letters, digits, ``-``, ``_`` and ``.``, beginning and ending with a letter or digit. A value
is empty or a name of the same form. A channel has at most :data:`MAX_LABELS` labels.
:func:`label_errors` reports each problem under its field path (``labels.<key>``).
"""

from __future__ import annotations

import re
from typing import Any

MAX_LABELS = 64
NAME_MAX = 63
PREFIX_MAX = 253

_NAME = re.compile(r"^[A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?$")
_DNS_LABEL = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$")

NAME_RULE = (
    "at most 63 letters, digits, '-', '_' or '.', beginning and ending with a letter or digit"
)


def key_error(key: str) -> str | None:
    """Why ``key`` is not a label key, or ``None``."""
    prefix, slash, name = key.rpartition("/")
    if slash and (
        not prefix
        or len(prefix) > PREFIX_MAX
        or not all(_DNS_LABEL.match(part) and len(part) <= 63 for part in prefix.split("."))
    ):
        return (
            "The prefix before '/' must be a DNS subdomain: lower-case letters, digits, "
            "'-' and '.', at most 253 characters."
        )
    if not name or len(name) > NAME_MAX or not _NAME.match(name):
        return f"A label key's name must be {NAME_RULE}."
    return None


def value_error(value: Any) -> str | None:
    """Why ``value`` is not a label value, or ``None``."""
    if not isinstance(value, str):
        return "A label value must be a string."
    if value and (len(value) > NAME_MAX or not _NAME.match(value)):
        return f"A label value must be empty or {NAME_RULE}."
    return None


def label_errors(labels: Any, path: str = "labels") -> dict[str, list[str]]:
    """Every problem of ``labels`` keyed by field path; empty when they are valid."""
    if not isinstance(labels, dict):
        return {path: ["Labels are an object of string keys and string values."]}
    errors: dict[str, list[str]] = {}
    if len(labels) > MAX_LABELS:
        errors[path] = [f"At most {MAX_LABELS} labels (got {len(labels)})."]
    for key, value in labels.items():
        problems = [problem for problem in (key_error(str(key)), value_error(value)) if problem]
        if problems:
            errors[f"{path}.{key}"] = problems
    return errors


def parse_selector(text: str) -> tuple[str, str | None]:
    """``key=value`` (the label has this value) or ``key`` (the label is set) as
    ``(key, value or None)``; raises ``ValueError`` with the reason."""
    key, equals, value = text.partition("=")
    problem = key_error(key)
    if problem:
        raise ValueError(f"{text!r}: {problem}")
    if not equals:
        return key, None
    problem = value_error(value)
    if problem:
        raise ValueError(f"{text!r}: {problem}")
    return key, value


def validate_labels(labels: Any) -> None:
    """The model field's validator (the admin's form): every problem, by label."""
    from django.core.exceptions import ValidationError

    errors = label_errors(labels)
    if errors:
        raise ValidationError(
            [f"{path}: {message}" for path, messages in errors.items() for message in messages]
        )
