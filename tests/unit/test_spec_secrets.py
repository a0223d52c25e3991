"""``pipelines.spec.secrets``: finding, redacting and merging secrets in channel specs."""

from __future__ import annotations

import copy

import pytest

from pipelines.spec import SpecError, plugins, validate_spec
from pipelines.spec.secrets import (
    SECRET_MARKER,
    config_secret_values,
    merge_secrets,
    redact,
    redact_config,
    scrub,
    secret_paths,
    secret_values,
)
from tests.unit.console import secret_plugins
from tests.unit.console.secret_plugins import SECRETS, WebhookSinkConfig, secret_spec

SINK_PATHS = [
    "sink.config.auth_header",
    "sink.config.headers.X-Api-Key",
    "sink.config.sasl.password",
    "sink.config.auth.token",
]


@pytest.fixture(autouse=True)
def _secret_plugins(monkeypatch: pytest.MonkeyPatch) -> None:
    secret_plugins.install(monkeypatch)


@pytest.fixture
def stored() -> dict:
    """A spec as a revision stores it: validated and normalised."""
    return validate_spec(secret_spec()).model_dump(mode="json")


def test_a_secret_field_is_write_only_in_the_json_schema():
    schema = WebhookSinkConfig.model_json_schema()
    props = schema["properties"]

    optional = next(branch for branch in props["auth_header"]["anyOf"] if "type" in branch)
    assert optional == {"type": "string", "writeOnly": True, "format": "password"}
    assert props["headers"]["additionalProperties"]["writeOnly"] is True
    password = schema["$defs"]["SaslConfig"]["properties"]["password"]
    assert (password["writeOnly"], password["format"], password["title"]) == (
        True,
        "password",
        "Password",
    )


def test_secret_paths_lists_every_secret_set_in_spec_order(stored):
    assert secret_paths(stored) == ["transforms[1].config.api_key", *SINK_PATHS]
    assert secret_paths(validate_spec(stored)) == secret_paths(stored)  # a ChannelSpec too
    assert secret_values(stored) == list(SECRETS)


def test_secrets_that_are_not_set_are_not_listed(stored):
    stored["sink"]["config"].update(auth_header=None, headers={}, sasl=None, auth=None)

    assert secret_paths(stored) == ["transforms[1].config.api_key"]


def test_built_in_plugins_have_no_secrets_yet():
    spec = copy.deepcopy(secret_spec())
    del spec["transforms"][1]
    spec["sink"] = {"type": "kafka", "config": {"bootstrap_servers": "k:9092", "topic": "t"}}

    assert secret_paths(spec) == []
    assert redact(spec) == spec


@pytest.mark.parametrize(
    "spec",
    [
        None,
        [],
        "spec",
        {},
        {"source": 1, "transforms": "x", "sink": []},
        {"sink": {"type": "no-such-sink", "config": {"auth_header": "x"}}},
        {"sink": {"type": "webhook"}},
        {"sink": {"type": "webhook", "config": ["auth_header"]}},
        {"sink": {"type": "webhook", "config": {"sasl": "not an object", "headers": []}}},
    ],
)
def test_invalid_specs_are_read_without_errors(spec):
    assert secret_paths(spec) == []
    assert redact(spec) == spec
    assert merge_secrets({"x": 1}, spec) == {"x": 1}


def test_a_secret_of_the_wrong_type_is_still_a_secret():
    spec = {"sink": {"type": "webhook", "config": {"auth_header": 12345, "headers": {"a": []}}}}

    assert secret_paths(spec) == ["sink.config.auth_header", "sink.config.headers.a"]


def test_redact_replaces_each_secret_with_the_marker_and_nothing_else(stored):
    original = copy.deepcopy(stored)

    redacted = redact(stored)

    assert stored == original  # not modified
    assert [secret for secret in SECRETS if secret in repr(redacted)] == []
    sink = redacted["sink"]["config"]
    assert sink["auth_header"] == SECRET_MARKER
    assert sink["headers"] == {"X-Api-Key": SECRET_MARKER}
    assert sink["sasl"] == {"username": "svc", "password": SECRET_MARKER}
    assert sink["auth"] == {"kind": "bearer", "token": SECRET_MARKER}
    assert sink["url"] == original["sink"]["config"]["url"]
    assert redacted["transforms"][1]["config"]["api_key"] == SECRET_MARKER
    assert redacted["source"] == original["source"]
    assert redacted["transforms"][0] == original["transforms"][0]


def test_an_unset_secret_stays_null_so_clients_can_tell(stored):
    stored["sink"]["config"]["auth_header"] = None

    assert redact(stored)["sink"]["config"]["auth_header"] is None


def test_the_redacted_spec_read_back_merges_into_the_stored_one(stored):
    assert merge_secrets(redact(stored), stored) == stored


