"""EventBridge event patterns with aws/event-ruler semantics, in pure Python (no pyspark).

Use :func:`validate_pattern` to check a pattern (the console does, without loading Spark),
:func:`matches` to test one event (the pattern test bench), and :func:`compile_pattern` for
the compiled form that ``pipelines.patterns`` turns into a native Spark filter.

Patterns address an event in its CloudEvents JSON form: attributes at the top level, the
payload under ``data`` (``{"data": {"amount": [{"numeric": [">", 100]}]}}``).

Semantics (aws/event-ruler ``Machine.rulesForJSONEvent``):

* every field named in the pattern must match (AND); a value array lists alternatives (OR);
* a leaf matches when any of its values matches; arrays in the event are crushed, and the
  fields matched together must come from the same array element;
* JSON types never mix (``"100"`` is not ``100``); numbers compare as doubles (``3e2 == 300``);
* operators: exact values, ``prefix``, ``suffix`` (both also ``{"equals-ignore-case": ...}``),
  ``equals-ignore-case``, ``wildcard``, ``anything-but`` (values, or prefix / suffix /
  equals-ignore-case / wildcard), ``numeric``, ``exists``, ``cidr``, ``exactly``, ``$or``.

Known differences from event-ruler (edge cases, documented and tested as such):

* numbers always compare as IEEE-754 doubles (event-ruler compares numbers a double cannot
  hold exactly, e.g. 20-digit integers, as text);
* IP addresses follow ``ip.py``: no leading zeros in IPv4, no dotted IPv4 inside IPv6, and an
  IPv4-mapped IPv6 address stays IPv6 (Java reads ``::ffff:a00:1`` as ``10.0.0.1``);
* arrays directly inside arrays are searched ``model.MAX_ARRAY_NESTING`` (3) levels deep;
* patterns are bounded in size, depth, string length, values, ``$or`` combinations and
  wildcards (``limits.py``, the same on every path), and match in time linear in the size of
  the event: wildcards never backtrack (``matchers.wildcard_matches``) and the evaluator
  decides each array element once (``evaluator.py``).
"""

from __future__ import annotations

from typing import Any

from pipelines.spec.patterns.evaluator import matches_compiled
from pipelines.spec.patterns.model import CompiledPattern, FieldPath, PatternError, Rule, Step
from pipelines.spec.patterns.parser import OPERATORS, compile_pattern

__all__ = [
    "OPERATORS",
    "CompiledPattern",
    "FieldPath",
    "PatternError",
    "Rule",
    "Step",
    "compile_pattern",
    "matches",
    "validate_pattern",
]


def validate_pattern(pattern: Any) -> None:
    """Check that ``pattern`` is a valid event pattern.

    Raises :class:`PatternError` (a ``ValueError``) naming every problem and where it is
    inside the pattern, e.g. ``detail.state[0].contains: unknown operator 'contains'; ...``.
    """
    compile_pattern(pattern)


def matches(pattern: Any, event: dict[str, Any]) -> bool:
    """Return True when ``event`` (parsed JSON, CloudEvents JSON form) matches ``pattern``.

    Same semantics as the Spark filter compiled by ``pipelines.patterns``. Raises
    :class:`PatternError` when the pattern is invalid.
    """
    return matches_compiled(compile_pattern(pattern), event)
