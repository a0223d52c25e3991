"""``pipelines.spec.secrets`` on buses: the secrets of rule sinks and rule transforms are
found, redacted, and kept across edits by the rule's NAME, wherever the rule moved."""

from __future__ import annotations

import copy

import pytest

from pipelines.spec import SpecError, validate_spec
from pipelines.spec.secrets import (
    SECRET_MARKER,
    merge_secrets,
    redact,
    secret_paths,
    secret_values,
)
from tests.unit.console import secret_plugins

SOURCE = {
    "type": "kafka",
    "config": {"bootstrap_servers": "localhost:9092", "topics": ["orders"]},
}


def _rule(name: str, secret: str, *, url: str = "http://hooks.example/in") -> dict:
    """A rule whose transform and second sink each hold a secret (``key-<secret>``,
    ``Bearer <secret>``)."""
    return {
        "name": name,
        "pattern": {"type": [f"{name}.created"]},
        "transforms": [
            {"type": "enrich", "config": {"endpoint": "http://x", "api_key": f"key-{secret}"}}
        ],
        "sinks": [
            {"type": "kafka", "config": {"bootstrap_servers": "k:9092", "topic": name}},
            {"type": "webhook", "config": {"url": url, "auth_header": f"Bearer {secret}"}},
        ],
    }


def _bus(*rules: dict) -> dict:
    return validate_spec({"source": SOURCE, "rules": list(rules)}).model_dump(mode="json")


@pytest.fixture(autouse=True)
def _secret_plugins(monkeypatch: pytest.MonkeyPatch) -> None:
    secret_plugins.install(monkeypatch)


@pytest.fixture
def stored() -> dict:
    return _bus(_rule("alpha", "A1"), _rule("bravo", "B2"), _rule("charlie", "C3"))


def _secrets_of(spec: dict, rule: str) -> tuple[str, str]:
    found = next(r for r in spec["rules"] if r["name"] == rule)
    return (
        found["transforms"][0]["config"]["api_key"],
        found["sinks"][1]["config"]["auth_header"],
    )


def test_rule_secrets_are_found_and_redacted_in_rule_order(stored):
    assert secret_paths(stored) == [
        f"rules[{i}].{stage}"
        for i in range(3)
        for stage in ("transforms[0].config.api_key", "sinks[1].config.auth_header")
    ]
    assert secret_values(stored) == [
        "key-A1",
        "Bearer A1",
        "key-B2",
        "Bearer B2",
        "key-C3",
        "Bearer C3",
    ]
    redacted = redact(stored)
    assert redacted["rules"][1]["sinks"][1]["config"]["auth_header"] == SECRET_MARKER
    assert redacted["rules"][2]["transforms"][0]["config"]["api_key"] == SECRET_MARKER
    assert not any(value in str(redacted) for value in secret_values(stored))


def test_the_redacted_bus_read_back_keeps_every_secret(stored):
    assert merge_secrets(redact(stored), stored) == stored


def test_reordered_rules_keep_their_own_secrets(stored):
    new = redact(stored)
    new["rules"].reverse()

    merged = merge_secrets(new, stored)

    assert [r["name"] for r in merged["rules"]] == ["charlie", "bravo", "alpha"]
    for name, secret in (("alpha", "A1"), ("bravo", "B2"), ("charlie", "C3")):
        assert _secrets_of(merged, name) == (f"key-{secret}", f"Bearer {secret}")


def test_a_rule_inserted_before_the_others_shifts_nothing(stored):
    new = redact(stored)
    new["rules"].insert(0, _rule("zulu", "Z9"))

    merged = merge_secrets(new, stored)

    assert _secrets_of(merged, "zulu") == ("key-Z9", "Bearer Z9")
    for name, secret in (("alpha", "A1"), ("bravo", "B2"), ("charlie", "C3")):
        assert _secrets_of(merged, name) == (f"key-{secret}", f"Bearer {secret}")
    validate_spec(merged)


def test_a_rule_removed_leaves_the_following_rules_their_secrets(stored):
    new = redact(stored)
    del new["rules"][0]

    merged = merge_secrets(new, stored)

    assert _secrets_of(merged, "bravo") == ("key-B2", "Bearer B2")
    assert _secrets_of(merged, "charlie") == ("key-C3", "Bearer C3")
    assert "A1" not in str(merged)


def test_secrets_left_out_of_a_moved_rule_are_kept(stored):
    new = redact(stored)
    new["rules"].reverse()
    del new["rules"][0]["sinks"][1]["config"]["auth_header"]  # charlie's
    del new["rules"][2]["transforms"][0]["config"]["api_key"]  # alpha's

    merged = merge_secrets(new, stored)

    assert _secrets_of(merged, "charlie") == ("key-C3", "Bearer C3")
    assert _secrets_of(merged, "alpha") == ("key-A1", "Bearer A1")


