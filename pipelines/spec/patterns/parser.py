"""Validate an EventBridge event pattern and compile it into rules, as aws/event-ruler does.

Structure (event-ruler's ``JsonRuleCompiler``): a pattern is a non-empty JSON object whose
values are non-empty objects (nesting follows the event) or non-empty arrays of match values.
A match value is a string, number, ``true``, ``false``, ``null`` or an operator object holding
exactly one operator. ``"$or": [{...}, {...}, ...]`` (two objects or more) forks the rule: each
branch yields one rule holding the fields parsed so far, the branch's fields and the fields
that follow. A field set twice in one rule keeps the later value, as in event-ruler.

A plain string that is an IP address literal matches that address in any notation (event-ruler
turns it into a one-address CIDR range); ``{"exactly": "..."}`` forces text equality.

Patterns are bounded (size, depth, string length, values, rules, wildcards): the limits and
their values are in ``limits.py``. Size and depth are checked first, without recursion, so
that no pattern can exhaust the parser.
"""

from __future__ import annotations

import itertools
import json
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any, TypeVar

from pipelines.spec.patterns.ip import parse_cidr, parse_ip
from pipelines.spec.patterns.limits import (
    MAX_COMPILED_MATCHERS,
    MAX_MATCH_VALUES,
    MAX_PATTERN_BYTES,
    MAX_PATTERN_DEPTH,
    MAX_RULES,
    MAX_STRING_LENGTH,
    MAX_WILDCARD_STARS,
    MAX_WILDCARDS,
)
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
    as_double,
    is_json_number,
)
from pipelines.spec.patterns.model import CompiledPattern, FieldPath, PatternError, Rule, Step

OR_KEYWORD = "$or"

RESERVED_IN_OR = frozenset(
    {
        "exactly", "equals-ignore-case", "prefix", "suffix", "anything-but", "exists",
        "wildcard", "numeric", "cidr", "html", "=", "<", "<=", ">", ">=", "regex",
        "not-wildcard", "not-equals-ignore-case", "date-after", "date-on-or-after",
        "date-before", "date-on-or-before", "in-date-range", "ip-address-in-range",
        "ip-address-not-in-range",
    }
)  # fmt: skip
"""Field names event-ruler refuses inside ``$or`` branches (operators and reserved words)."""

_ABSENT = object()  # what the parser of {"exists": false} returns
_EXAMPLE_RANGE = '[">", 0, "<=", 5]'

Report = Callable[[str, str], None]
NumberMatcher = TypeVar("NumberMatcher", bound=Matcher)
OperatorResult = Matcher | object | None  # a matcher, _ABSENT, or None after a reported error


@dataclass(frozen=True)
class _Field:
    """The parsed value array of one field: its matchers and whether absence is accepted."""

    matchers: tuple[Matcher, ...]
    absent: bool


_Draft = dict[FieldPath, _Field]


def compile_pattern(pattern: Any) -> CompiledPattern:
    """Validate ``pattern`` and compile it.

    Raises :class:`PatternError` listing every problem found (not only the first one).
    """
    parser = _Parser()
    drafts = parser.parse(pattern)
    rules = () if parser.problems else _expand(drafts, parser.report)
    if parser.problems:
        raise PatternError(parser.problems)
    return CompiledPattern(rules=rules)


def _expand(drafts: list[_Draft], report: Report) -> tuple[Rule, ...]:
    """Turn drafts into sorted rules; a field accepting values *or* absence forks the rule."""
    rules: dict[Rule, None] = {}
    compiled = 0
    for draft in drafts:
        alternatives = [_field_steps(path, parsed) for path, parsed in draft.items()]
        for combination in itertools.product(*alternatives):
            rule = Rule(tuple(sorted(combination, key=lambda step: step.sort_key)))
            if rule in rules:
                continue
            rules[rule] = None
            if len(rules) > MAX_RULES:
                report("", f"the pattern expands to more than {MAX_RULES} alternatives")
                return ()
            compiled += sum(_matcher_count(m) for step in rule.steps for m in step.matchers)
            if compiled > MAX_COMPILED_MATCHERS:
                report(
                    "",
                    f"the pattern expands to more than {MAX_COMPILED_MATCHERS:,} matchers over "
                    f"its {len(rules)} alternatives (each $or branch repeats the fields it "
                    f"shares); the limit is {MAX_COMPILED_MATCHERS:,}",
                )
                return ()
    return tuple(rules)


