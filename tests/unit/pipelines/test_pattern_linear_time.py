"""Event patterns match in time linear in the event's size (issue 12, finding 5).

Before: ``{"wildcard": "*a*a...*b"}`` (20 stars) on 5,000 ``a`` ran until gunicorn killed the
worker (a backtracking regular expression; 4 stars on 1,000 characters already took 18 s),
and a rule over three arrays of 200 elements took 21 s (the evaluator backtracked over every
combination of array elements). Each attack here runs under a timeout, so the old code fails
instead of hanging; the new code must also give the right answer.

The new wildcard matcher and evaluator are checked against simple references on thousands
of small random cases: a regular expression (fine on short strings) and the previous,
backtracking evaluator (``acfinder_reference``, fine on small events).
"""

from __future__ import annotations

import random
import re
import time
from typing import Any

import pytest

from pipelines.spec.patterns import PatternError, compile_pattern, matches
from pipelines.spec.patterns.evaluator import matches_compiled
from pipelines.spec.patterns.matchers import Wildcard
from pipelines.spec.patterns.parser import wildcard_segments
from tests.support.random_patterns import RandomPatterns
from tests.unit.pipelines.acfinder_reference import reference_matches

ATTACK_WILDCARD = "*a" * 19 + "*b"  # 20 stars, as in the issue
ATTACK_TEXT = "a" * 5_000


def timed(function: Any, *args: Any) -> tuple[Any, float]:
    """The result and the CPU seconds it took (the work, not the wait for a busy machine's
    cores: make test runs its parts side by side)."""
    start = time.process_time()
    result = function(*args)
    return result, time.process_time() - start


# -- the attacks -----------------------------------------------------------------------------


@pytest.mark.timeout(30)
def test_the_issue_wildcard_attack_is_answered_at_once() -> None:
    pattern = {"a": [{"wildcard": ATTACK_WILDCARD}]}

    refused, refused_time = timed(matches, pattern, {"a": ATTACK_TEXT})
    accepted, accepted_time = timed(matches, pattern, {"a": ATTACK_TEXT + "b"})

    assert (refused, accepted) == (False, True)
    assert refused_time < 2 and accepted_time < 2


@pytest.mark.timeout(30)
@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("a" * 100_000 + "b", True),
        ("a" * 100_000 + "c", False),  # the suffix fails
        ("a" * 18 + "b" * 100_000, False),  # one a short: every middle segment is searched
        ("ab" * 50_000, True),
        ("b" * 100_000 + "a" * 19 + "b", True),
    ],
    ids=["match", "suffix", "one-short", "alternating", "late"],
)
def test_wildcards_are_linear_whatever_the_text(text: str, expected: bool) -> None:
    matcher = Wildcard(ATTACK_WILDCARD, wildcard_segments(ATTACK_WILDCARD))

    result, elapsed = timed(matcher.matches, text)

    assert result is expected
    assert elapsed < 2


@pytest.mark.timeout(30)
def test_fields_in_many_arrays_do_not_multiply() -> None:
    """Each field a rule names in its own array used to multiply the work by that array's
    length: n**3 choices before the last field failed."""
    n = 2_000
    event = {"a": ["x"] * n, "b": ["x"] * n, "c": ["x"] * n, "d": "z"}

    refused, refused_time = timed(matches, {"a": ["x"], "b": ["x"], "c": ["x"], "d": ["y"]}, event)
    accepted, accepted_time = timed(matches, {"a": ["x"], "b": ["x"], "d": ["z"]}, event)

    assert (refused, accepted) == (False, True)
    assert refused_time < 2 and accepted_time < 2


@pytest.mark.timeout(30)
def test_fields_of_one_array_element_are_not_searched_pairwise() -> None:
    """Every element has an ``a`` the pattern accepts; only the last has the ``b`` it wants:
    each choice of ``a`` used to scan every ``b`` (n**2)."""
    n = 5_000
    event = {"items": [{"a": f"s{i}", "b": i, "tags": ["t", "u"]} for i in range(n)]}
    pattern = {"items": {"a": [{"prefix": "s"}], "b": [n - 1], "tags": ["u"]}}

    result, elapsed = timed(matches, pattern, event)

    assert result is True
    assert elapsed < 2
    assert matches({"items": {"a": ["s1"], "b": [2]}}, event) is False  # not the same element


# -- differential: the wildcard matcher against a regular expression -------------------------

PIECES = ["a", "b", "ab", "é", "*", "\\*", "\\\\"]
TEXT_CHARS = "ab*\\é"