def test_a_secret_left_out_keeps_the_stored_value(stored):
    new = redact(stored)
    del new["sink"]["config"]["auth_header"]
    del new["sink"]["config"]["sasl"]["password"]
    del new["sink"]["config"]["auth"]["token"]
    del new["transforms"][1]["config"]["api_key"]

    assert merge_secrets(new, stored) == stored


def test_new_values_replace_and_null_clears(stored):
    new = redact(stored)
    new["sink"]["config"]["auth_header"] = "Bearer NEW"
    new["sink"]["config"]["sasl"] = None

    merged = merge_secrets(new, stored)

    assert merged["sink"]["config"]["auth_header"] == "Bearer NEW"
    assert merged["sink"]["config"]["sasl"] is None
    assert merged["sink"]["config"]["headers"] == {"X-Api-Key": "CHARLIE-789"}


def test_dict_entries_and_objects_left_out_are_gone_not_kept(stored):
    new = redact(stored)
    new["sink"]["config"]["headers"] = {"X-Other": "FOXTROT"}
    del new["sink"]["config"]["sasl"]

    merged = merge_secrets(new, stored)

    assert merged["sink"]["config"]["headers"] == {"X-Other": "FOXTROT"}
    assert "sasl" not in merged["sink"]["config"]  # validation fills in the default, None


def test_switching_a_union_variant_does_not_carry_the_other_variants_secret(stored):
    new = redact(stored)
    new["sink"]["config"]["auth"] = {"kind": "basic", "user": "u"}  # password left out

    merged = merge_secrets(new, stored)

    assert merged["sink"]["config"]["auth"] == {"kind": "basic", "user": "u"}
    with pytest.raises(SpecError) as raised:
        validate_spec(merged)
    assert "sink.config.auth.basic.password" in raised.value.errors


def test_a_marker_with_nothing_stored_is_an_error_at_its_path():
    spec = redact(secret_spec())

    with pytest.raises(SpecError) as raised:
        merge_secrets(spec, None)

    assert list(raised.value.errors) == ["transforms[1].config.api_key", *SINK_PATHS]
    assert "send the secret itself" in raised.value.errors["sink.config.auth_header"][0]


def test_secrets_follow_a_stage_only_while_it_keeps_its_position_and_type(stored):
    new = redact(stored)
    new["transforms"].reverse()  # enrich moves to [0], where filter was
    new["sink"] = {
        "type": "kafka",
        "config": {"bootstrap_servers": "k:9092", "topic": "t", "auth_header": SECRET_MARKER},
    }

    with pytest.raises(SpecError) as raised:
        merge_secrets(new, stored)

    # The kafka sink has no secret: its marker is a plain (and invalid) value, left to validation.
    assert list(raised.value.errors) == ["transforms[0].config.api_key"]


def test_merge_does_not_modify_its_arguments(stored):
    new = redact(stored)
    del new["sink"]["config"]["auth_header"]
    before_new, before_stored = copy.deepcopy(new), copy.deepcopy(stored)

    merge_secrets(new, stored)

    assert (new, stored) == (before_new, before_stored)


def test_merge_returns_what_is_not_an_object_unchanged(stored):
    assert merge_secrets(["x"], stored) == ["x"]  # type: ignore[arg-type]


def test_config_level_helpers():
    config = {"url": "u", "auth_header": "Bearer X1", "headers": {"h": "Y2"}, "sasl": None}

    assert redact_config(WebhookSinkConfig, config) == {
        "url": "u",
        "auth_header": SECRET_MARKER,
        "headers": {"h": SECRET_MARKER},
        "sasl": None,
    }
    assert config["auth_header"] == "Bearer X1"
    assert config_secret_values(WebhookSinkConfig, config) == ["Bearer X1", "Y2"]


def test_scrub_hides_every_occurrence_longest_first():
    text = "auth failed for 'Bearer XYZ' (token XYZ), again XYZ"

    assert scrub(text, ["XYZ", "Bearer XYZ", ""]) == (
        f"auth failed for '{SECRET_MARKER}' (token {SECRET_MARKER}), again {SECRET_MARKER}"
    )
    assert scrub("nothing here", []) == "nothing here"


@pytest.mark.parametrize(
    "plugin", [*plugins(), *secret_plugins.SECRET_PLUGINS], ids=lambda p: f"{p.kind}-{p.type}"
)
def test_no_plugin_publishes_a_secret_default_or_example(plugin):
    """The catalogue serves each config schema: a secret's default or example would leak."""

    def is_secret(node: dict) -> bool:
        branches = [node, *node.get("anyOf", ()), *node.get("oneOf", ())]
        return any(branch.get("writeOnly") is True for branch in branches)

    def check(node):
        if isinstance(node, dict):
            if is_secret(node):
                assert node.get("default") is None and "examples" not in node, node
            for child in node.values():
                check(child)
        elif isinstance(node, list):
            for child in node:
                check(child)

    check(plugin.json_schema)