def test_a_new_rule_in_an_old_rules_place_does_not_inherit_its_secrets(stored):
    new = redact(stored)
    taken = copy.deepcopy(new["rules"][0])
    taken["name"] = "delta"  # alpha's place and stages, another rule
    new["rules"][0] = taken

    with pytest.raises(SpecError) as raised:
        merge_secrets(new, stored)

    assert sorted(raised.value.errors) == [
        "rules[0].sinks[1].config.auth_header",
        "rules[0].transforms[0].config.api_key",
    ]
    assert (
        "send the secret itself" in raised.value.errors["rules[0].sinks[1].config.auth_header"][0]
    )


def test_a_secret_left_out_of_a_new_rule_is_not_taken_from_the_rule_it_replaces(stored):
    new = redact(stored)
    new["rules"][0]["name"] = "delta"
    new["rules"][0]["transforms"][0]["config"]["api_key"] = "key-D4"
    del new["rules"][0]["sinks"][1]["config"]["auth_header"]

    merged = merge_secrets(new, stored)

    assert "auth_header" not in merged["rules"][0]["sinks"][1]["config"]


def test_inside_a_rule_stages_keep_secrets_by_position_and_type(stored):
    new = redact(stored)
    bravo = new["rules"][1]
    bravo["sinks"].reverse()  # the webhook moves to sinks[0], where a kafka sink was

    with pytest.raises(SpecError) as raised:
        merge_secrets(new, stored)

    assert list(raised.value.errors) == ["rules[1].sinks[0].config.auth_header"]


def test_a_moved_rule_whose_target_moved_must_get_its_secret_again(stored):
    new = redact(stored)
    new["rules"].reverse()
    new["rules"][1]["sinks"][1]["config"]["url"] = "http://elsewhere.example/in"  # bravo

    with pytest.raises(SpecError) as raised:
        merge_secrets(new, stored)

    assert list(raised.value.errors) == ["rules[1].sinks[1].config.auth_header"]
    assert (
        "re-enter the authorization header"
        in raised.value.errors["rules[1].sinks[1].config.auth_header"][0]
    )


@pytest.fixture
def linear() -> dict:
    return validate_spec({"source": SOURCE, "sink": _rule("x", "L0")["sinks"][1]}).model_dump(
        mode="json"
    )


def test_a_linear_channel_made_a_bus_keeps_its_sink_secret_in_the_rule_default(linear):
    bus = redact(linear)
    sink = bus.pop("sink")
    bus["rules"] = [
        {"name": "audit", "sinks": [copy.deepcopy(sink)]},
        {"name": "default", "sinks": [sink, _rule("y", "Y1")["sinks"][1]]},
    ]

    with pytest.raises(SpecError) as raised:
        merge_secrets(bus, linear)
    assert list(raised.value.errors) == ["rules[0].sinks[0].config.auth_header"]  # not default

    bus["rules"][0]["sinks"][0]["config"]["auth_header"] = "Bearer NEW"
    merged = merge_secrets(bus, linear)
    assert merged["rules"][1]["sinks"][0]["config"]["auth_header"] == "Bearer L0"
    assert merged["rules"][1]["sinks"][1]["config"]["auth_header"] == "Bearer Y1"
    validate_spec(merged)


def test_a_bus_made_linear_keeps_the_secret_of_its_rule_defaults_first_sink(stored, linear):
    bus = validate_spec(
        {"source": SOURCE, "rules": [_rule("alpha", "A1"), {**_rule("default", "D1")}]}
    ).model_dump(mode="json")
    made_linear = redact(bus)
    made_linear["sink"] = made_linear.pop("rules")[1]["sinks"][1]

    with pytest.raises(SpecError):  # the webhook was sinks[1] of default, not sinks[0]
        merge_secrets(made_linear, bus)
    bus["rules"][1]["sinks"].reverse()
    assert merge_secrets(made_linear, bus)["sink"]["config"]["auth_header"] == "Bearer D1"
    with pytest.raises(SpecError):  # a bus without a rule named default keeps nothing
        merge_secrets(made_linear, stored)


def test_merge_does_not_modify_its_arguments(stored):
    new = redact(stored)
    new["rules"].reverse()
    before_new, before_stored = copy.deepcopy(new), copy.deepcopy(stored)

    merge_secrets(new, stored)

    assert (new, stored) == (before_new, before_stored)
