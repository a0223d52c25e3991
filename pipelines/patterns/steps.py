"""What every pattern compiler here reads: a compiled rule's steps grouped by the top-level
member they start at (the structure the evaluator of :mod:`pipelines.spec.patterns` uses),
the accessor of an event's members, and the SQL conjunction and disjunction of conditions.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from pipelines.spec.patterns import FieldPath, Rule, Step

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
