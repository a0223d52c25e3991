"""Limits on event patterns (``pipelines.spec.patterns.limits``): each one refused with a
message naming the limit and where the pattern crosses it, on every path that takes a
pattern (``validate_pattern``, the filter transform's config, the Spark filter)."""

from __future__ import annotations

import re
from typing import Any

import pytest

from pipelines.spec.channel import SpecError
from pipelines.spec.patterns import PatternError, compile_pattern, validate_pattern
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
from pipelines.spec.validation import validate_spec


def problems(pattern: Any) -> list[tuple[str, str]]:
    with pytest.raises(PatternError) as raised:
        validate_pattern(pattern)
    return list(raised.value.problems)


def nested(levels: int) -> dict[str, Any]:
    """A pattern of ``levels`` objects and arrays in all: ``{"k": {"k": ... ["x"]}}``."""
    pattern: Any = ["x"]
    for _ in range(levels - 1):
        pattern = {"k": pattern}
    return pattern


def wildcard(stars: int) -> str:
    return "*a" * (stars - 1) + "*b" if stars else "ab"


# -- each limit: the largest accepted pattern, then one more ---------------------------------


def test_pattern_size() -> None:
    value = "x" * 1_000
    fits = {f"f{i}": [value] for i in range(MAX_PATTERN_BYTES // 1_020)}
    validate_pattern(fits)
    too_large = {f"f{i}": [value] for i in range(MAX_PATTERN_BYTES // 1_000 + 1)}

    ((location, message),) = problems(too_large)

    assert location == ""
    assert re.fullmatch(
        r"the pattern is 17,\d{3} bytes long as compact JSON; the limit is 16,384 bytes", message
    )


def test_the_size_counts_utf8_bytes_of_compact_json() -> None:
    # 3 bytes per character in UTF-8: under the limit in characters, over it in bytes
    text = "€" * 600
    pattern = {f"f{i}": [text] for i in range(10)}
    assert len(str(pattern)) < MAX_PATTERN_BYTES

    assert "bytes long as compact JSON" in problems(pattern)[0][1]


def test_depth() -> None:
    validate_pattern(nested(MAX_PATTERN_DEPTH))

    ((location, message),) = problems(nested(MAX_PATTERN_DEPTH + 1))

    assert location == ".".join(["k"] * MAX_PATTERN_DEPTH)
    assert message == (
        f"objects and arrays are nested too deeply; the limit is {MAX_PATTERN_DEPTH} levels"
    )


@pytest.mark.parametrize("levels", [1_000, 100_000])
def test_any_depth_is_refused_without_recursion(levels: int) -> None:
    """As deep as json.loads allows, and deeper than the interpreter's recursion limit."""
    pattern: Any = {"$or": [{"a": ["x"]}, {"b": ["y"]}]}
    for _ in range(levels):
        pattern = {"$or": [pattern, {"a": ["x"]}]}

    ((location, message),) = problems(pattern)

    assert location.startswith("$or[0].$or[0].")
    assert "nested too deeply" in message


def test_string_length() -> None:
    validate_pattern({"k" * MAX_STRING_LENGTH: ["v" * MAX_STRING_LENGTH]})

    found = problems(
        {
            "a": [{"prefix": "v" * (MAX_STRING_LENGTH + 1)}],
            "k" * (MAX_STRING_LENGTH + 1): ["v"],
        }
    )

    assert found == [
        ("a[0].prefix", "a string of 2,049 characters; the limit is 2,048 characters"),
        ("k" * 2049, "a field name of 2,049 characters; the limit is 2,048 characters"),
    ]


def test_match_values() -> None:
    validate_pattern({"a": list(range(MAX_MATCH_VALUES))})
    # an anything-but counts one, plus one per value it lists
    validate_pattern({"a": list(range(MAX_MATCH_VALUES - 3)), "b": [{"anything-but": [1, 2]}]})

    found = problems({"a": list(range(MAX_MATCH_VALUES - 2)), "b": [{"anything-but": [1, 2]}]})

    assert found == [
        (
            "b[0]",
            f"too many match values: the limit is {MAX_MATCH_VALUES:,} per pattern (each value "
            "of a field counts one, each value an anything-but lists one more)",
        )
    ]


def test_match_values_are_reported_once() -> None:
    assert len(problems({"a": list(range(MAX_MATCH_VALUES * 3))})) == 1


def test_wildcards_per_pattern() -> None:
    validate_pattern({"a": [{"wildcard": f"{i}*"} for i in range(MAX_WILDCARDS)]})
    too_many = [{"wildcard": f"{i}*"} for i in range(MAX_WILDCARDS - 1)]
    too_many.append({"anything-but": {"wildcard": ["x*", "y*"]}})  # two more

    assert problems({"a": too_many}) == [
        (f"a[{MAX_WILDCARDS - 1}]", f"too many wildcards: the limit is {MAX_WILDCARDS} per pattern")
    ]


def test_stars_per_wildcard() -> None:
    validate_pattern({"a": [{"wildcard": wildcard(MAX_WILDCARD_STARS)}]})
    validate_pattern({"a": [{"wildcard": wildcard(20)}]})  # the attack is accepted
    validate_pattern({"a": [{"wildcard": "\\*" * 100}]})  # escaped stars are text

    found = problems({"a": [{"anything-but": {"wildcard": wildcard(MAX_WILDCARD_STARS + 1)}}]})

    assert found == [
        (
            "a[0].anything-but.wildcard",
            f"the wildcard has 33 * characters; the limit is {MAX_WILDCARD_STARS} per wildcard",
        )
    ]


def test_rules() -> None:
    branches = [{"k": [i]} for i in range(MAX_RULES)]
    validate_pattern({"$or": branches})

    assert problems({"$or": [*branches, {"k": ["one more"]}]}) == [
        ("", f"the pattern expands to more than {MAX_RULES} alternatives")
    ]


def test_matchers_summed_over_the_rules() -> None:
    """$or repeats the fields its branches share: 64 rules x 100 values is 6,400 matchers."""
    shared = {"shared": list(range(100))}
    assert len(compile_pattern({**shared, "$or": [{"k": [i]} for i in range(40)]}).rules) == 40

    found = problems({**shared, "$or": [{"k": [i]} for i in range(MAX_RULES)]})

    assert found == [
        (
            "",
            f"the pattern expands to more than {MAX_COMPILED_MATCHERS:,} matchers over its 41 "
            "alternatives (each $or branch repeats the fields it shares); the limit is 4,096",
        )
    ]


# -- the same limits on every path -----------------------------------------------------------


def test_the_filter_transform_config_refuses_them_at_the_pattern_path() -> None:
    spec = {
        "source": {"type": "generator", "config": {}},
        "transforms": [
            {"type": "filter", "config": {"pattern": {"a": [{"wildcard": wildcard(40)}]}}}
        ],
        "sink": {"type": "preview", "config": {}},
    }

    with pytest.raises(SpecError) as raised:
        validate_spec(spec)

    assert raised.value.errors == {
        "transforms[0].config.pattern": [
            "a[0].wildcard: the wildcard has 40 * characters; the limit is 32 per wildcard"
        ]
    }


def test_the_spark_filter_parses_with_the_same_limits() -> None:
    """``pipelines.patterns`` compiles through ``compile_pattern`` before Spark sees anything
    (so no session is needed to see it refuse)."""
    from pipelines.patterns import pattern_predicate

    with pytest.raises(PatternError, match="nested too deeply"):
        pattern_predicate(nested(MAX_PATTERN_DEPTH + 1), lambda key: key)
