"""Value matchers: the leaves of a compiled event pattern, with their pure-Python semantics.

A matcher decides whether one *leaf value* of an event (a JSON string, number, boolean or
null, never an object or array) is accepted. JSON types are never converted into each other:
``"100"`` is not the number ``100``, ``true`` is not ``"true"``, ``null`` is not ``"null"``.
Numbers compare as IEEE-754 doubles, so ``300``, ``300.0`` and ``3e2`` are equal.

Every matcher class here has twins on the Spark path: ``pipelines.patterns`` compiles it to
built-in Spark SQL, and writes it as JSON for Sluice's ``matches`` function, which decides
it in Java (``EventPatterns.java``). Adding an operator means adding a matcher (or reusing
one), its parser in ``parser.py`` and its Spark twins.
"""

from __future__ import annotations

import math
from abc import ABC, abstractmethod
from dataclasses import dataclass, field
from decimal import Decimal
from typing import Any

from pipelines.spec.patterns.ip import IpAddress, parse_ip

JsonLeaf = str | int | float | bool | None


def is_json_number(value: Any) -> bool:
    """True for a JSON number (``bool`` is excluded although it subclasses ``int``)."""
    return isinstance(value, int | float | Decimal) and not isinstance(value, bool)


def as_double(value: Any) -> float | None:
    """The value as a finite double, or ``None`` when it is not a comparable JSON number."""
    if not is_json_number(value):
        return None
    try:
        number = float(value)
    except OverflowError:
        return None
    return number if math.isfinite(number) else None


class Matcher(ABC):
    """Accepts or rejects one leaf value of an event."""

    @abstractmethod
    def matches(self, value: JsonLeaf) -> bool:
        """Return True when the leaf value is accepted."""


@dataclass(frozen=True)
class ExactString(Matcher):
    """A JSON string equal to ``value``, character for character."""

    value: str

    def matches(self, value: JsonLeaf) -> bool:
        return isinstance(value, str) and value == self.value


@dataclass(frozen=True)
class ExactNumber(Matcher):
    """A JSON number numerically equal to ``value``."""

    value: float

    def matches(self, value: JsonLeaf) -> bool:
        return as_double(value) == self.value


@dataclass(frozen=True)
class ExactLiteral(Matcher):
    """The JSON literal ``true``, ``false`` or ``null``."""

    value: bool | None

    def matches(self, value: JsonLeaf) -> bool:
        return value is self.value


@dataclass(frozen=True)
class IpRange(Matcher):
    """A JSON string holding an IP address between ``low`` and ``high`` (inclusive)."""

    low: IpAddress
    high: IpAddress

    def matches(self, value: JsonLeaf) -> bool:
        if not isinstance(value, str):
            return False
        address = parse_ip(value)
        return address is not None and self.low.key <= address.key <= self.high.key


@dataclass(frozen=True)
class Prefix(Matcher):
    """A JSON string starting with ``value`` (optionally ignoring case)."""

    value: str
    ignore_case: bool = False

    def matches(self, value: JsonLeaf) -> bool:
        if not isinstance(value, str):
            return False
        if self.ignore_case:
            return value.lower().startswith(self.value.lower())
        return value.startswith(self.value)


@dataclass(frozen=True)
class Suffix(Matcher):
    """A JSON string ending with ``value`` (optionally ignoring case)."""

    value: str
    ignore_case: bool = False

    def matches(self, value: JsonLeaf) -> bool:
        if not isinstance(value, str):
            return False
        if self.ignore_case:
            return value.lower().endswith(self.value.lower())
        return value.endswith(self.value)


@dataclass(frozen=True)
class EqualsIgnoreCase(Matcher):
    """A JSON string equal to ``value`` when both are lower-cased."""

    value: str

    def matches(self, value: JsonLeaf) -> bool:
        return isinstance(value, str) and value.lower() == self.value.lower()


@dataclass(frozen=True)
class Wildcard(Matcher):
    """A JSON string matching a wildcard: ``*`` is any run of characters (even none).

    ``\\*`` is a literal asterisk and ``\\\\`` a literal backslash. ``segments`` is the parsed
    form: the literal text between the unescaped ``*`` (one more segment than stars; only
    the first and the last may be empty, ``**`` being refused by the parser).
    """

    value: str
    segments: tuple[str, ...] = field(compare=False)

    def matches(self, value: JsonLeaf) -> bool:
        return isinstance(value, str) and wildcard_matches(self.segments, value)


def wildcard_matches(segments: tuple[str, ...], text: str) -> bool:
    """Whether ``text`` matches the wildcard whose literal segments are ``segments``.

    No backtracking: ``text`` must start with the first segment and end with the last one
    (without the two overlapping); the middle segments must then occur in order, without
    overlapping, between them, and the leftmost occurrence of each is always the best
    choice (it leaves the most room for the next). So the time is linear in the length of
    ``text`` (times the length of the segments at worst, which ``str.find`` rarely reaches).
    """
    if len(segments) == 1:
        return text == segments[0]
    first, *middle, last = segments
    end = len(text) - len(last)
    if end < len(first) or not text.startswith(first) or not text.endswith(last):
        return False
    position = len(first)
    for segment in middle:
        found = text.find(segment, position, end)
        if found < 0:
            return False
        position = found + len(segment)
    return True


@dataclass(frozen=True)
class NumericRange(Matcher):
    """A JSON number inside a range; a missing bound is unbounded."""

    lower: float | None
    lower_inclusive: bool
    upper: float | None
    upper_inclusive: bool

    def matches(self, value: JsonLeaf) -> bool:
        number = as_double(value)
        if number is None:
            return False
        above_lower = (
            self.lower is None
            or number > self.lower
            or (number == self.lower and self.lower_inclusive)
        )
        below_upper = (
            self.upper is None
            or number < self.upper
            or (number == self.upper and self.upper_inclusive)
        )
        return above_lower and below_upper


@dataclass(frozen=True)
class AnythingBut(Matcher):
    """Any leaf value (of any JSON type) that none of the ``excluded`` matchers accepts.

    ``{"anything-but": "x"}`` excludes the string ``"x"`` only, so numbers, booleans and null
    are accepted; ``{"anything-but": {"prefix": "x"}}`` excludes only strings starting with x.
    """

    excluded: tuple[Matcher, ...]

    def matches(self, value: JsonLeaf) -> bool:
        return not any(matcher.matches(value) for matcher in self.excluded)


@dataclass(frozen=True)
class Exists(Matcher):
    """Any leaf value, JSON null included (``{"exists": true}``)."""

    def matches(self, value: JsonLeaf) -> bool:
        return True
