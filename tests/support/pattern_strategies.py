"""Hypothesis strategies for event patterns and events, for the differential fuzz test of
the pattern matchers (``tests/unit/pipelines/test_pattern_fuzz_spark.py``).

The alphabets are small on purpose: keys, strings and numbers are drawn from a few values
that the operators' operands are drawn from too, so a random pattern matches a good share
of random events, and nesting (objects four deep, arrays past the three levels the
matchers search) and missing paths are common.
"""

from __future__ import annotations

from typing import Any

from hypothesis import strategies as st

from pipelines.spec.patterns import PatternError, compile_pattern

KEYS = ["a", "b", "c", "A", "a.b"]
"""Field names: case matters (``a`` is not ``A``) and a dot is part of a name."""

TEXTS = ["x", "X", "xy", "yx", "", "x*y", "Été", "été", "10.0.0.1", "10.1.2.3", "::1", "null", "1"]
NUMBERS: list[int | float] = [0, -0.0, 1, 1.0, 2, -0.5, 0.1, 1e300, -1e300, 9007199254740993]
LITERALS: list[Any] = [True, False, None]

MAX_DEPTH = 4
"""Pattern paths and event objects nest at most this many keys deep."""

scalars = st.one_of(
    st.sampled_from(["x", "X", "xy", 1, 0, None, True, "10.0.0.1"]),
    st.sampled_from([*TEXTS, *NUMBERS, *LITERALS]),
)


def _values(depth: int) -> st.SearchStrategy[Any]:
    if depth >= MAX_DEPTH + 1:
        return scalars
    inner = st.deferred(lambda: _values(depth + 1))
    return st.one_of(
        scalars,
        st.dictionaries(st.sampled_from(KEYS), inner, min_size=1, max_size=4),
        st.dictionaries(st.sampled_from(KEYS), inner, min_size=1, max_size=4),
        st.lists(inner, max_size=3),
    )


events = st.dictionaries(st.sampled_from(KEYS), _values(1), min_size=2, max_size=5)
"""Event documents: JSON objects, nested objects and arrays (arrays in arrays past the
three levels the matchers search), every JSON type at the leaves."""

_text = st.sampled_from(TEXTS)
_number = st.sampled_from([n for n in NUMBERS if n != 9007199254740993])  # a double holds it
_texts = st.lists(_text, min_size=1, max_size=3, unique=True)
_numbers = st.lists(_number, min_size=1, max_size=3, unique=True)
_wildcards = st.sampled_from(["x*", "*y", "x*y", "*", "É*", "*x*", "x\\*y", "1*"])
_bound = st.sampled_from([-1e300, -1, -0.5, 0, 0.1, 1, 2, 1e300])
_cidrs = st.sampled_from(["10.0.0.0/8", "10.0.0.1/32", "10.1.0.0/16", "::1/128", "::/0"])


@st.composite
def _numeric(draw: st.DrawFn) -> dict[str, Any]:
    low, high = sorted(draw(st.lists(_bound, min_size=2, max_size=2, unique=True)))
    shape = draw(st.sampled_from(["=", "<", "<=", ">", ">=", "range"]))
    if shape == "=":
        return {"numeric": ["=", low]}
    if shape in ("<", "<="):
        return {"numeric": [shape, high]}
    if shape in (">", ">="):
        return {"numeric": [shape, low]}
    return {
        "numeric": [
            draw(st.sampled_from([">", ">="])),
            low,
            draw(st.sampled_from(["<", "<="])),
            high,
        ]
    }


operators: st.SearchStrategy[Any] = st.one_of(
    _text,
    _number,
    st.sampled_from(LITERALS),
    st.builds(lambda t: {"exactly": t}, _text),
    st.builds(lambda t: {"prefix": t}, _text.filter(bool)),
    st.builds(lambda t: {"suffix": t}, _text.filter(bool)),
    st.builds(lambda t: {"prefix": {"equals-ignore-case": t}}, _text.filter(bool)),
    st.builds(lambda t: {"suffix": {"equals-ignore-case": t}}, _text.filter(bool)),
    st.builds(lambda t: {"equals-ignore-case": t}, _text),
    st.builds(lambda w: {"wildcard": w}, _wildcards),
    st.builds(lambda t: {"anything-but": t}, _text),
    st.builds(lambda t: {"anything-but": t}, _texts),
    st.builds(lambda n: {"anything-but": n}, _number),
    st.builds(lambda n: {"anything-but": n}, _numbers),
    st.builds(lambda t: {"anything-but": {"prefix": t}}, _text.filter(bool)),
    st.builds(lambda t: {"anything-but": {"suffix": t}}, _text.filter(bool)),
    st.builds(lambda t: {"anything-but": {"equals-ignore-case": t}}, _texts),
    st.builds(lambda w: {"anything-but": {"wildcard": w}}, _wildcards),
    _numeric(),
    st.builds(lambda b: {"exists": b}, st.booleans()),
    st.builds(lambda b: {"exists": b}, st.booleans()),
    st.builds(lambda c: {"cidr": c}, _cidrs),
)
"""One match value of a field: every operator and form the pattern language has."""


