"""``pipelines.spec.diff``: changes between two specs, a bus's rules named."""

from __future__ import annotations

from pipelines.spec.diff import spec_changes

SOURCE = {"type": "kafka", "config": {"bootstrap_servers": "k:9092", "topics": ["orders"]}}


def sink(topic: str) -> dict:
    return {"type": "kafka", "config": {"bootstrap_servers": "k:9092", "topic": topic}}


def rule(name: str, amount: int = 1) -> dict:
    return {
        "name": name,
        "pattern": {"data": {"n": [{"numeric": [">", amount]}]}},
        "sinks": [sink(name)],
    }


def paths(before: dict, after: dict) -> list[tuple[str, str]]:
    return [(c["path"], c["change"]) for c in spec_changes(before, after)]


def test_equal_specs_have_no_changes():
    spec = {"source": SOURCE, "rules": [rule("a"), rule("b")]}
    assert spec_changes(spec, {**spec}) == []


def test_a_rule_inserted_first_is_one_addition_not_every_rule_changed():
    before = {"source": SOURCE, "rules": [rule(f"r{i}") for i in range(5)]}
    after = {"source": SOURCE, "rules": [rule("new"), *before["rules"]]}

    assert paths(before, after) == [("rules[new]", "added")]


def test_a_pattern_changes_whole_and_a_sink_field_at_its_leaf():
    before = {"source": SOURCE, "rules": [rule("a"), rule("b")]}
    after = {"source": SOURCE, "rules": [rule("a", amount=5), {**rule("b"), "sinks": [sink("z")]}]}

    changes = spec_changes(before, after)

    assert [(c["path"], c["change"]) for c in changes] == [
        ("rules[a].pattern", "changed"),
        ("rules[b].sinks[0].config.topic", "changed"),
    ]
    assert changes[0]["before"] == {"data": {"n": [{"numeric": [">", 1]}]}}
    assert (changes[1]["before"], changes[1]["after"]) == ("b", "z")


def test_reordered_removed_and_disabled_rules():
    before = {"source": SOURCE, "rules": [rule("a"), rule("b"), rule("c")]}
    after = {"source": SOURCE, "rules": [{**rule("c"), "enabled": False}, rule("a")]}

    assert paths(before, after) == [
        ("rules", "reordered"),
        ("rules[b]", "removed"),
        ("rules[c].enabled", "added"),
    ]


def test_shared_transforms_and_lists_of_values():
    before = {
        "source": SOURCE,
        "transforms": [{"type": "filter", "config": {"pattern": {"a": [1]}}}],
    }
    after = {
        "source": {**SOURCE, "config": {**SOURCE["config"], "topics": ["orders", "refunds"]}},
        "transforms": [
            {"type": "filter", "config": {"pattern": {"a": [2]}}},
            {"type": "filter", "config": {}},
        ],
    }

    assert paths(before, after) == [
        ("source.config.topics", "changed"),
        ("transforms[0].config.pattern", "changed"),
        ("transforms[1]", "added"),
    ]


def test_rules_without_unique_names_are_compared_by_position():
    before = {"rules": [{"name": "a"}, {"name": "a"}]}
    after = {"rules": [{"name": "a"}, {"name": "b"}]}

    assert paths(before, after) == [("rules", "changed")]


def test_the_order_of_changes_does_not_depend_on_the_order_keys_were_stored():
    before = {"source": SOURCE, "rules": [rule("a")]}
    after = {
        "runtime": {"mode": "available-now"},
        "rules": [{**rule("a", 9), "enabled": False}],
        "source": {"config": {**SOURCE["config"], "topics": ["x"]}, "type": "kafka"},
    }
    shuffled = dict(reversed(list(after.items())))

    expected = [
        ("source.config.topics", "changed"),
        ("rules[a].enabled", "added"),
        ("rules[a].pattern", "changed"),
        ("runtime", "added"),
    ]
    assert paths(before, after) == expected
    assert paths(dict(reversed(list(before.items()))), shuffled) == expected
