"""The pattern test bench under attack (issue 12, finding 5): answers at once, or a 400
naming the pattern limit and where the pattern crosses it.

Before, the issue's request (a 20-star wildcard on 5,000 characters) ran until gunicorn
killed the worker after 30 s. The 20 stars are within the limits (wildcards now match in
linear time), so the answer is a fast, correct 200; 33 stars are refused.
"""

from __future__ import annotations

import json
import time
from typing import Any

import pytest

from pipelines.spec.patterns.limits import MAX_PATTERN_BYTES, MAX_WILDCARD_STARS

pytestmark = pytest.mark.django_db

TEST_URL = "/api/v1/event-patterns/test"
ATTACK_WILDCARD = "*a" * 19 + "*b"  # 20 stars


def post(api, body: Any):
    return api.generic("POST", TEST_URL, json.dumps(body), content_type="application/json")


def timed_post(api, body: Any):
    """The answer and the CPU seconds it took: the request runs in this process, and a loaded
    machine stretches the wall clock, not the work (the attack is on the CPU)."""
    start = time.process_time()
    response = post(api, body)
    return response, time.process_time() - start


@pytest.mark.timeout(60)
@pytest.mark.parametrize(("text", "result"), [("a" * 5_000, False), ("a" * 5_000 + "b", True)])
def test_the_issue_wildcard_attack_gets_a_fast_correct_answer(api, text, result):
    body = {"pattern": {"a": [{"wildcard": ATTACK_WILDCARD}]}, "event": {"a": text}}

    response, elapsed = timed_post(api, body)

    assert response.status_code == 200
    assert response.json() == {"result": result}
    assert elapsed < 5


@pytest.mark.timeout(60)
def test_fields_in_many_arrays_get_a_fast_answer(api):
    n = 2_000
    event = {"a": ["x"] * n, "b": ["x"] * n, "c": ["x"] * n, "d": "z"}
    pattern = {"a": ["x"], "b": ["x"], "c": ["x"], "d": ["y"]}

    response, elapsed = timed_post(api, {"pattern": pattern, "event": event})

    assert response.status_code == 200
    assert response.json() == {"result": False}
    assert elapsed < 5


def test_too_many_stars_is_a_400_at_the_wildcard(api):
    wildcard = "*a" * MAX_WILDCARD_STARS + "*b"
    pattern = {"data": {"a": [{"wildcard": wildcard}]}}

    response = post(api, {"pattern": pattern, "event": {"data": {"a": "ab"}}})

    assert response.status_code == 400
    assert response.json() == {
        "pattern": [
            "data.a[0].wildcard: the wildcard has 33 * characters; the limit is 32 per wildcard"
        ]
    }


def test_a_large_pattern_is_a_400_naming_the_size_limit(api):
    """The issue's 560 KB pattern (within the request body limit)."""
    pattern = {"a": [f"value-{i}" for i in range(40_000)]}
    assert len(json.dumps(pattern)) > 500_000

    response = post(api, {"pattern": pattern, "event": {"a": "x"}})

    assert response.status_code == 400
    (message,) = response.json()["pattern"]
    assert message.startswith("the pattern is ")
    assert message.endswith(f"as compact JSON; the limit is {MAX_PATTERN_BYTES:,} bytes")


def test_a_deep_pattern_is_a_400_naming_the_depth_limit(api):
    pattern: Any = ["x"]
    for _ in range(40):
        pattern = {"k": pattern}

    response = post(api, {"pattern": pattern, "event": {"k": "x"}})

    assert response.status_code == 400
    (message,) = response.json()["pattern"]
    location = ".".join(["k"] * 32)
    assert (
        message == f"{location}: objects and arrays are nested too deeply; the limit is 32 levels"
    )


def test_a_filter_transform_with_too_many_stars_is_refused_at_its_pattern(api, spec):
    wildcard = "*a" * MAX_WILDCARD_STARS + "*b"
    spec["transforms"] = [
        {"type": "filter", "config": {"pattern": {"a": [{"wildcard": wildcard}]}}}
    ]

    response = api.post("/api/v1/channels/", {"name": "orders", "spec": spec}, format="json")

    assert response.status_code == 400
    assert response.json() == {
        "spec.transforms[0].config.pattern": [
            "a[0].wildcard: the wildcard has 33 * characters; the limit is 32 per wildcard"
        ]
    }
