"""Compile event patterns into native Spark predicates (no Python UDF on the per-event path).

A pattern is first compiled by :mod:`pipelines.spec.patterns` into rules. The semantics are
those of the pure-Python evaluator (aws/event-ruler's array-consistent matching); the
conformance vectors run through every path. Predicates are generated as SQL text and parsed
once with ``F.expr``: building them call by call through py4j is hundreds of times slower.

With Sluice's Spark functions (:mod:`pipelines.native`, the default when the session has
them) a pattern is one small expression (:func:`native_pattern_sql`): an OR over its rules
of an AND over each rule's top-level fields of one ``matches(<field>, '<steps>')`` call,
which decides the steps below that field in Java (``EventPatterns.java``), in generated
code. Spark re-optimizes a streaming query's plan on every micro-batch, so a small
expression tree matters as much as a fast one.

Without them, each rule becomes a Spark SQL boolean expression over VARIANT values
(``try_variant_get``, ``schema_of_variant`` and higher-order array functions).

How a rule is decided, on both paths (equivalent to ``pipelines.spec.patterns.evaluator``):
steps are grouped by their first path segment and evaluated on that child node. A node is
*crushed* into the list of its non-array values (arrays of arrays are flattened up to
:data:`MAX_ARRAY_NESTING` levels). The absence steps that come before the node's first value
step must hold in every element ("no leaf anywhere below"); the remaining steps must all hold
inside one element (in SQL ``exists(elements, e -> ...)``), which is what keeps matched
fields in the same array element.

Generated predicates never evaluate to NULL, so ``NOT`` and ``filter`` behave as booleans.
Literals are emitted so that no setting of ``spark.sql.parser.escapedStringLiterals`` or
``spark.sql.ansi.doubleQuotedIdentifiers`` changes their meaning.
"""

from __future__ import annotations

import itertools
import json
import re
from collections import Counter
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, replace
from functools import partial
from typing import Any

from pyspark.sql import Column, DataFrame, SparkSession
from pyspark.sql import functions as F

from pipelines import native
from pipelines.plan import computed_once
from pipelines.spec.patterns import CompiledPattern, FieldPath, Rule, Step, compile_pattern
from pipelines.spec.patterns.ip import IPV4_REGEX, IPV6_REGEX
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
from pipelines.spec.patterns.model import MAX_ARRAY_NESTING
from pipelines.sql import BACKSLASH, sql_double, sql_string

FAST_PATH_LEVELS = 8
"""Nesting levels that get a lambda-free branch for values that are not arrays (deeper ones,
and everything inside arrays, go through the general lambda-based path)."""

FAST_PATH_MAX_SQL = 50_000
"""Above this many characters of SQL, a pattern is compiled without the fast path."""

ChildAccessor = Callable[[str], str]
"""Returns SQL for the VARIANT value of an event's top-level field (NULL when absent)."""

_EVENT_VARIANT = "__sluice_event"
_QUICK = "__sluice_quick_match"
_UNDECIDED = "CAST(NULL AS BOOLEAN)"
_BINDING_PREFIX = "__sluice_q"
_ICU_CASE_MAPPINGS = "spark.sql.icu.caseMappings.enabled"
_COLUMN = re.compile(r"`[^`]*`")
_NUMBER_KINDS = "('TINYINT', 'SMALLINT', 'INT', 'BIGINT', 'FLOAT', 'DOUBLE')"  # and DECIMAL(p,s)
_RelativeSteps = Sequence[tuple[FieldPath, Step]]