def random_wildcard(rnd: random.Random) -> str:
    """A valid wildcard: no ``**`` (``\\**`` is an escaped star then a star, allowed)."""
    pieces: list[str] = []
    for _ in range(rnd.randint(0, 6)):
        piece = rnd.choice(PIECES)
        if piece == "*" and pieces and pieces[-1] == "*":
            continue
        pieces.append(piece)
    return "".join(pieces)


def random_text(rnd: random.Random, wildcard: str) -> str:
    """Half the time random characters; else an instance of ``wildcard`` (each star replaced
    by a few characters), one character changed now and then."""
    if rnd.random() < 0.5:
        return "".join(rnd.choice(TEXT_CHARS) for _ in range(rnd.randint(0, 8)))
    chars, text = iter(wildcard), []
    for char in chars:
        if char == "*":
            text.extend(rnd.choice(TEXT_CHARS) for _ in range(rnd.randint(0, 3)))
        else:
            text.append(next(chars) if char == "\\" else char)
    if text and rnd.random() < 0.3:
        text[rnd.randrange(len(text))] = rnd.choice(TEXT_CHARS)
    return "".join(text)


def reference_regex(wildcard: str) -> re.Pattern[str]:
    """Event-ruler's wildcard as a regular expression, read character by character."""
    parts, chars = [], iter(wildcard)
    for char in chars:
        if char == "\\":
            parts.append(re.escape(next(chars)))
        elif char == "*":
            parts.append(".*")
        else:
            parts.append(re.escape(char))
    return re.compile("".join(parts), re.DOTALL)


def test_wildcards_agree_with_a_regular_expression_on_random_cases() -> None:
    rnd = random.Random(20261124)
    outcomes = []
    for _ in range(4_000):
        wildcard = random_wildcard(rnd)
        text = random_text(rnd, wildcard)
        matched = matches({"v": [{"wildcard": wildcard}]}, {"v": text})
        expected = reference_regex(wildcard).fullmatch(text) is not None
        assert matched is expected, (wildcard, text)
        outcomes.append(matched)
    assert 0.1 < sum(outcomes) / len(outcomes) < 0.9  # the cases are not all-or-nothing


@pytest.mark.parametrize(
    ("wildcard", "text", "expected"),
    [
        ("ab*ba", "aba", False),  # prefix and suffix may not share characters
        ("ab*ba", "abba", True),
        ("a*b*c", "acb", False),  # middle segments in order, before the suffix
        ("*aa*aa*", "aaa", False),  # occurrences may not overlap
        ("*aa*aa*", "aaaa", True),
        ("x\\*y*", "x*yz", True),
        ("x\\*y*", "xzyz", False),
        ("\\\\*", "\\x", True),
        ("", "", True),
        ("", "a", False),
        ("*", "", True),
    ],
)
def test_wildcard_edge_cases(wildcard: str, text: str, expected: bool) -> None:
    assert matches({"v": [{"wildcard": wildcard}]}, {"v": text}) is expected


# -- differential: the evaluator against event-ruler's backtracking search --------------------

KEYS = ["a", "b", "a.b"]
SCALARS: list[Any] = ["x", "y", "", 0, 1, 1.0, True, None]
OPERATORS = [
    lambda: "x",
    lambda: 1,
    lambda: None,
    lambda: {"prefix": "x"},
    lambda: {"wildcard": "*"},
    lambda: {"anything-but": "x"},
    lambda: {"numeric": [">=", 0]},
    lambda: {"exists": True},
    lambda: {"exists": False},
    lambda: {"exists": False},
]


RANDOM = RandomPatterns(
    KEYS,
    SCALARS,
    OPERATORS,
    scalar_share=0.3,
    object_share=0.65,
    min_object_keys=1,
    or_share=0.1,
)


def test_the_evaluator_agrees_with_event_ruler_backtracking_on_random_cases() -> None:
    """Arrays of objects, arrays of arrays (past the nesting limit too), absent fields before
    and after the field that chooses an element, keys holding dots."""
    rnd = random.Random(20261125)
    outcomes = []
    for _ in range(300):
        try:
            compiled = compile_pattern(RANDOM.pattern(rnd))
        except PatternError:  # too many alternatives
            continue
        for _ in range(10):
            event = {key: RANDOM.value(rnd) for key in rnd.sample(KEYS, rnd.randint(2, 3))}
            expected = reference_matches(compiled, event)
            assert matches_compiled(compiled, event) is expected, (compiled, event)
            outcomes.append(expected)
    assert 0.1 < sum(outcomes) / len(outcomes) < 0.9
