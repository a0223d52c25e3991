"""Patterns as Spark SQL built-in expressions only (for a session without Sluice's
functions): each rule a boolean expression over VARIANT values (``try_variant_get``,
``schema_of_variant`` and higher-order array functions), with a lambda-free fast path for
values that are not arrays (:func:`pattern_sql`) and a quick predicate that decides most
events in generated code (:func:`quick_pattern_sql`).
"""

from __future__ import annotations

import itertools
import re
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, replace
from functools import partial
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
from pipelines.spec.patterns import CompiledPattern, FieldPath, Rule, Step
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

_UNDECIDED = "CAST(NULL AS BOOLEAN)"
_BINDING_PREFIX = "__sluice_q"
_COLUMN = re.compile(r"`[^`]*`")
_NUMBER_KINDS = "('TINYINT', 'SMALLINT', 'INT', 'BIGINT', 'FLOAT', 'DOUBLE')"  # and DECIMAL(p,s)


def pattern_sql(compiled: CompiledPattern, child: ChildAccessor) -> str:
    """SQL text of a compiled pattern's predicate: true when any of its rules matches.

    Large patterns (many ``$or`` alternatives) are compiled without the fast path, which
    roughly triples the text, to keep Spark's analysis time and memory reasonable.
    """
    sql = any_of([_Compiler(child, FAST_PATH_LEVELS).rule(rule) for rule in compiled.rules])
    if len(sql) <= FAST_PATH_MAX_SQL:
        return sql
    return any_of([_Compiler(child, 0).rule(rule) for rule in compiled.rules])


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
    them filters with :func:`~pipelines.patterns.native_sql.native_pattern_sql` instead:
    :func:`~pipelines.patterns.filters.filter_by_pattern` uses the quick predicate with
    built-in reads only.)
    """
    compiler = _Compiler(child, FAST_PATH_LEVELS, quick=True, native_reads=native_reads)
    sql = any_of([compiler.rule(rule) for rule in compiled.rules])
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
        steps = rule_steps(rule)
        scope = _Scope(lambdas=False, fast_levels=self._fast_path_levels)
        return self._element_steps(self._child, None, steps, scope)

    def _element_steps(
        self, child: ChildAccessor, element: str | None, steps: RelativeSteps, scope: _Scope
    ) -> str:
        """Steps that hold inside one element: leaf steps on it, the others per child key."""
        conditions = [self._leaf_step(element, step, scope) for path, step in steps if not path]
        conditions.extend(
            self._node_steps(child(key), group, scope) for key, group in by_first_key(steps).items()
        )
        return all_of(conditions)

    def _node_steps(self, node: str, steps: RelativeSteps, scope: _Scope) -> str:
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
        self, node: str, absent: RelativeSteps, pinned: RelativeSteps, scope: _Scope
    ) -> str:
        conditions = [f"NOT {self._value_has_leaf(node, path, scope)}" for path, _ in absent]
        if pinned:
            child = partial(self.child_of, node)
            conditions.append(self._element_steps(child, node, pinned, scope))
        return all_of(conditions)

    def _array_node_steps(
        self, node: str, absent: RelativeSteps, pinned: RelativeSteps, scope: _Scope
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
        return f"exists(array({self._crush(node)}), {elements} -> {all_of(conditions)})"

    def _pinned_in_some_element(self, elements: str, pinned: RelativeSteps, scope: _Scope) -> str:
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
            return any_of([self.matcher(m, value, kind) for m in matchers])
        listed = ", ".join(sql_string(text) for text in strings)
        text = self.text(value)
        in_strings = f"coalesce(({kind} = 'STRING' AND {text} IN ({listed})), false)"
        return any_of([in_strings, *others])

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
    return all_of(conditions)


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
    return all_of([_is_number(kind), above, below])


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