def filter_events(df: DataFrame, pattern: Any, *, native_reads: bool | None = None) -> DataFrame:
    """Return the rows of ``df`` whose string column ``event`` holds JSON matching ``pattern``.

    ``event`` is a whole event document (for Sluice events, the CloudEvents JSON form). Rows
    whose ``event`` is NULL, not valid JSON or not a JSON object never match; the columns of
    ``df`` are returned unchanged. Raises ``PatternError`` when the pattern is invalid.
    ``native_reads``: see :func:`filter_by_pattern` (by default, when the session has them).
    """
    root = f"`{_EVENT_VARIANT}`"
    with_root = df.withColumn(_EVENT_VARIANT, F.try_parse_json(F.col("event")))
    native_matching = use_native_matching(df.sparkSession, native_reads)
    if native_matching:
        is_object = F.expr(f"coalesce({native.kind(root)} = 'OBJECT', false)")
        child = partial(native.field, root)
    else:
        is_object = F.expr(f"try_variant_get({root}, '$', 'struct<>') IS NOT NULL")
        child = partial(variant_child, root)
    matched = filter_by_pattern(
        with_root, pattern, child, lambda c: is_object & c, native_reads=native_matching
    )
    return matched.drop(_EVENT_VARIANT)


def filter_by_pattern(
    df: DataFrame,
    pattern: Any,
    child: ChildAccessor,
    condition: Callable[[Column], Column] = lambda matched: matched,
    *,
    native_reads: bool | None = None,
) -> DataFrame:
    """Rows of ``df`` for which ``condition(matched)`` holds, ``matched`` being the never-NULL
    predicate of ``pattern`` (see :func:`pattern_predicate`); the columns are unchanged.
    Raises ``PatternError`` when the pattern is invalid.

    ``condition`` must treat ``matched`` as a boolean (AND, OR, coalesce) and be lambda-free.

    With Sluice's Spark functions (``native_reads`` None: when the session has them, see
    :func:`use_native_matching`; True: required; False: never) the plan is one filter whose
    condition is ``condition`` of :func:`native_pattern_sql`, evaluated in generated code.

    Without them, most rows are still decided in generated code: lambdas (needed for arrays
    only) make Spark interpret the whole operator they are in, so a first filter applies the
    quick, lambda-free form of the predicate (:func:`quick_pattern_sql`, built-in
    expressions), computed once per row; only the rows it keeps or cannot decide reach the
    second, interpreted filter, which evaluates the full predicate for the undecided ones.
    """
    compiled = compile_pattern(pattern)
    if use_native_matching(df.sparkSession, native_reads):
        return df.filter(condition(F.expr(native_pattern_sql(compiled, child))))
    full = F.expr(pattern_sql(compiled, child))
    quick_predicate = quick_pattern_sql(compiled, child)
    if quick_predicate is None:
        return df.filter(condition(full))
    decided = df
    for name, sql in quick_predicate.bindings.items():
        decided = decided.withColumn(name, F.expr(sql))
    quick = F.col(_QUICK)
    decided = decided.withColumn(_QUICK, computed_once(F.expr(quick_predicate.sql)))
    # The partition-id term is non-deterministic (and always true): it keeps the optimizer
    # from merging the two filters into one interpreted filter.
    always = F.spark_partition_id() >= 0
    maybe = decided.filter(condition(F.coalesce(quick, F.lit(True))) & always)
    matched = maybe.filter(condition(F.coalesce(quick, full)))
    return matched.drop(_QUICK, *quick_predicate.bindings)


def use_native_matching(spark: SparkSession, native_reads: bool | None) -> bool:
    """Whether a filter in ``spark`` uses Sluice's ``matches`` (see :func:`filter_by_pattern`
    for ``native_reads``): when the session has Sluice's functions and lower-cases text as
    ``matches`` does, with ICU case mappings (``spark.sql.icu.caseMappings.enabled``, true
    unless changed; a session without them filters with built-in expressions, whose
    ``lower`` then follows that setting). RuntimeError when required and not possible.
    """
    if native_reads is False:
        return False
    if not native.native_functions(spark):
        if native_reads:
            raise RuntimeError("Sluice's Spark functions are not available in this session")
        return False
    # PySpark declares get() -> str | None; with a default given it returns a str.
    icu_case_mappings = spark.conf.get(_ICU_CASE_MAPPINGS, "true")
    if icu_case_mappings is None or icu_case_mappings.strip().lower() != "true":
        if native_reads:
            raise RuntimeError(f"Sluice's pattern matcher needs {_ICU_CASE_MAPPINGS}=true")
        return False
    return True


