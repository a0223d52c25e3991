"""Patterns with Sluice's ``matches`` function (:mod:`pipelines.native`): a pattern is an OR
over its rules of an AND over each rule's top-level members of one ``matches`` call, whose
steps are JSON text (:func:`steps_json`) decided in Java (``EventPatterns.java``).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

from pipelines import native
from pipelines.patterns.steps import (
    ChildAccessor,
    RelativeSteps,
    all_of,
    any_of,
    by_first_key,
    rule_steps,
)
from pipelines.spec.patterns import CompiledPattern
from pipelines.spec.patterns.matchers import (
    AnythingBut,
    EqualsIgnoreCase,
    ExactLiteral,
    ExactNumber,
    ExactString,
    Exists,
    IpRange,
    Matcher,
    NumericRange,
    Prefix,
    Suffix,
    Wildcard,
)


def native_pattern_sql(compiled: CompiledPattern, child: ChildAccessor) -> str:
    """SQL of a compiled pattern's predicate with Sluice's ``matches`` function: an OR over
    the rules of an AND over each rule's top-level fields (in the order the evaluator takes
    them) of ``matches(child(key), '<steps_json of the field's steps>')``. Never NULL.

    The expression grows with the number of rules times fields, not with the matchers:
    those are in the literals, which Spark's optimizer does not look into.
    """
    return any_of(
        [
            all_of(
                [
                    native.matches(child(key), steps_json(group))
                    for key, group in by_first_key(rule_steps(rule)).items()
                ]
            )
            for rule in compiled.rules
        ]
    )


def steps_json(steps: RelativeSteps) -> str:
    """The JSON text ``matches`` takes for ``steps`` (paths relative to the node it tests):
    an array of ``{"path": [keys], "absent": true}`` or ``{"path": [keys], "matchers":
    [matcher, ...]}`` in order, each matcher a one-member object (see ``_MATCHER_JSON`` and
    ``EventPatterns.java``), e.g. ``[{"path":["amount"],"matchers":[{"numeric":[100.0,false,
    null,false]}]}]``. ASCII only, so any text passes through SQL literals and py4j."""
    document = [
        {"path": list(path), "absent": True}
        if step.absent
        else {"path": list(path), "matchers": [matcher_json(m) for m in step.matchers]}
        for path, step in steps
    ]
    return json.dumps(document, separators=(",", ":"), allow_nan=False)


def matcher_json(matcher: Matcher) -> dict[str, Any]:
    return _MATCHER_JSON[type(matcher)](matcher)


def _affix_json(matcher: Prefix | Suffix) -> dict[str, Any]:
    name = "prefix" if isinstance(matcher, Prefix) else "suffix"
    return {f"{name}-ignore-case" if matcher.ignore_case else name: matcher.value}


_MATCHER_JSON: dict[type[Matcher], Callable[[Any], dict[str, Any]]] = {
    ExactString: lambda m: {"string": m.value},
    ExactNumber: lambda m: {"number": float(m.value)},
    ExactLiteral: lambda m: {"literal": m.value},
    IpRange: lambda m: {"ip": [m.low.key, m.high.key]},
    Prefix: _affix_json,
    Suffix: _affix_json,
    EqualsIgnoreCase: lambda m: {"equals-ignore-case": m.value},
    Wildcard: lambda m: {"wildcard": list(m.segments)},
    NumericRange: lambda m: {"numeric": [m.lower, m.lower_inclusive, m.upper, m.upper_inclusive]},
    AnythingBut: lambda m: {"anything-but": [matcher_json(x) for x in m.excluded]},
    Exists: lambda m: {"exists": True},
}
"""Matcher type -> its JSON for ``matches``. Every matcher of ``pipelines.spec.patterns``."""