def _matcher_count(matcher: Matcher) -> int:
    """How many match values a matcher holds: one, plus one per value an anything-but excludes."""
    if isinstance(matcher, AnythingBut):
        return 1 + len(matcher.excluded)
    return 1


def _wildcard_count(matcher: Matcher) -> int:
    if isinstance(matcher, AnythingBut):
        return sum(isinstance(excluded, Wildcard) for excluded in matcher.excluded)
    return int(isinstance(matcher, Wildcard))


def _field_steps(path: FieldPath, parsed: _Field) -> list[Step]:
    steps = [Step(path, parsed.matchers)] if parsed.matchers else []
    if parsed.absent:
        steps.append(Step(path, absent=True))
    return steps


def _at(loc: str, key: str) -> str:
    return f"{loc}.{key}" if loc else key


def _kind(value: Any) -> str:
    """Name a JSON value's type for messages."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    if is_json_number(value):
        return "a number"
    if isinstance(value, str):
        return "a string"
    if isinstance(value, list):
        return "an array"
    if isinstance(value, dict):
        return "an object"
    return type(value).__name__


def _shape_problems(pattern: Any) -> tuple[list[tuple[str, str]], bool]:
    """Problems with the pattern's depth, size and string lengths, found without recursion.

    Returns the problems and whether they are fatal (too deep or too large: the pattern is
    not parsed further). Too deep stops the walk at the first container past the limit.
    """
    problems: list[tuple[str, str]] = []
    stack: list[tuple[Any, str, int, Any]] = [(pattern, "", 1, None)]  # value, loc, depth, key
    while stack:
        value, loc, depth, key = stack.pop()
        if isinstance(key, str) and len(key) > MAX_STRING_LENGTH:
            problems.append((loc, _too_long("a field name", key)))
        if isinstance(value, dict | list) and depth > MAX_PATTERN_DEPTH:
            return [(loc, _TOO_DEEP)], True
        if isinstance(value, dict):
            children = [
                (child, _at(loc, name) if isinstance(name, str) else loc, depth + 1, name)
                for name, child in value.items()
            ]
            stack.extend(reversed(children))
        elif isinstance(value, list):
            stack.extend(
                (child, f"{loc}[{index}]", depth + 1, None)
                for index, child in reversed(list(enumerate(value)))
            )
        elif isinstance(value, str) and len(value) > MAX_STRING_LENGTH:
            problems.append((loc, _too_long("a string", value)))
    size = len(json.dumps(pattern, ensure_ascii=False, separators=(",", ":"), default=str).encode())
    if size > MAX_PATTERN_BYTES:
        limit = f"the limit is {MAX_PATTERN_BYTES:,} bytes"
        return [("", f"the pattern is {size:,} bytes long as compact JSON; {limit}")], True
    return problems, False


_TOO_DEEP = f"objects and arrays are nested too deeply; the limit is {MAX_PATTERN_DEPTH} levels"


def _too_long(what: str, text: str) -> str:
    return f"{what} of {len(text):,} characters; the limit is {MAX_STRING_LENGTH:,} characters"


class _Parser:
    """Walks a pattern, collecting problems and rule drafts (event-ruler's rule maps)."""

    def __init__(self) -> None:
        self.problems: list[tuple[str, str]] = []
        self._match_values = 0
        self._wildcards = 0

    def report(self, loc: str, message: str) -> None:
        self.problems.append((loc, message))

    def parse(self, pattern: Any) -> list[_Draft]:
        problems, fatal = _shape_problems(pattern)
        self.problems.extend(problems)
        if fatal:
            return []
        if not isinstance(pattern, dict):
            self.report("", f"a pattern must be a JSON object, got {_kind(pattern)}")
            return []
        return self._object(pattern, (), "", [], in_or=False)

    def _count(self, matcher: Matcher, loc: str) -> None:
        """Count a field's matcher against the pattern-wide limits; report the one crossing them."""
        before = self._match_values
        self._match_values += _matcher_count(matcher)
        if before <= MAX_MATCH_VALUES < self._match_values:
            self.report(
                loc,
                f"too many match values: the limit is {MAX_MATCH_VALUES:,} per pattern "
                "(each value of a field counts one, each value an anything-but lists one more)",
            )
        before = self._wildcards
        self._wildcards += _wildcard_count(matcher)
        if before <= MAX_WILDCARDS < self._wildcards:
            self.report(loc, f"too many wildcards: the limit is {MAX_WILDCARDS} per pattern")

    def _object(
        self, obj: dict[Any, Any], path: FieldPath, loc: str, drafts: list[_Draft], *, in_or: bool
    ) -> list[_Draft]:  # any keys: a pattern may come from Python, not only from JSON
        if not obj:
            self.report(loc, "empty objects are not allowed" if loc else "a pattern needs a field")
        for key, value in obj.items():
            if not isinstance(key, str):
                self.report(loc, f"field names must be strings, got {key!r}")
                continue
            key_loc = _at(loc, key)
            if key == OR_KEYWORD:
                drafts = self._or(value, path, key_loc, drafts)
                continue
            if in_or and key in RESERVED_IN_OR:
                self.report(key_loc, f"{key!r} is reserved and cannot be a field name inside $or")
            if isinstance(value, dict):
                drafts = self._object(value, (*path, key), key_loc, drafts, in_or=in_or)
            elif isinstance(value, list):
                parsed = self._values(value, key_loc)
                drafts = [{**draft, (*path, key): parsed} for draft in drafts or [{}]]
            else:
                self.report(key_loc, _not_a_field_value(value))
            if len(drafts) > MAX_RULES:
                self.report(loc, f"the pattern expands to more than {MAX_RULES} alternatives")
                return drafts[:MAX_RULES]
        return drafts

    def _or(self, value: Any, path: FieldPath, loc: str, drafts: list[_Draft]) -> list[_Draft]:
        if not isinstance(value, list) or len(value) < 2:
            self.report(
                loc, f"$or must be an array of at least two objects, got {_describe(value)}"
            )
            return drafts
        forked: list[_Draft] = []
        for index, branch in enumerate(value):
            branch_loc = f"{loc}[{index}]"
            if not isinstance(branch, dict):
                self.report(branch_loc, f"each $or branch must be an object, got {_kind(branch)}")
                continue
            start = [dict(draft) for draft in drafts] or [{}]
            forked.extend(self._object(branch, path, branch_loc, start, in_or=True))
        return forked

    def _values(self, values: list[Any], loc: str) -> _Field:
        if not values:
            self.report(loc, "empty arrays are not allowed; list at least one match value")
        matchers: list[Matcher] = []
        absent = False
        for index, value in enumerate(values):
            result = self._value(value, f"{loc}[{index}]")
            if result is _ABSENT:
                absent = True
            elif isinstance(result, Matcher):
                self._count(result, f"{loc}[{index}]")
                matchers.append(result)
        return _Field(tuple(dict.fromkeys(matchers)), absent)

    def _value(self, value: Any, loc: str) -> OperatorResult:
        if value is None or isinstance(value, bool):
            return ExactLiteral(value)
        if isinstance(value, str):
            address = parse_ip(value)
            return IpRange(address, address) if address else ExactString(value)
        if is_json_number(value):
            return _number(value, loc, self.report, ExactNumber)
        if isinstance(value, dict):
            return self._operator(value, loc)
        self.report(
            loc,
            "match values must be strings, numbers, true, false, null or operator objects, "
            f"got {_kind(value)}",
        )
        return None

    def _operator(self, expression: dict[str, Any], loc: str) -> OperatorResult:
        if len(expression) != 1:
            found = ", ".join(expression) or "nothing"
            self.report(loc, f"an operator object holds exactly one operator, found: {found}")
            return None
        ((name, operand),) = expression.items()
        parse_operand = OPERATORS.get(name)
        if parse_operand is None:
            expected = ", ".join(OPERATORS)
            self.report(_at(loc, name), f"unknown operator {name!r}; expected one of: {expected}")
            return None
        return parse_operand(operand, _at(loc, name), self.report)


def _not_a_field_value(value: Any) -> str:
    message = f"must be an object or an array of match values, got {_kind(value)}"
    if value is None or isinstance(value, str | int | float | bool):
        message += f"; write [{json.dumps(value)}] to match that value"
    return message


def _describe(value: Any) -> str:
    if isinstance(value, list):
        return f"an array of {len(value)}"
    return _kind(value)


def _number(
    value: Any, loc: str, report: Report, build: Callable[[float], NumberMatcher]
) -> NumberMatcher | None:
    """Build a number matcher; event-ruler refuses numbers a double cannot hold exactly."""
    number = as_double(value)
    if number is None:
        report(loc, f"{value!r} is out of the range of a double")
        return None
    if isinstance(value, int) and int(number) != value:
        report(loc, f"{value} cannot be compared exactly (more digits than a double holds)")
        return None
    return build(number)


def _string_operand(operand: Any, loc: str, report: Report, operator: str) -> str | None:
    if isinstance(operand, str):
        return operand
    report(loc, f"{operator} takes a string, got {_kind(operand)}")
    return None


def _exactly(operand: Any, loc: str, report: Report) -> OperatorResult:
    text = _string_operand(operand, loc, report, "exactly")
    return None if text is None else ExactString(text)


def _equals_ignore_case(operand: Any, loc: str, report: Report) -> OperatorResult:
    text = _string_operand(operand, loc, report, "equals-ignore-case")
    return None if text is None else EqualsIgnoreCase(text)


def _affix(matcher: type[Prefix] | type[Suffix], name: str) -> Callable[..., OperatorResult]:
    """Parser for prefix/suffix: a string, or {"equals-ignore-case": string}."""

    def parse(operand: Any, loc: str, report: Report) -> OperatorResult:
        if isinstance(operand, str):
            return matcher(operand)
        if isinstance(operand, dict) and list(operand) == ["equals-ignore-case"]:
            text = _string_operand(operand["equals-ignore-case"], loc, report, name)
            return None if text is None else matcher(text, ignore_case=True)
        report(
            loc, f'{name} takes a string or {{"equals-ignore-case": string}}, got {_kind(operand)}'
        )
        return None

    return parse


def wildcard_segments(text: str) -> tuple[str, ...]:
    """Parse a wildcard into the literal segments around its unescaped ``*`` characters.

    ``\\*`` is a literal ``*`` and ``\\\\`` a literal backslash (event-ruler's escapes); there
    is one more segment than stars: ``"a*b\\*c*"`` gives ``("a", "b*c", "")``. Raises
    ``ValueError`` on ``**`` or on a backslash that escapes neither ``*`` nor ``\\``.
    """
    segments: list[str] = []
    literal: list[str] = []
    chars = iter(enumerate(text))
    for position, char in chars:
        if char == "*":
            if text[position + 1 : position + 2] == "*":
                raise ValueError(f"consecutive wildcard characters at position {position}")
            segments.append("".join(literal))
            literal = []
        elif char == "\\":
            escaped = next(chars, (position, ""))[1]
            if escaped not in ("*", "\\"):
                raise ValueError(
                    f"invalid escape at position {position}: only \\* and \\\\ are allowed"
                )
            literal.append(escaped)
        else:
            literal.append(char)
    segments.append("".join(literal))
    return tuple(segments)


def _wildcard_matcher(text: str, loc: str, report: Report) -> Matcher | None:
    try:
        segments = wildcard_segments(text)
    except ValueError as error:
        report(loc, f"invalid wildcard {text!r}: {error}")
        return None
    stars = len(segments) - 1
    if stars > MAX_WILDCARD_STARS:
        report(
            loc,
            f"the wildcard has {stars} * characters; the limit is {MAX_WILDCARD_STARS} per "
            "wildcard",
        )
        return None
    return Wildcard(text, segments)


def _wildcard(operand: Any, loc: str, report: Report) -> OperatorResult:
    text = _string_operand(operand, loc, report, "wildcard")
    return None if text is None else _wildcard_matcher(text, loc, report)


def _exists(operand: Any, loc: str, report: Report) -> OperatorResult:
    if isinstance(operand, bool):
        return Exists() if operand else _ABSENT
    report(loc, f"exists takes true or false, got {_kind(operand)}")
    return None


def _cidr(operand: Any, loc: str, report: Report) -> OperatorResult:
    text = _string_operand(operand, loc, report, "cidr")
    if text is None:
        return None
    try:
        return IpRange(*parse_cidr(text))
    except ValueError as error:
        report(loc, str(error))
        return None


def _numeric(operand: Any, loc: str, report: Report) -> OperatorResult:
    if not isinstance(operand, list) or len(operand) not in (2, 4):
        report(loc, f'numeric takes ["<op>", number] or a range like {_EXAMPLE_RANGE}')
        return None
    checked = [_numeric_bound(operand, index, loc, report) for index in range(0, len(operand), 2)]
    bounds = [bound for bound in checked if bound is not None]
    if len(bounds) < len(checked):
        return None
    if len(bounds) == 1:
        return _single_bound(*bounds[0])
    (low_op, low), (high_op, high) = bounds
    if low_op not in (">", ">=") or high_op not in ("<", "<="):
        report(loc, f"a numeric range gives the lower bound (> or >=) first, e.g. {_EXAMPLE_RANGE}")
        return None
    if low >= high:
        report(loc, f"the lower bound {low:g} must be less than the upper bound {high:g}")
        return None
    return NumericRange(low, low_op == ">=", high, high_op == "<=")


def _numeric_bound(
    operand: list[Any], index: int, loc: str, report: Report
) -> tuple[str, float] | None:
    operator, number = operand[index], operand[index + 1]
    if operator not in ("=", "<", "<=", ">", ">="):
        report(f"{loc}[{index}]", f"unknown numeric operator {operator!r}; use =, <, <=, > or >=")
        return None
    if not is_json_number(number):
        report(
            f"{loc}[{index + 1}]",
            f"the operand of {operator} must be a number, got {_kind(number)}",
        )
        return None
    matcher = _number(number, f"{loc}[{index + 1}]", report, ExactNumber)
    if matcher is None:
        return None
    if operator == "=" and len(operand) > 2:
        report(loc, "numeric = takes exactly one number")
        return None
    return operator, matcher.value


def _single_bound(operator: str, number: float) -> Matcher:
    if operator == "=":
        return NumericRange(number, True, number, True)
    if operator in (">", ">="):
        return NumericRange(number, operator == ">=", None, False)
    return NumericRange(None, False, number, operator == "<=")


_ANYTHING_BUT_OBJECT_OPERATORS = ("prefix", "suffix", "equals-ignore-case", "wildcard")
_ANYTHING_BUT_HELP = (
    "anything-but takes a string, a number, an array of strings or of numbers, or an object "
    'with one of: prefix, suffix, equals-ignore-case, wildcard (e.g. {"prefix": "init"})'
)


def _anything_but(operand: Any, loc: str, report: Report) -> OperatorResult:
    if isinstance(operand, dict):
        return _anything_but_object(operand, loc, report)
    values = operand if isinstance(operand, list) else [operand]
    strings = all(isinstance(value, str) for value in values)
    numbers = all(is_json_number(value) for value in values)
    if not isinstance(operand, list) and not (strings or numbers):
        report(loc, _ANYTHING_BUT_HELP)
        return None
    if not values or not (strings or numbers):
        report(loc, "anything-but arrays hold only strings or only numbers (not mixed, not empty)")
        return None
    if strings:
        return AnythingBut(tuple(ExactString(value) for value in values))
    numbers_excluded = [
        _number(value, f"{loc}[{i}]", report, ExactNumber) for i, value in enumerate(values)
    ]
    excluded = [matcher for matcher in numbers_excluded if matcher is not None]
    if len(excluded) < len(numbers_excluded):
        return None
    return AnythingBut(tuple(excluded))


def _anything_but_object(operand: dict[str, Any], loc: str, report: Report) -> OperatorResult:
    if len(operand) != 1 or next(iter(operand)) not in _ANYTHING_BUT_OBJECT_OPERATORS:
        report(loc, _ANYTHING_BUT_HELP)
        return None
    ((name, inner),) = operand.items()
    inner_loc = _at(loc, name)
    values = inner if isinstance(inner, list) else [inner]
    if not all(isinstance(value, str) for value in values):
        report(inner_loc, f"anything-but {name} takes a string or an array of strings")
        return None
    if name in ("prefix", "suffix") and "" in values:
        report(inner_loc, f"anything-but {name} must not be empty")
        return None
    checked = [_anything_but_excluded(name, value, inner_loc, report) for value in values]
    excluded = [matcher for matcher in checked if matcher is not None]
    if len(excluded) < len(checked):
        return None
    return AnythingBut(tuple(excluded))


def _anything_but_excluded(name: str, value: str, loc: str, report: Report) -> Matcher | None:
    if name == "prefix":
        return Prefix(value)
    if name == "suffix":
        return Suffix(value)
    if name == "equals-ignore-case":
        return EqualsIgnoreCase(value)
    return _wildcard_matcher(value, loc, report)


OPERATORS: dict[str, Callable[[Any, str, Report], OperatorResult]] = {
    "prefix": _affix(Prefix, "prefix"),
    "suffix": _affix(Suffix, "suffix"),
    "equals-ignore-case": _equals_ignore_case,
    "anything-but": _anything_but,
    "numeric": _numeric,
    "exists": _exists,
    "cidr": _cidr,
    "wildcard": _wildcard,
    "exactly": _exactly,
}
"""Operator name -> operand parser. Add an operator here (and its Spark twin)."""


def operator_names() -> Iterable[str]:
    """Names of the supported operators, in documentation order."""
    return tuple(OPERATORS)