def pattern_predicate(
    pattern: Any, child: ChildAccessor, *, native_matching: bool = False
) -> Column:
    """Compile ``pattern`` into a never-NULL boolean Column.

    ``child(key)`` returns SQL for the VARIANT value of the event's top-level field ``key``
    (NULL when absent), so events may be one VARIANT column or typed columns.
    ``native_matching``: the small form of :func:`native_pattern_sql` (the session must
    have Sluice's functions, :func:`use_native_matching`); by default built-in expressions
    only (:func:`pattern_sql`, with lambdas: Spark interprets the operator holding it).
    Raises ``PatternError`` when the pattern is invalid.
    """
    compiled = compile_pattern(pattern)
    if native_matching:
        return F.expr(native_pattern_sql(compiled, child))
    return F.expr(pattern_sql(compiled, child))


def native_pattern_sql(compiled: CompiledPattern, child: ChildAccessor) -> str:
    """SQL of a compiled pattern's predicate with Sluice's ``matches`` function: an OR over
    the rules of an AND over each rule's top-level fields (in the order the evaluator takes
    them) of ``matches(child(key), '<steps_json of the field's steps>')``. Never NULL.

    The expression grows with the number of rules times fields, not with the matchers:
    those are in the literals, which Spark's optimizer does not look into.
    """
    return _any(
        [
            _all(
                [
                    native.matches(child(key), steps_json(group))
                    for key, group in _by_first_key(_rule_steps(rule)).items()
                ]
            )
            for rule in compiled.rules
        ]
    )


def steps_json(steps: _RelativeSteps) -> str:
    """The JSON text ``matches`` takes for ``steps`` (paths relative to the node it tests):
    an array of ``{"path": [keys], "absent": true}`` or ``{"path": [keys], "matchers":
    [matcher, ...]}`` in order, each matcher a one-member object (see ``_MATCHER_JSON`` and
    ``EventPatterns.java``), e.g. ``[{"path":["amount"],"matchers":[{"numeric":[100.0,false,
    null,false]}]}]``. ASCII only, so any text passes through SQL literals and py4j."""
    document = [
        {"path": list(path), "absent": True}
        if step.absent
        else {"path": list(path), "matchers": [_matcher_json(m) for m in step.matchers]}
        for path, step in steps
    ]
    return json.dumps(document, separators=(",", ":"), allow_nan=False)


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
    members: dict[str, list[tuple[int, list[_RelativeSteps]]]] = {}
    rest: list[int] = []
    for position, (compiled, _) in enumerate(patterns):
        grouped = [_by_first_key(_rule_steps(rule)) for rule in compiled.rules]
        keys = {key for groups in grouped for key in groups}
        if len(keys) != 1 or any(len(groups) != 1 for groups in grouped):
            rest.append(position)
            continue
        (member,) = keys
        below: list[_RelativeSteps] = [groups[member] for groups in grouped]
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
                        "values": [_matcher_json(m) for m in key_step.matchers],
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


def _rule_steps(rule: Rule) -> list[tuple[FieldPath, Step]]:
    return [(step.path, step) for step in rule.steps]


def _by_first_key(steps: _RelativeSteps) -> dict[str, list[tuple[FieldPath, Step]]]:
    """The steps with a path, grouped by its first key (in order of first appearance), with
    their paths relative to that key."""
    groups: dict[str, list[tuple[FieldPath, Step]]] = {}
    for path, step in steps:
        if path:
            groups.setdefault(path[0], []).append((path[1:], step))
    return groups


def _matcher_json(matcher: Matcher) -> dict[str, Any]:
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
    AnythingBut: lambda m: {"anything-but": [_matcher_json(x) for x in m.excluded]},
    Exists: lambda m: {"exists": True},
}
"""Matcher type -> its JSON for ``matches``. Every matcher of ``pipelines.spec.patterns``."""


