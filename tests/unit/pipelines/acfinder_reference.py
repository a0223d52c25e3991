"""The evaluator Sluice had before ``pipelines.spec.patterns.evaluator`` became linear: a
literal transcription of aws/event-ruler's ``ACFinder`` (step by step, backtracking over the
array elements), kept as an independent reference for differential tests.

It is exponential in the number of pattern fields that lie in arrays (three arrays of 200
elements took 21 s), so tests only give it small events.

1. The event is flattened into fields ``(path, leaf value, array membership)``: objects add
   a path segment, arrays are "crushed" (their elements share the parent's path) and each
   element remembers which array it belongs to and at which index. Objects and empty arrays
   yield no field; ``null`` is a leaf value.
2. A rule's steps are taken in order (sorted by path). A value step picks any field at its
   path that one of its matchers accepts and whose membership is consistent with the fields
   picked so far (same index in every array they share); then the next step is tried, with
   backtracking. An absence step holds when no field at its path is consistent with the
   fields picked so far. Hence ``{"exists": false}`` inside an array of objects depends on
   the order: before any value step on that array it means "in no element", after one it
   means "not in the element already chosen".

Arrays directly nested more than ``MAX_ARRAY_NESTING`` deep are not searched (the Spark path
has the same limit).
"""

from __future__ import annotations

import itertools
from collections.abc import Iterator, Mapping
from typing import Any

from pipelines.spec.patterns.matchers import JsonLeaf
from pipelines.spec.patterns.model import MAX_ARRAY_NESTING, CompiledPattern, FieldPath, Step

Membership = tuple[tuple[int, int], ...]  # (array id, element index) pairs
Fields = dict[FieldPath, list[tuple[JsonLeaf, Membership]]]


def reference_matches(pattern: CompiledPattern, event: Any) -> bool:
    """Return True when ``event`` (parsed JSON) matches; a non-object event never matches."""
    if not isinstance(event, Mapping):
        return False
    fields: Fields = {}
    for path, value, membership in _flatten(event, (), (), itertools.count()):
        fields.setdefault(path, []).append((value, membership))
    return any(_match_steps(rule.steps, 0, {}, fields) for rule in pattern.rules)


def _flatten(
    value: Any,
    path: FieldPath,
    membership: Membership,
    array_ids: Iterator[int],
    nesting: int = 0,
) -> Iterator[tuple[FieldPath, JsonLeaf, Membership]]:
    if isinstance(value, Mapping):
        for key, child in value.items():
            yield from _flatten(child, (*path, key), membership, array_ids)
    elif isinstance(value, list):
        if nesting == MAX_ARRAY_NESTING:
            return
        array_id = next(array_ids)
        for index, element in enumerate(value):
            member = (*membership, (array_id, index))
            yield from _flatten(element, path, member, array_ids, nesting + 1)
    else:
        yield path, value, membership


def _consistent(pinned: Mapping[int, int], membership: Membership) -> bool:
    return all(pinned.get(array_id, index) == index for array_id, index in membership)


def _match_steps(steps: tuple[Step, ...], at: int, pinned: dict[int, int], fields: Fields) -> bool:
    if at == len(steps):
        return True
    step = steps[at]
    candidates = [
        (value, membership)
        for value, membership in fields.get(step.path, ())
        if _consistent(pinned, membership)
    ]
    if step.absent:
        return not candidates and _match_steps(steps, at + 1, pinned, fields)
    return any(
        _match_steps(steps, at + 1, {**pinned, **dict(membership)}, fields)
        for value, membership in candidates
        if any(matcher.matches(value) for matcher in step.matchers)
    )
