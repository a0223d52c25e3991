"""The template language of the ``generator`` source (pure Python: parsing and validation).

A template is any JSON value; it becomes the ``data`` of every generated event. Strings in it
may hold placeholders, computed for each event from its sequence number ``seq`` (0, 1, 2, ...):

* ``{{seq}}`` - the sequence number itself;
* ``{{number:MIN:MAX}}`` - an integer from MIN to MAX (inclusive);
  ``{{number:MIN:MAX:DECIMALS}}`` - a number with 1 to 6 fraction digits, e.g.
  ``{{number:5:500:2}}`` gives 137.42;
* ``{{choice:A,B,C}}`` - one of the comma-separated texts;
* ``{{time}}`` - the event time as RFC 3339 text.

A string that is exactly one placeholder takes its JSON type (``"{{seq}}"`` gives the number
``7``, ``"{{choice:a,b}}"`` the string ``"a"``); otherwise the placeholders are substituted into
the text (``"customer-{{number:1:50}}"`` gives ``"customer-17"``). Every ``{{...}}`` must be a
valid placeholder. The picks are a hash of ``seq`` and the placeholder's position in the
template, so fields vary independently and a given ``seq`` always gives the same event.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any, Literal

PLACEHOLDER = re.compile(r"\{\{(.*?)\}\}")
MAX_DECIMALS = 6
MAX_BOUND = 10**12
"""Largest absolute bound of ``number`` (keeps every pick inside a 64-bit integer)."""

PlaceholderKind = Literal["seq", "number", "choice", "time"]

DEFAULT_TEMPLATE: dict[str, Any] = {
    "order_id": "{{seq}}",
    "customer": "customer-{{number:1:50}}",
    "region": "{{choice:eu-west,us-east,ap-south}}",
    "status": "{{choice:created,paid,shipped}}",
    "items": "{{number:1:5}}",
    "amount": "{{number:5:500:2}}",
    "currency": "EUR",
}
"""A demo order: the ``generator`` source's default template."""


@dataclass(frozen=True)
class Placeholder:
    """One ``{{...}}`` of a template.

    ``salt`` is the placeholder's position among all placeholders of the template (in
    document order), so two placeholders never pick in lockstep.
    """

    kind: PlaceholderKind
    salt: int
    low: int = 0
    high: int = 0
    decimals: int = 0
    choices: tuple[str, ...] = ()


Part = str | Placeholder
"""A piece of a template string: literal text or a placeholder."""


class TemplateError(ValueError):
    """A template is invalid; the message names the JSON path of the bad string."""


@dataclass(frozen=True)
class TemplateString:
    """A template string split into literal text and placeholders."""

    parts: tuple[Part, ...]

    @property
    def single(self) -> Placeholder | None:
        """The placeholder when the string is exactly one placeholder (typed substitution)."""
        if len(self.parts) == 1 and isinstance(self.parts[0], Placeholder):
            return self.parts[0]
        return None


def parse_template(template: Any) -> Any:
    """Return ``template`` with every string replaced by a :class:`TemplateString`.

    Raises :class:`TemplateError` naming the first bad placeholder and where it is
    (``data.region: unknown placeholder {{pick:a,b}}; ...``).
    """
    counter = iter(range(1_000_000))
    return _parse_value(template, "data", counter)


def _parse_value(value: Any, path: str, counter: Iterator[int]) -> Any:
    if isinstance(value, str):
        return _parse_string(value, path, counter)
    if isinstance(value, dict):
        return {key: _parse_value(item, f"{path}.{key}", counter) for key, item in value.items()}
    if isinstance(value, list):
        return [_parse_value(item, f"{path}[{n}]", counter) for n, item in enumerate(value)]
    if value is None or isinstance(value, bool | int | float):
        return value
    raise TemplateError(f"{path}: not a JSON value ({type(value).__name__})")


def _parse_string(text: str, path: str, counter: Iterator[int]) -> TemplateString:
    parts: list[Part] = []
    position = 0
    for match in PLACEHOLDER.finditer(text):
        if match.start() > position:
            parts.append(text[position : match.start()])
        try:
            parts.append(_placeholder(match.group(1), next(counter)))
        except ValueError as error:
            raise TemplateError(f"{path}: {match.group(0)}: {error}") from None
        position = match.end()
    if position < len(text):
        parts.append(text[position:])
    return TemplateString(tuple(parts))


def _placeholder(body: str, salt: int) -> Placeholder:
    name, _, arguments = body.partition(":")
    if name in ("seq", "time"):
        if arguments:
            raise ValueError(f"{{{{{name}}}}} takes no arguments")
        return Placeholder(kind="seq" if name == "seq" else "time", salt=salt)
    if name == "number":
        return _number(arguments, salt)
    if name == "choice":
        choices = tuple(arguments.split(","))
        if not arguments:
            raise ValueError("choice needs at least one option (choice:a,b,c)")
        return Placeholder(kind="choice", salt=salt, choices=choices)
    raise ValueError(f"unknown placeholder {name!r}; expected seq, number, choice or time")


def _number(arguments: str, salt: int) -> Placeholder:
    fields = arguments.split(":")
    usage = "number takes MIN:MAX or MIN:MAX:DECIMALS with integer MIN <= MAX"
    if len(fields) not in (2, 3) or not all(re.fullmatch(r"-?[0-9]+", f) for f in fields):
        raise ValueError(usage)
    low, high, decimals = int(fields[0]), int(fields[1]), int(fields[2]) if len(fields) == 3 else 0
    if low > high or max(abs(low), abs(high)) > MAX_BOUND:
        raise ValueError(f"{usage}, both within +-{MAX_BOUND}")
    if not 0 <= decimals <= MAX_DECIMALS:
        raise ValueError(f"DECIMALS must be 0 to {MAX_DECIMALS}")
    return Placeholder(kind="number", salt=salt, low=low, high=high, decimals=decimals)