def pattern_sql(compiled: CompiledPattern, child: ChildAccessor) -> str:
    """SQL text of a compiled pattern's predicate: true when any of its rules matches.

    Large patterns (many ``$or`` alternatives) are compiled without the fast path, which
    roughly triples the text, to keep Spark's analysis time and memory reasonable.
    """
    sql = _any([_Compiler(child, FAST_PATH_LEVELS).rule(rule) for rule in compiled.rules])
    if len(sql) <= FAST_PATH_MAX_SQL:
        return sql
    return _any([_Compiler(child, 0).rule(rule) for rule in compiled.rules])


@dataclass(frozen=True)
class QuickPredicate:
    """A lambda-free predicate over columns computed first, in order (``bindings``: column
    name -> SQL, each may use the earlier ones): generated code has no "let", so each value
    the predicate reads several times (a field, its type name, its number) is one column."""

    sql: str
    bindings: dict[str, str]


def quick_pattern_sql(
    compiled: CompiledPattern, child: ChildAccessor, *, native_reads: bool = False
) -> QuickPredicate | None:
    """Lambda-free SQL that decides most events: the predicate of :func:`pattern_sql` when
    no array lies along the pattern's fields, NULL when one does (the full predicate must
    then decide). None when :func:`pattern_sql` has no fast path (large patterns).

    It is the fast path of :func:`pattern_sql` with every array branch replaced by NULL.
    Node-level results are only combined with AND, OR, NOT and CASE, so by three-valued
    logic a non-NULL result does not depend on the replaced branches: it equals the full
    predicate's.

    With ``native_reads`` the values are read with Sluice's Spark functions (the session
    must have them, :func:`pipelines.native.native_functions`): a member with ``field``, a
    string's text with ``text``, a number with ``number``, and a value's kind mostly from
    those two (``schema_of_variant`` only for values that are neither). (A session with
    them filters with :func:`native_pattern_sql` instead: :func:`filter_by_pattern` uses
    the quick predicate with built-in reads only.)
    """
    compiler = _Compiler(child, FAST_PATH_LEVELS, quick=True, native_reads=native_reads)
    sql = _any([compiler.rule(rule) for rule in compiled.rules])
    if len(sql) > FAST_PATH_MAX_SQL:
        return None
    return QuickPredicate(sql, {name: value for value, name in compiler.bindings.items()})


def variant_child(node: str, key: str) -> str:
    """SQL for field ``key`` of the VARIANT ``node``; NULL if absent or not an object."""
    if '"' not in key:
        path = '$["' + key + '"]'
    elif "'" not in key:
        path = "$['" + key + "']"
    else:  # a key holding both quote characters cannot be written as a variant path
        fields = f"try_variant_get({node}, '$', 'map<string,variant>')"
        return f"try_element_at({fields}, {sql_string(key)})"
    return f"try_variant_get({node}, {sql_string(path)}, 'variant')"


def _all(conditions: Sequence[str]) -> str:
    return "(" + " AND ".join(conditions) + ")" if conditions else "true"


def _any(conditions: Sequence[str]) -> str:
    return "(" + " OR ".join(conditions) + ")" if conditions else "false"


@dataclass(frozen=True)
class _Scope:
    """Where SQL is generated: inside a lambda (interpreted) or not; fast-path levels left."""

    lambdas: bool
    fast_levels: int

    def deeper(self) -> _Scope:
        """One nesting level down on the fast path."""
        return replace(self, fast_levels=max(self.fast_levels - 1, 0))

    def general(self) -> _Scope:
        """Inside an array: lambdas only, so the expression grows linearly with the pattern."""
        return _Scope(lambdas=True, fast_levels=0)


