"""The compiled form of an event pattern, shared by the Python evaluator and the Spark compiler.

A pattern compiles, like aws/event-ruler's ``JsonRuleCompiler``, into one or more *rules*
(one per combination of ``$or`` branches); the pattern matches when any rule matches. A rule
is a list of *steps*, one per field path, sorted by the dot-joined path exactly as event-ruler
sorts them (the order matters for ``{"exists": false}`` inside arrays, see ``evaluator.py``).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from pipelines.spec.patterns.matchers import Matcher

FieldPath = tuple[str, ...]

MAX_ARRAY_NESTING = 3
"""How deep arrays directly inside arrays are searched, on both evaluation paths: a value in
``[[[v]]]`` is reached, one in ``[[[[v]]]]`` is not (event-ruler has no limit)."""


class PatternError(ValueError):
    """An event pattern is invalid.

    ``problems`` holds every problem found as ``(location, message)`` pairs; the location is
    a path inside the pattern such as ``detail.state[0]`` (empty for the pattern itself).
    ``str(error)`` joins them into one readable sentence.
    """

    def __init__(self, problems: Sequence[tuple[str, str]]) -> None:
        self.problems: tuple[tuple[str, str], ...] = tuple(problems)
        super().__init__("; ".join(self.messages))

    @property
    def messages(self) -> list[str]:
        """One message per problem, each prefixed with its location inside the pattern."""
        return [f"{loc}: {message}" if loc else message for loc, message in self.problems]


@dataclass(frozen=True)
class Step:
    """One field of a rule: a leaf value at ``path`` accepted by any matcher, or absence.

    ``absent`` steps (``{"exists": false}``) have no matchers and hold when the event has no
    leaf value at ``path`` (in the array elements chosen so far).
    """

    path: FieldPath
    matchers: tuple[Matcher, ...] = ()
    absent: bool = False

    @property
    def sort_key(self) -> bytes:
        """Event-ruler's order: Java string order of the dot-joined path (UTF-16 code units)."""
        return ".".join(self.path).encode("utf-16-be")


@dataclass(frozen=True)
class Rule:
    """A conjunction of steps, sorted by :attr:`Step.sort_key`."""

    steps: tuple[Step, ...]


@dataclass(frozen=True)
class CompiledPattern:
    """A validated pattern: it matches an event when any of its rules does."""

    rules: tuple[Rule, ...]
