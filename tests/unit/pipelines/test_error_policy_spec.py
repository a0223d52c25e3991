"""The channel's ``errors`` policy in the spec: validation with paths, defaults, secrets."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from pipelines.spec import SpecError, validate_spec
from pipelines.spec.secrets import SECRET_MARKER, merge_secrets, redact, secret_paths

BASE: dict[str, Any] = {
    "source": {"type": "generator", "config": {}},
    "sink": {"type": "preview", "config": {}},
}
KAFKA_DLQ = {"type": "kafka", "config": {"bootstrap_servers": "k:9092", "topic": "orders.dlq"}}
HTTP_DLQ = {
    "type": "http",
    "config": {"url": "https://dlq.example.com/in", "auth": {"type": "bearer", "token": "s3cret"}},
}


def spec_with(errors: Any) -> dict[str, Any]:
    return {**copy.deepcopy(BASE), "errors": errors}


def errors_of(data: Any) -> dict[str, list[str]]:
    with pytest.raises(SpecError) as raised:
        validate_spec(data)
    return raised.value.errors


def test_the_default_policy_tolerates_nothing() -> None:
    policy = validate_spec(BASE).errors
    assert (policy.tolerance, policy.dead_letter, policy.log) == ("none", None, False)
    assert validate_spec(BASE).model_dump()["errors"] == {
        "tolerance": "none",
        "dead_letter": None,
        "log": False,
    }


def test_a_dead_letter_sink_is_validated_and_normalized_like_a_sink() -> None:
    spec = validate_spec(spec_with({"tolerance": "all", "dead_letter": KAFKA_DLQ, "log": True}))
    assert spec.errors.tolerance == "all" and spec.errors.log is True
    assert spec.errors.dead_letter is not None
    assert spec.errors.dead_letter.config["format"] == "json"  # defaults filled


@pytest.mark.parametrize(
    ("errors", "expected"),
    [
        ({"tolerance": "some"}, {"errors.tolerance": ["must be 'none' or 'all'"]}),
        ({"log": "maybe"}, {"errors.log": ["must be true or false"]}),
        (
            {"retries": 3},
            {"errors.retries": ["unknown field; expected one of: tolerance, dead_letter, log"]},
        ),
        ("all", {"errors": ['must be an object like {"tolerance": "all", ...}']}),
        (
            {"tolerance": "all", "dead_letter": {"type": "kafka", "config": {"topic": "x"}}},
            {"errors.dead_letter.config.bootstrap_servers": ["field required"]},
        ),
        (
            {"tolerance": "all", "dead_letter": {"type": "nowhere"}},
            {"errors.dead_letter.type": ["unknown sink type 'nowhere'"]},
        ),
        (
            {"tolerance": "all", "dead_letter": {"type": "preview", "config": {}}},
            {"errors.dead_letter.type": ["a preview sink cannot be the dead-letter target"]},
        ),
        (
            {"dead_letter": KAFKA_DLQ},
            {
                "errors.dead_letter": [
                    "needs tolerance 'all' (with 'none' a bad event fails the channel)"
                ]
            },
        ),
    ],
)
def test_invalid_policies_answer_per_field(errors: Any, expected: dict[str, list[str]]) -> None:
    found = errors_of(spec_with(errors))
    assert set(found) == set(expected)
    for path, messages in expected.items():
        assert all(any(m in f for f in found[path]) for m in messages), found


def test_dead_letter_secrets_are_write_only_and_kept_across_edits() -> None:
    stored = validate_spec(spec_with({"tolerance": "all", "dead_letter": HTTP_DLQ})).model_dump()
    assert secret_paths(stored) == ["errors.dead_letter.config.auth.token"]

    shown = redact(stored)
    assert shown["errors"]["dead_letter"]["config"]["auth"]["token"] == SECRET_MARKER
    merged = merge_secrets(shown, stored)
    assert merged["errors"]["dead_letter"]["config"]["auth"]["token"] == "s3cret"