class _Compiler:
    """Generates the SQL of one pattern; lambda variables get fresh names (``__v1``, ...)."""

    def __init__(
        self,
        child: ChildAccessor,
        fast_path_levels: int,
        quick: bool = False,
        native_reads: bool = False,
    ) -> None:
        self._child = child
        self._fast_path_levels = fast_path_levels
        self._quick = quick  # arrays (and levels past the fast path) are left undecided (NULL)
        self._native = quick and native_reads  # the quick predicate reads with pipelines.native
        self._names: Iterator[int] = itertools.count(1)
        self.bindings: dict[str, str] = {}
        """Quick mode: SQL -> name of the column computed once that holds it."""

    def bound(self, sql: str) -> str:
        """``sql``, or in quick mode a reference to a column holding it (see QuickPredicate)."""
        if not self._quick or _COLUMN.fullmatch(sql):
            return sql
        name = self.bindings.setdefault(sql, f"{_BINDING_PREFIX}{len(self.bindings) + 1}")
        return f"`{name}`"

    def kind(self, value: str) -> str:
        """SQL for the type name of ``value`` (``schema_of_variant``; with native reads its
        first word only, ``kind``: callers test ``STRING``, ``VOID``, ``BOOLEAN`` exactly and
        numbers, objects and arrays by prefix)."""
        return self.bound(native.kind(value) if self._native else _kind(value))

    def text(self, value: str) -> str:
        """SQL for the text of a string ``value`` (callers test its kind first)."""
        return self.bound(native.text(value) if self._native else _string(value))

    def number(self, value: str) -> str:
        """SQL for a number ``value`` as a DOUBLE (callers test its kind first)."""
        return self.bound(native.number(value) if self._native else _double(value))

    def child_of(self, node: str, key: str) -> str:
        """SQL for the member ``key`` of ``node`` (see :func:`variant_child`)."""
        return native.field(node, key) if self._native else variant_child(node, key)

    def is_leaf(self, value: str) -> str:
        return f"coalesce({_is_leaf_kind(self.kind(value))}, false)"

    def var(self) -> str:
        return f"__v{next(self._names)}"

    def rule(self, rule: Rule) -> str:
        steps = _rule_steps(rule)
        scope = _Scope(lambdas=False, fast_levels=self._fast_path_levels)
        return self._element_steps(self._child, None, steps, scope)

    def _element_steps(
        self, child: ChildAccessor, element: str | None, steps: _RelativeSteps, scope: _Scope
    ) -> str:
        """Steps that hold inside one element: leaf steps on it, the others per child key."""
        conditions = [self._leaf_step(element, step, scope) for path, step in steps if not path]
        conditions.extend(
            self._node_steps(child(key), group, scope)
            for key, group in _by_first_key(steps).items()
        )
        return _all(conditions)

    def _node_steps(self, node: str, steps: _RelativeSteps, scope: _Scope) -> str:
        """Steps below one node. Non-array nodes (the common case) take a lambda-free path."""
        first_value = next((i for i, (_, s) in enumerate(steps) if not s.absent), len(steps))
        absent, pinned = steps[:first_value], steps[first_value:]
        is_array = _is_array(node)
        if self._quick:
            node = self.bound(node)
            array_steps = _UNDECIDED
            is_array = _is_array(node)
            if self._native or all(not path for path, _ in steps):
                # Leaf tests on this node read its type name anyway; native kinds are cheap.
                is_array = f"startswith({self.kind(node)}, 'ARRAY')"
        else:
            array_steps = self._array_node_steps(node, absent, pinned, scope.general())
        if not scope.fast_levels:
            return array_steps
        value_steps = self._value_node_steps(node, absent, pinned, scope.deeper())
        return f"CASE WHEN {is_array} THEN {array_steps} ELSE {value_steps} END"

    def _value_node_steps(
        self, node: str, absent: _RelativeSteps, pinned: _RelativeSteps, scope: _Scope
    ) -> str:
        conditions = [f"NOT {self._value_has_leaf(node, path, scope)}" for path, _ in absent]
        if pinned:
            child = partial(self.child_of, node)
            conditions.append(self._element_steps(child, node, pinned, scope))
        return _all(conditions)

    def _array_node_steps(
        self, node: str, absent: _RelativeSteps, pinned: _RelativeSteps, scope: _Scope
    ) -> str:
        if not absent:  # the usual case: no need to bind the crushed elements
            return self._pinned_in_some_element(self._crush(node), pinned, scope)
        elements = self.var()
        conditions = [
            f"NOT {self._elements_have_leaf(elements, path, scope)}" for path, _ in absent
        ]
        if pinned:
            conditions.append(self._pinned_in_some_element(elements, pinned, scope))
        # Bind the crushed elements once: exists over a one-element array is a "let".
        return f"exists(array({self._crush(node)}), {elements} -> {_all(conditions)})"

    def _pinned_in_some_element(self, elements: str, pinned: _RelativeSteps, scope: _Scope) -> str:
        e = self.var()
        body = self._element_steps(partial(variant_child, e), e, pinned, scope)
        return f"exists({elements}, {e} -> {body})"

    def _crush(self, node: str, depth: int = MAX_ARRAY_NESTING - 1) -> str:
        """``array<variant>``: the flattened elements of an array node, else ``[node]``.

        A NULL node gives ``[NULL]``; every predicate treats a NULL element as "no value".
        """
        array = f"try_variant_get({node}, '$', 'array<variant>')"
        if depth > 0:
            e = self.var()
            array = f"flatten(transform({array}, {e} -> {self._crush(e, depth - 1)}))"
        return f"coalesce({array}, array({node}))"

    def _node_has_leaf(self, node: str, path: FieldPath, scope: _Scope) -> str:
        """Whether any leaf value lies at ``path`` below ``node`` (in any array element)."""
        if self._quick:
            array_case = _UNDECIDED
        else:
            array_case = self._elements_have_leaf(self._crush(node), path, scope.general())
        if not scope.fast_levels:
            return array_case
        value_case = self._value_has_leaf(node, path, scope.deeper())
        return f"CASE WHEN {_is_array(node)} THEN {array_case} ELSE {value_case} END"

    def _value_has_leaf(self, node: str, path: FieldPath, scope: _Scope) -> str:
        if not path:
            return self.is_leaf(node)
        return self._node_has_leaf(self.child_of(node, path[0]), path[1:], scope)

    def _elements_have_leaf(self, elements: str, path: FieldPath, scope: _Scope) -> str:
        e = self.var()
        if not path:
            return f"exists({elements}, {e} -> {_is_leaf(e)})"
        inner = self._node_has_leaf(variant_child(e, path[0]), path[1:], scope)
        return f"exists({elements}, {e} -> {inner})"

    def _leaf_step(self, element: str | None, step: Step, scope: _Scope) -> str:
        if element is None:  # the parser never yields a step without a field name
            raise ValueError("a pattern step must name a field")
        if step.absent:
            return f"NOT {self.is_leaf(element)}"
        if not scope.lambdas or len(step.matchers) == 1:
            # Outside lambdas the quick predicate reads the kind from a column computed once
            # (QuickPredicate); elsewhere each matcher reads it, and matchers keep their
            # reads few (see any_matcher).
            return self.any_matcher(step.matchers, element, self.kind(element))
        kind = self.var()
        matched = self.any_matcher(step.matchers, element, kind)
        # Lambdas are interpreted: bind the value's kind once for all matchers of the step.
        return f"exists(array({_kind(element)}), {kind} -> {matched})"

    def any_matcher(self, matchers: Sequence[Matcher], value: str, kind: str) -> str:
        """Never-NULL SQL accepting the leaf ``value`` when any of ``matchers`` does.

        Exact strings are tested together with one ``IN`` (one read of the value and its
        kind instead of one per string).
        """
        strings = [m.value for m in matchers if isinstance(m, ExactString)]
        others = [self.matcher(m, value, kind) for m in matchers if not isinstance(m, ExactString)]
        if len(strings) < 2:
            return _any([self.matcher(m, value, kind) for m in matchers])
        listed = ", ".join(sql_string(text) for text in strings)
        text = self.text(value)
        in_strings = f"coalesce(({kind} = 'STRING' AND {text} IN ({listed})), false)"
        return _any([in_strings, *others])

    def matcher(self, matcher: Matcher, value: str, kind: str) -> str:
        """Never-NULL SQL accepting the leaf ``value`` whose ``schema_of_variant`` is ``kind``."""
        return f"coalesce({_MATCHER_SQL[type(matcher)](self, matcher, value, kind)}, false)"


