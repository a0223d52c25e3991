"""Pure-Python evaluation of compiled patterns with aws/event-ruler's array semantics.

Event-ruler's ``ACFinder`` (``Machine.rulesForJSONEvent``) takes a rule's steps in order
(sorted by path) over the event's leaf values, arrays "crushed" (their elements share the
parent's path): a value step picks a leaf its matchers accept among those in the array
elements chosen so far, backtracking over the choices; an absence step holds when no leaf
lies at its path in the elements chosen so far. So fields matched together come from the
same array element, and ``{"exists": false}`` inside an array of objects depends on the
order: before any value step on that array it means "in no element", after one it means
"not in the element already chosen".

Backtracking over the choices is exponential in the number of arrays a rule crosses. This
evaluator gives the same answers in time linear in the event's size (times the pattern's),
by the structure the Spark compiler (``pipelines.patterns``) uses:

* steps are grouped by their first path segment and each group is decided on that child
  alone (groups share no array, so their choices are independent);
* on an array node, whose elements are crushed (arrays of arrays flattened up to
  ``MAX_ARRAY_NESTING`` levels), the absence steps that come before the group's first value
  step must hold in every element, and the remaining steps must all hold inside one element
  (the element the first value step chooses); a node that is not an array is that one
  element. Inside the element the same rule applies to the next path segment.

Arrays directly nested more than ``MAX_ARRAY_NESTING`` deep are not searched (the Spark path
has the same limit). Only the parts of the event the pattern names are visited.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from pipelines.spec.patterns.model import MAX_ARRAY_NESTING, CompiledPattern, FieldPath, Step

_MISSING = object()
"""The value of a field the event does not have (JSON ``null`` is a value: ``None``)."""

_RelativeSteps = Sequence[tuple[FieldPath, Step]]


def matches_compiled(pattern: CompiledPattern, event: Any) -> bool:
    """Return True when ``event`` (parsed JSON) matches; a non-object event never matches."""
    if not isinstance(event, Mapping):
        return False
    return any(
        _element_steps(event, [(step.path, step) for step in rule.steps]) for rule in pattern.rules
    )


def _element_steps(element: Any, steps: _RelativeSteps) -> bool:
    """Whether ``steps`` (paths relative to ``element``) all hold inside one element."""
    groups: dict[str, list[tuple[FieldPath, Step]]] = {}
    for path, step in steps:
        if not path:
            if not _leaf_step(element, step):
                return False
        else:
            groups.setdefault(path[0], []).append((path[1:], step))
    return all(_node_steps(_child(element, key), group) for key, group in groups.items())


def _node_steps(node: Any, steps: _RelativeSteps) -> bool:
    """Whether ``steps`` hold below the field value ``node``, in the order they are taken."""
    first_value = next((i for i, (_, step) in enumerate(steps) if not step.absent), len(steps))
    absent, pinned = steps[:first_value], steps[first_value:]
    elements = _elements(node)
    if any(_element_has_leaf(element, path) for element in elements for path, _ in absent):
        return False
    return not pinned or any(_element_steps(element, pinned) for element in elements)


def _leaf_step(element: Any, step: Step) -> bool:
    if not _is_leaf(element):
        return step.absent
    return not step.absent and any(matcher.matches(element) for matcher in step.matchers)


def _element_has_leaf(element: Any, path: FieldPath) -> bool:
    """Whether a leaf value lies at ``path`` below ``element`` (in any array element)."""
    if not path:
        return _is_leaf(element)
    node = _child(element, path[0])
    return any(_element_has_leaf(child, path[1:]) for child in _elements(node))


def _elements(node: Any) -> list[Any]:
    """The elements of a field value: its crushed elements when it is an array, else itself."""
    return _crush(node) if isinstance(node, list) else [node]


def _crush(array: list[Any], depth: int = MAX_ARRAY_NESTING - 1) -> list[Any]:
    """The elements of ``array``, those that are arrays replaced by their own elements, down
    to ``MAX_ARRAY_NESTING`` levels (an array left at the last level is no leaf)."""
    if depth == 0:
        return array
    crushed: list[Any] = []
    for element in array:
        if isinstance(element, list):
            crushed.extend(_crush(element, depth - 1))
        else:
            crushed.append(element)
    return crushed


def _child(value: Any, key: str) -> Any:
    return value.get(key, _MISSING) if isinstance(value, Mapping) else _MISSING


def _is_leaf(value: Any) -> bool:
    return value is not _MISSING and not isinstance(value, Mapping | list)