def _pattern_objects(depth: int) -> st.SearchStrategy[dict[str, Any]]:
    leaf = st.lists(operators, min_size=1, max_size=3)
    nested = st.deferred(lambda: _pattern_objects(depth + 1))
    field = leaf if depth >= MAX_DEPTH else st.one_of(leaf, leaf, leaf, nested)
    fields = st.dictionaries(st.sampled_from(KEYS), field, min_size=1, max_size=2)
    if depth >= 3:
        return fields
    alternatives = st.lists(
        st.deferred(lambda: _pattern_objects(depth + 1)), min_size=2, max_size=2
    )
    with_or = st.builds(lambda f, o: {**f, "$or": o}, fields, alternatives)
    return st.one_of(fields, fields, fields, fields, fields, with_or)


def _valid(pattern: dict[str, Any]) -> bool:
    try:
        compile_pattern(pattern)
    except PatternError:
        return False
    return True


patterns = _pattern_objects(1).filter(_valid)
"""Valid event patterns: fields to four keys deep, one to three match values each, ``$or``
in the upper levels."""


def _operand_values(operator: Any) -> list[Any]:
    """Values an event's field may hold to meet ``operator`` (or to miss it narrowly)."""
    if not isinstance(operator, dict):
        return [operator]
    ((name, operand),) = operator.items()
    if name == "numeric":
        return [n for n in operand if not isinstance(n, str)]
    if name == "cidr":
        return [operand.split("/")[0]]
    if isinstance(operand, dict):  # prefix/suffix ignoring case, anything-but of an operator
        return [text for text in _operand_values(operand) if isinstance(text, str)]
    if isinstance(operand, list):
        return operand
    if isinstance(operand, str):
        if name == "wildcard":
            return [operand.replace("\\*", "*").replace("*", ""), operand.replace("*", "x")]
        return [operand, operand.upper(), operand + "x", "x" + operand]
    return [operand]


@st.composite
def near_events(draw: st.DrawFn, pattern: dict[str, Any], depth: int = 1) -> dict[str, Any]:
    """An event built along ``pattern``'s fields: each one present or left out, holding a
    value the field's operators name (as is, in an array, or beside other values) or a
    random one, with random fields besides; so that many of them match it, and many miss
    it by one field."""
    event: dict[str, Any] = draw(st.dictionaries(st.sampled_from(KEYS), _values(depth), max_size=1))
    branches = [pattern, *pattern.get("$or", [])]
    for branch in branches:
        for key, field in branch.items():
            if key == "$or" or draw(st.integers(0, 9)) == 9:
                continue  # left out (Hypothesis' simplest draw is 0: present)
            if isinstance(field, dict):
                value: Any = draw(near_events(field, depth + 1))
            else:
                candidates = [v for operator in field for v in _operand_values(operator)]
                value = draw(st.sampled_from(candidates)) if candidates else draw(scalars)
                if draw(st.integers(0, 4)) == 4:
                    value = draw(scalars)
            shape = draw(st.integers(0, 7))
            if shape == 5:
                value = [value]
            elif shape == 6:
                value = [draw(_values(depth + 1)), value]
            elif shape == 7:
                value = [[value]]
            event[key] = value
    return event


@st.composite
def _cases(
    draw: st.DrawFn, pattern_strategy: st.SearchStrategy[dict[str, Any]], cloudevent: bool
) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    pattern = draw(pattern_strategy)
    near = draw(st.lists(near_events(pattern), min_size=1, max_size=2))
    return pattern, [event_row(e) for e in near] if cloudevent else near


cases = _cases(patterns, cloudevent=False)
"""A pattern and one or two events near it (:func:`near_events`)."""


cloudevents = st.fixed_dictionaries(
    {"extensions": st.dictionaries(st.sampled_from(KEYS), _values(1), max_size=2)},
    optional={"data": _values(0), "subject": st.sampled_from(TEXTS)},
)
"""Events as channels hold them (``tests/unit/pipelines/event_rows.py`` builds the rows):
any JSON payload as ``data`` (or none), extensions named like the patterns' fields."""

_cloudevent_patterns = st.one_of(
    st.builds(lambda p: {"data": p}, patterns),
    st.builds(lambda p, q: {"data": p, **q}, patterns, patterns),
    patterns,  # on extensions only
    st.builds(lambda p, o: {"subject": [o], "data": p}, patterns, operators),
).filter(_valid)


def event_row(event: dict[str, Any]) -> dict[str, Any]:
    """An event near a pattern (its JSON form) as ``event_rows.events_frame`` takes it:
    ``data`` as is, ``subject`` when a string, the other fields as extensions."""
    row: dict[str, Any] = {"extensions": {}}
    for key, value in event.items():
        if key == "data" or (key == "subject" and isinstance(value, str)):
            row[key] = value
        elif key != "subject":
            row["extensions"][key] = value
    return row


cloudevent_cases = _cases(_cloudevent_patterns, cloudevent=True)
"""Patterns over an event's JSON form (the payload under ``data``, extensions and the
``subject`` attribute at the top level), each with one or two events near it."""