def _is_array(value: str) -> str:
    return f"(try_variant_get({value}, '$', 'array<variant>') IS NOT NULL)"


def _kind(value: str) -> str:
    """The value's type name (``STRING``, ``BIGINT``, ``DECIMAL(4,1)``, ``OBJECT<...>``, ...)."""
    return f"schema_of_variant({value})"


def _is_leaf(value: str) -> str:
    return f"coalesce({_is_leaf_kind(_kind(value))}, false)"


def _is_leaf_kind(kind: str) -> str:
    # startswith: no substring per value (these run for every field of every event)
    return f"(NOT (startswith({kind}, 'OBJECT') OR startswith({kind}, 'ARRAY')))"


def _string(value: str) -> str:
    return f"try_variant_get({value}, '$', 'string')"


def _double(value: str) -> str:
    return f"try_variant_get({value}, '$', 'double')"


def _is_number(kind: str) -> str:
    return f"({kind} IN {_NUMBER_KINDS} OR startswith({kind}, 'DECIMAL'))"


def _exact_string(compiler: _Compiler, matcher: ExactString, value: str, kind: str) -> str:
    text = compiler.text(value)
    return f"({kind} = 'STRING' AND {text} = {sql_string(matcher.value)})"


def _exact_number(compiler: _Compiler, matcher: ExactNumber, value: str, kind: str) -> str:
    number = compiler.number(value)
    return f"({_is_number(kind)} AND {number} = {sql_double(matcher.value)})"


