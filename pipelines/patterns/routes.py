"""A bus's routing with Sluice's ``route`` function (``Routes.java``): the rules that test
one top-level member, grouped into one call per member that looks exact values up
instead of testing the rules one by one.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from pipelines.patterns.native_sql import matcher_json, steps_json
from pipelines.patterns.steps import RelativeSteps, by_first_key, rule_steps
from pipelines.spec.patterns import CompiledPattern, Step
from pipelines.spec.patterns.matchers import (
    ExactLiteral,
    ExactNumber,
    ExactString,
)


@dataclass(frozen=True)
class RoutePlan:
    """One ``route`` call of a bus's routing (:func:`route_plans`): the top-level member it
    reads and the routes JSON it takes."""

    member: str
    routes: str


_EXACT = (ExactString, ExactNumber, ExactLiteral)


def route_plans(
    patterns: Sequence[tuple[CompiledPattern, Sequence[int]]],
) -> tuple[list[RoutePlan], list[int]]:
    """A bus's routing with Sluice's ``route`` function: the rules (each a compiled pattern
    and its targets) whose alternatives all test one top-level member, grouped by that
    member into one call each, and the positions of the other rules (which the caller
    decides with their predicates).

    Each alternative is an entry with its steps below the member (as :func:`steps_json`
    writes them) and, when one of its steps has only exact values (strings, numbers, JSON
    literals), that step as its *key*: the path most of the member's entries key on, so
    that one index serves them (``Routes.java``). 100 rules ``{"data": {"bucket": [i]}}``
    become one call that reads ``data.bucket`` once and looks its value up.
    """
    members: dict[str, list[tuple[int, list[RelativeSteps]]]] = {}
    rest: list[int] = []
    for position, (compiled, _) in enumerate(patterns):
        grouped = [by_first_key(rule_steps(rule)) for rule in compiled.rules]
        keys = {key for groups in grouped for key in groups}
        if len(keys) != 1 or any(len(groups) != 1 for groups in grouped):
            rest.append(position)
            continue
        (member,) = keys
        below: list[RelativeSteps] = [groups[member] for groups in grouped]
        members.setdefault(member, []).append((position, below))
    plans = []
    for member, rules in members.items():
        paths = Counter(
            path
            for _, alternatives in rules
            for steps in alternatives
            for path in {path for path, step in steps if _is_exact(step)}
        )
        entries = []
        for number, (position, alternatives) in enumerate(rules):
            for steps in alternatives:
                entry: dict[str, Any] = {
                    "rule": number,
                    "targets": list(patterns[position][1]),
                    "steps": json.loads(steps_json(steps)),
                }
                keyed = [(path, step) for path, step in steps if _is_exact(step)]
                if keyed:
                    key_path, key_step = max(keyed, key=lambda item: paths[item[0]])
                    entry["key"] = {
                        "path": list(key_path),
                        "values": [matcher_json(m) for m in key_step.matchers],
                    }
                entries.append(entry)
        routes = {"rules": len(rules), "entries": entries}
        plans.append(RoutePlan(member, json.dumps(routes, separators=(",", ":"), allow_nan=False)))
    return plans, rest


def _is_exact(step: Step) -> bool:
    return (
        not step.absent
        and bool(step.matchers)
        and all(isinstance(m, _EXACT) for m in step.matchers)
    )
