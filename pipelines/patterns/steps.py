"""What every pattern compiler here reads: a compiled rule's steps grouped by the top-level
member they start at (the structure the evaluator of :mod:`pipelines.spec.patterns` uses),
the accessor of an event's members, and the SQL conjunction and disjunction of conditions.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from pipelines.spec.patterns import FieldPath, Rule, Step, compile_pattern

ChildAccessor = Callable[[str], str]
"""Returns SQL for the VARIANT value of an event's top-level field (NULL when absent)."""

RelativeSteps = Sequence[tuple[FieldPath, Step]]


def rule_steps(rule: Rule) -> list[tuple[FieldPath, Step]]:
    """A rule's steps with their paths from the event's root."""
    return [(step.path, step) for step in rule.steps]


def by_first_key(steps: RelativeSteps) -> dict[str, list[tuple[FieldPath, Step]]]:
    """The steps with a path, grouped by its first key (in order of first appearance), with
    their paths relative to that key."""
    groups: dict[str, list[tuple[FieldPath, Step]]] = {}
    for path, step in steps:
        if path:
            groups.setdefault(path[0], []).append((path[1:], step))
    return groups


def all_of(conditions: Sequence[str]) -> str:
    """SQL true when every condition holds (``true`` for none)."""
    return "(" + " AND ".join(conditions) + ")" if conditions else "true"


def any_of(conditions: Sequence[str]) -> str:
    """SQL true when some condition holds (``false`` for none)."""
    return "(" + " OR ".join(conditions) + ")" if conditions else "false"


def member_paths(pattern: Any, member: str) -> list[FieldPath] | None:
    """The paths below the top-level ``member`` that ``pattern``'s steps read (relative to it,
    in order of first appearance, without repeats): all a matcher needs to find there. None
    when a step tests the member itself (its whole value is needed). Raises ``PatternError``
    when the pattern is invalid."""
    paths: list[FieldPath] = []
    for rule in compile_pattern(pattern).rules:
        for path, _ in by_first_key(rule_steps(rule)).get(member, []):
            if not path:
                return None
            if path not in paths:
                paths.append(path)
    return paths