def _exact_literal(_: _Compiler, matcher: ExactLiteral, value: str, kind: str) -> str:
    if matcher.value is None:
        return f"({kind} = 'VOID')"
    literal = "true" if matcher.value else "false"
    return f"({kind} = 'BOOLEAN' AND try_variant_get({value}, '$', 'boolean') = {literal})"


def _ip_range(compiler: _Compiler, matcher: IpRange, value: str, kind: str) -> str:
    text = compiler.var()
    key_of_text = ip_key(text, matcher.low.version)
    key = f"element_at(transform(array({compiler.text(value)}), {text} -> {key_of_text}), 1)"
    low, high = sql_string(matcher.low.key), sql_string(matcher.high.key)
    return f"({kind} = 'STRING' AND {key} BETWEEN {low} AND {high})"


def _affix(compiler: _Compiler, matcher: Prefix | Suffix, value: str, kind: str) -> str:
    text, affix = compiler.text(value), sql_string(matcher.value)
    if matcher.ignore_case:
        text, affix = f"lower({text})", f"lower({affix})"
    function = "startswith" if isinstance(matcher, Prefix) else "endswith"
    return f"({kind} = 'STRING' AND {function}({text}, {affix}))"


def _equals_ignore_case(
    compiler: _Compiler, matcher: EqualsIgnoreCase, value: str, kind: str
) -> str:
    expected = sql_string(matcher.value)
    return f"({kind} = 'STRING' AND lower({compiler.text(value)}) = lower({expected}))"


def _wildcard(compiler: _Compiler, matcher: Wildcard, value: str, kind: str) -> str:
    return f"({kind} = 'STRING' AND {wildcard_sql(matcher.segments, compiler.text(value))})"


def wildcard_sql(segments: Sequence[str], text: str) -> str:
    """SQL: the string ``text`` matches the wildcard of literal ``segments`` (NULL when
    ``text`` is NULL), by the algorithm of ``matchers.wildcard_matches`` and without a regular
    expression (``LIKE`` and ``rlike`` run Java's backtracking regex engine: ``*a*a*a*b``
    takes minutes on a few thousand characters).

    ``text`` must start with the first segment and end with the last one without overlap;
    each middle segment is found with ``locate`` from where the previous one ended, and the
    last one must end where the suffix may start. The positions are chained in one nested
    expression that names each position once (``nullif`` or ``CASE`` would repeat it, and
    Spark's generated code would double at each level). So that a missing segment cannot
    restart the search at the beginning, the search runs in ``text`` followed by every middle
    segment: each segment is then always found, at worst in that tail, past the end of
    ``text``, and the final check fails. ``text`` is read once per segment (a quick predicate
    binds it to a column); the nesting is bounded by ``MAX_WILDCARD_STARS``.
    """
    if len(segments) == 1:
        return f"{text} = {sql_string(segments[0])}"
    first, *middle, last = segments
    conditions = []
    if first:
        conditions.append(f"startswith({text}, {sql_string(first)})")
    if last:
        conditions.append(f"endswith({text}, {sql_string(last)})")
    if middle:
        searched = f"concat({text}, {sql_string(''.join(middle))})"
        end = str(len(first) + 1)  # 1-based position just after the segments found so far
        for segment in middle:
            end = f"locate({sql_string(segment)}, {searched}, {end}) + {len(segment)}"
        conditions.append(f"{end} + {len(last)} <= char_length({text}) + 1")
    elif first and last:
        conditions.append(f"char_length({text}) >= {len(first) + len(last)}")
    return _all(conditions)


def _numeric_range(compiler: _Compiler, matcher: NumericRange, value: str, kind: str) -> str:
    # Bounds are finite (the parser refuses others) and Spark orders NaN above +Infinity, so
    # two comparisons, a missing bound being a strict infinity, also refuse NaN and both
    # infinities: the value is read twice instead of four times.
    number = compiler.number(value)
    if matcher.lower is None:
        above = f"{number} > double('-inf')"
    else:
        above = f"{number} {'>=' if matcher.lower_inclusive else '>'} {sql_double(matcher.lower)}"
    if matcher.upper is None:
        below = f"{number} < double('inf')"
    else:
        below = f"{number} {'<=' if matcher.upper_inclusive else '<'} {sql_double(matcher.upper)}"
    return _all([_is_number(kind), above, below])


def _anything_but(compiler: _Compiler, matcher: AnythingBut, value: str, kind: str) -> str:
    excluded = compiler.any_matcher(matcher.excluded, value, kind)
    return f"({_is_leaf_kind(kind)} AND NOT {excluded})"


def _exists(_: _Compiler, matcher: Exists, value: str, kind: str) -> str:
    return _is_leaf_kind(kind)


_MATCHER_SQL: dict[type[Matcher], Callable[[_Compiler, Any, str, str], str]] = {
    ExactString: _exact_string,
    ExactNumber: _exact_number,
    ExactLiteral: _exact_literal,
    IpRange: _ip_range,
    Prefix: _affix,
    Suffix: _affix,
    EqualsIgnoreCase: _equals_ignore_case,
    Wildcard: _wildcard,
    NumericRange: _numeric_range,
    AnythingBut: _anything_but,
    Exists: _exists,
}
"""Matcher type -> SQL generator. Every matcher of ``pipelines.spec.patterns`` is here."""


def ip_key(text: str, version: int) -> str:
    """SQL for the key of an IP address string of one version (``parse_ip(text).key``).

    NULL when ``text`` is not an address of that version. ``text`` must be a cheap expression
    (a lambda variable): it is repeated. Addresses are recognized by the same regular
    expressions as ``parse_ip``; an IPv6 ``::`` is expanded by counting the groups present.
    """
    if version == 4:
        octets = ", ".join(
            f"lpad(hex(try_cast(split_part({text}, '.', {i}) AS INT)), 2, '0')" for i in range(1, 5)
        )
        return f"CASE WHEN {_full_match(text, IPV4_REGEX)} THEN concat('4:', {octets}) END"
    zeros = f"repeat('0:', 8 - regexp_count({text}, '[0-9a-fA-F]+'))"
    expanded = f"regexp_replace(replace({text}, '::', concat(':', {zeros})), '^:|:$', '')"
    groups = f"split(CASE WHEN contains({text}, '::') THEN {expanded} ELSE {text} END, ':')"
    digits = f"upper(array_join(transform({groups}, __g -> lpad(__g, 4, '0')), ''))"
    return f"CASE WHEN {_full_match(text, IPV6_REGEX)} THEN concat('6:', {digits}) END"


def _full_match(text: str, regex: str) -> str:
    """Java-regex twin of ``re.fullmatch`` (``$`` alone would accept a trailing newline)."""
    return f"rlike({text}, {sql_string('^(?:' + regex + ')' + BACKSLASH + 'z')})"
