"""``pipelines.spec.secrets``: finding, redacting and merging secrets in channel specs."""

from __future__ import annotations

import copy
import io
import json
import logging

import pytest
from cryptography.fernet import Fernet

from pipelines.spec import SpecError, plugins, validate_spec
from pipelines.spec.secrets import (
    DEVELOPMENT_SECRET_KEY,
    ENCRYPTED_PREFIX,
    SECRET_MARKER,
    SecretBox,
    SecretDecryptionError,
    SecretMaskingFilter,
    SecretsKeyError,
    config_secret_values,
    decrypt_secrets,
    encrypt_secrets,
    encrypted_secret_paths,
    install_masking_filter,
    mask_known_secrets,
    merge_secrets,
    plaintext_secret_paths,
    redact,
    redact_config,
    rotate_secrets,
    scrub,
    secret_box_from_env,
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


# -- secrets bound to where they go ------------------------------------------------------

KAFKA_SASL = {
    "bootstrap_servers": "k1.example.com:9093,k2.example.com:9093",
    "security": {
        "protocol": "SASL_SSL",
        "sasl_mechanism": "SCRAM-SHA-512",
        "username": "svc",
        "password": "KAFKA-PASS-1",
    },
}
BOUND_STAGES = {
    "http-basic": {
        "type": "http",
        "config": {
            "url": "https://api.example.com/events",
            "auth": {"type": "basic", "username": "svc", "password": "HTTP-PASS-1"},
        },
    },
    "http-bearer": {
        "type": "http",
        "config": {
            "url": "https://api.example.com/events",
            "auth": {"type": "bearer", "token": "HTTP-TOKEN-1"},
        },
    },
    "http-api-key": {
        "type": "http",
        "config": {
            "url": "https://api.example.com/events",
            "auth": {"type": "api_key", "header": "X-API-Key", "value": "HTTP-KEY-1"},
        },
    },
    "jdbc": {
        "type": "jdbc",
        "config": {
            "url": "postgresql://db.example.com:5432/events?sslmode=verify-full",
            "user": "app",
            "password": "JDBC-PASS-1",
        },
    },
    "kafka": {"type": "kafka", "config": {**KAFKA_SASL, "topic": "out"}},
}
KAFKA_SOURCE = {"type": "kafka", "config": {"bootstrap_servers": "k:9092", "topics": ["in"]}}
PLAIN_SINK = {"type": "kafka", "config": {"bootstrap_servers": "k:9092", "topic": "out"}}


def bound_spec(where: str, stage: str) -> dict:
    """A stored spec with ``BOUND_STAGES[stage]`` as its source, sink or dead-letter sink."""
    spec: dict = {"source": KAFKA_SOURCE, "sink": PLAIN_SINK}
    if where == "source":
        spec["source"] = {"type": "kafka", "config": {**KAFKA_SASL, "topics": ["in"]}}
    elif where == "sink":
        spec["sink"] = BOUND_STAGES[stage]
    else:
        spec["errors"] = {"tolerance": "all", "dead_letter": BOUND_STAGES[stage]}
    return validate_spec(copy.deepcopy(spec)).model_dump(mode="json")


def resend(stored: dict, config_loc: tuple, edit) -> dict:
    """``merge_secrets`` of the stored spec read back (redacted) with ``edit`` applied to the
    config at ``config_loc``."""
    new = redact(stored)
    config = new
    for part in config_loc:
        config = config[part]
    edit(config)
    return merge_secrets(new, stored)


def setter(path: str, value):
    """An edit that sets the config field at ``path`` (dotted) to ``value``."""

    def edit(config: dict) -> None:
        *parents, name = path.split(".")
        for parent in parents:
            config = config[parent]
        config[name] = value

    return edit


# (stage, field, new value, secret path in the config, what the error names)
REBINDINGS = [
    ("http-basic", "url", "https://evil.example.net/events", "auth.password", "url host"),
    ("http-basic", "url", "http://api.example.com/events", "auth.password", "url scheme, url port"),
    ("http-basic", "url", "https://api.example.com:8443/events", "auth.password", "url port"),
    ("http-basic", "auth.username", "admin", "auth.password", "auth.username"),
    ("http-bearer", "url", "https://evil.example.net/events", "auth.token", "url host"),
    ("http-bearer", "url", "https://93.184.216.34/events", "auth.token", "url host"),
    ("http-api-key", "url", "https://evil.example.net/", "auth.value", "url host"),
    (
        "jdbc",
        "url",
        "postgresql://evil.example.net:5432/events?sslmode=verify-full",
        "password",
        "url host",
    ),
    (
        "jdbc",
        "url",
        "postgresql://db.example.com:6432/events?sslmode=verify-full",
        "password",
        "url port",
    ),
    (
        "jdbc",
        "url",
        "postgresql://db.example.com:5432/other?sslmode=verify-full",
        "password",
        "url database",
    ),
    (
        "jdbc",
        "url",
        "postgresql://db.example.com:5432/events?sslmode=disable",
        "password",
        "url parameters",
    ),
    ("jdbc", "user", "postgres", "password", "user"),
    (
        "jdbc",
        "url",
        "postgresql://root@db.example.com:5432/events?sslmode=verify-full",
        "password",
        None,
    ),  # the URL's user counts only when the field names none
    (
        "kafka",
        "bootstrap_servers",
        "evil.example.net:9093",
        "security.password",
        "bootstrap_servers",
    ),
    (
        "kafka",
        "bootstrap_servers",
        "k1.example.com:9093,k2.example.com:9093,evil.example.net:9093",
        "security.password",
        "bootstrap_servers",
    ),
    (
        "kafka",
        "bootstrap_servers",
        "k1.example.com:9094,k2.example.com:9093",
        "security.password",
        "bootstrap_servers",
    ),
    ("kafka", "security.sasl_mechanism", "PLAIN", "security.password", "security.sasl_mechanism"),
    ("kafka", "security.username", "admin", "security.password", "security.username"),
    ("kafka", "security.protocol", "SASL_PLAINTEXT", "security.password", "security.protocol"),
    (
        "kafka",
        "security.ssl_endpoint_identification",
        False,
        "security.password",
        "security.ssl_endpoint_identification",
    ),
]
WHERE = {"sink": ("sink", "config"), "dead_letter": ("errors", "dead_letter", "config")}


@pytest.mark.parametrize("where", ["sink", "dead_letter"])
@pytest.mark.parametrize(
    ("stage", "field", "value", "secret", "changed"),
    REBINDINGS,
    ids=[f"{case[0]}-{case[1]}-{case[2]}" for case in REBINDINGS],
)
def test_a_kept_secret_is_dropped_when_its_address_changes(
    where, stage, field, value, secret, changed
):
    stored = bound_spec(where, stage)
    config_loc = WHERE[where]
    path = ".".join([*config_loc, secret])

    if changed is None:
        merged = resend(stored, config_loc, setter(field, value))
        assert secret_paths(merged) == secret_paths(stored)  # kept
        return
    with pytest.raises(SpecError) as raised:
        resend(stored, config_loc, setter(field, value))

    assert list(raised.value.errors) == [path]
    (message,) = raised.value.errors[path]
    assert message.startswith("re-enter the ")
    assert message.endswith(f": the address it authenticates to changed ({changed})")
    assert not [value for value in secret_values(stored) if value in message]


@pytest.mark.parametrize(
    ("field", "value", "changed"),
    [
        ("bootstrap_servers", "evil.example.net:9093", "bootstrap_servers"),
        ("security.username", "admin", "security.username"),
        ("security.sasl_mechanism", "SCRAM-SHA-256", "security.sasl_mechanism"),
    ],
)
def test_a_kafka_source_password_is_bound_too(field, value, changed):
    stored = bound_spec("source", "kafka")

    with pytest.raises(SpecError) as raised:
        resend(stored, ("source", "config"), setter(field, value))

    assert raised.value.errors == {
        "source.config.security.password": [
            f"re-enter the SASL password: the address it authenticates to changed ({changed})"
        ]
    }


def test_the_message_names_the_secret_and_what_changed():
    stored = bound_spec("sink", "jdbc")

    with pytest.raises(SpecError) as raised:
        resend(stored, ("sink", "config"), setter("url", "postgresql://evil.example.net/events"))

    assert raised.value.errors == {
        "sink.config.password": [
            "re-enter the password: the address it authenticates to changed "
            "(url host, url parameters)"
        ]
    }


# (stage, field, new value): the same address written another way keeps the secret
COSMETIC = [
    ("http-basic", "url", "HTTPS://API.Example.COM:443/events"),
    ("http-basic", "url", "https://api.example.com./events/"),
    ("http-basic", "url", "https://api.example.com/other/path?page=2"),
    ("http-bearer", "timeout_seconds", 30),
    ("http-api-key", "auth.header", "Authorization"),
    ("jdbc", "url", "postgres://DB.example.com/events?sslmode=verify-full"),
    ("jdbc", "table", "other_events"),
    ("kafka", "bootstrap_servers", " K2.Example.com:9093 , k1.example.com:9093"),
    ("kafka", "topic", "elsewhere"),
]


@pytest.mark.parametrize("where", ["sink", "dead_letter"])
@pytest.mark.parametrize(("stage", "field", "value"), COSMETIC, ids=lambda v: str(v))
def test_the_same_address_written_another_way_keeps_the_secret(where, stage, field, value):
    stored = bound_spec(where, stage)

    merged = resend(stored, WHERE[where], setter(field, value))

    assert secret_values(merged) == secret_values(stored)
    validate_spec(merged)


def test_a_cosmetic_change_to_a_kafka_source_keeps_its_password():
    stored = bound_spec("source", "kafka")
    edit = setter("bootstrap_servers", "k2.example.com:9093,K1.EXAMPLE.COM:9093")

    assert secret_values(resend(stored, ("source", "config"), edit)) == ["KAFKA-PASS-1"]


def test_a_secret_left_out_of_a_moved_address_is_required_again():
    stored = bound_spec("sink", "jdbc")

    def edit(config: dict) -> None:
        config["url"] = "postgresql://evil.example.net:5432/events?sslmode=verify-full"
        del config["password"]

    with pytest.raises(SpecError) as raised:
        resend(stored, ("sink", "config"), edit)

    (message,) = raised.value.errors["sink.config.password"]
    assert "re-enter the password" in message
    assert message.endswith("or send null to remove it")


def test_a_moved_address_takes_a_new_secret_or_null():
    stored = bound_spec("sink", "jdbc")
    moved = "postgresql://db2.example.com:5432/events?sslmode=verify-full"

    def new_password(config: dict) -> None:
        config.update(url=moved, password="JDBC-PASS-2")

    def no_password(config: dict) -> None:
        config.update(url=moved, password=None)

    assert resend(stored, ("sink", "config"), new_password)["sink"]["config"]["password"] == (
        "JDBC-PASS-2"
    )
    assert resend(stored, ("sink", "config"), no_password)["sink"]["config"]["password"] is None


def test_swapping_the_sink_and_the_dead_letter_target_does_not_carry_their_secrets():
    sink = copy.deepcopy(BOUND_STAGES["kafka"])
    dead_letter = copy.deepcopy(BOUND_STAGES["kafka"])
    dead_letter["config"].update(bootstrap_servers="dlq.example.com:9093", topic="dlq")
    dead_letter["config"]["security"]["password"] = "DLQ-PASS-1"
    stored = validate_spec(
        {
            "source": KAFKA_SOURCE,
            "sink": sink,
            "errors": {"tolerance": "all", "dead_letter": dead_letter},
        }
    ).model_dump(mode="json")
    new = redact(stored)
    new["sink"], new["errors"]["dead_letter"] = new["errors"]["dead_letter"], new["sink"]

    with pytest.raises(SpecError) as raised:
        merge_secrets(new, stored)

    assert sorted(raised.value.errors) == [
        "errors.dead_letter.config.security.password",
        "sink.config.security.password",
    ]


def test_a_plugin_that_declares_no_binding_binds_its_secrets_to_all_its_settings(stored):
    new = redact(stored)
    new["transforms"][1]["config"]["endpoint"] = "http://elsewhere"  # enrich declares none

    with pytest.raises(SpecError) as raised:
        merge_secrets(new, stored)

    assert raised.value.errors == {
        "transforms[1].config.api_key": [
            "re-enter the API key: the address it authenticates to changed (endpoint)"
        ]
    }


def test_a_binding_that_cannot_be_read_compares_the_whole_config():
    stored = bound_spec("sink", "jdbc")
    new = redact(stored)
    new["sink"]["config"]["url"] = 5432  # not a URL: validation refuses it later

    with pytest.raises(SpecError) as raised:
        merge_secrets(new, stored)

    assert "changed (config)" in raised.value.errors["sink.config.password"][0]
    assert merge_secrets(redact(stored), stored) == stored  # the same config still reads


@pytest.mark.parametrize("plugin", plugins(), ids=lambda p: f"{p.kind}-{p.type}")
def test_every_built_in_plugin_with_a_secret_declares_its_binding(plugin):
    """A plugin without ``secret_binding`` fails closed (any change drops its secrets):
    a built-in one should say what its secrets authenticate to."""

    def has_secret(node) -> bool:
        if isinstance(node, dict):
            return node.get("writeOnly") is True or any(has_secret(v) for v in node.values())
        return isinstance(node, list) and any(has_secret(v) for v in node)

    if has_secret(plugin.json_schema):
        assert callable(getattr(plugin.config_model, "secret_binding", None)), plugin.type


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


# -- encryption at rest ------------------------------------------------------------------


def _box(*keys: bytes) -> SecretBox:
    return SecretBox(list(keys))


KEY_OLD = Fernet.generate_key()
KEY_NEW = Fernet.generate_key()


def test_encrypt_secrets_replaces_each_secret_at_any_depth(stored):
    box = _box(KEY_NEW)

    encrypted = encrypt_secrets(stored, box.encrypt)

    text = json.dumps(encrypted)
    assert [s for s in SECRETS if s in text] == []
    assert encrypted_secret_paths(encrypted) == ["transforms[1].config.api_key", *SINK_PATHS]
    config = encrypted["sink"]["config"]
    assert config["headers"]["X-Api-Key"].startswith(ENCRYPTED_PREFIX)  # dict of secrets
    assert config["sasl"]["password"].startswith(ENCRYPTED_PREFIX)  # nested model
    assert config["sasl"]["username"] == "svc"  # not a secret
    assert config["url"] == stored["sink"]["config"]["url"]
    assert stored["sink"]["config"]["sasl"]["password"] == "DELTA-012"  # the input is a copy
    assert decrypt_secrets(encrypted, box.decrypt) == stored


def test_encrypting_twice_keeps_the_encrypted_values(stored):
    box = _box(KEY_NEW)
    once = encrypt_secrets(stored, box.encrypt)

    assert encrypt_secrets(once, box.encrypt) == once


def test_decrypt_reads_plaintext_secrets_as_they_are(stored):
    box = _box(KEY_NEW)
    mixed = encrypt_secrets(stored, box.encrypt)
    mixed["sink"]["config"]["auth_header"] = "Bearer BRAVO-456"  # saved before encryption

    assert decrypt_secrets(mixed, box.decrypt) == stored
    assert plaintext_secret_paths(mixed) == ["sink.config.auth_header"]


def test_redact_and_merge_work_on_encrypted_specs(stored):
    encrypted = encrypt_secrets(stored, _box(KEY_NEW).encrypt)

    assert redact(encrypted) == redact(stored)
    merged = merge_secrets(redact(encrypted), encrypted)
    assert merged == encrypted  # the stored (encrypted) values are kept


def test_rotation_decrypts_with_every_key_and_encrypts_with_the_first(stored):
    old = _box(KEY_OLD)
    rotating = _box(KEY_NEW, KEY_OLD)
    encrypted_with_old = encrypt_secrets(stored, old.encrypt)

    assert decrypt_secrets(encrypted_with_old, rotating.decrypt) == stored
    rotated = rotate_secrets(encrypted_with_old, rotating.rotate)
    assert decrypt_secrets(rotated, _box(KEY_NEW).decrypt) == stored  # old key now unneeded
    with pytest.raises(SecretDecryptionError):
        decrypt_secrets(rotated, old.decrypt)


def test_a_wrong_key_is_a_clear_error_that_quotes_no_secret(stored):
    encrypted = encrypt_secrets(stored, _box(KEY_OLD).encrypt)

    with pytest.raises(SecretDecryptionError, match="SLUICE_SECRETS_KEY") as error:
        decrypt_secrets(encrypted, _box(KEY_NEW).decrypt)
    assert [s for s in SECRETS if s in str(error.value)] == []


def test_a_malformed_key_is_refused_with_its_position():
    with pytest.raises(SecretsKeyError, match="key 2 is not a Fernet key"):
        SecretBox.from_config(f"{KEY_NEW.decode()}, not-a-key", "fallback")


def test_without_a_key_one_is_derived_from_the_secret_key():
    derived = SecretBox.from_config("", "some-secret-key")
    same = SecretBox.from_config(None, "some-secret-key")
    other = SecretBox.from_config(" ", "another-secret-key")

    token = derived.encrypt("hunter22")
    assert derived.derived and same.decrypt(token) == "hunter22"
    with pytest.raises(SecretDecryptionError):
        other.decrypt(token)


def test_the_runtime_builds_its_box_from_the_environment():
    console_like = SecretBox.from_config(KEY_NEW.decode(), "ignored")
    token = console_like.encrypt("hunter22")

    assert secret_box_from_env({"SLUICE_SECRETS_KEY": KEY_NEW.decode()}).decrypt(token) == (
        "hunter22"
    )
    dev = SecretBox.from_config("", DEVELOPMENT_SECRET_KEY).encrypt("hunter22")
    assert secret_box_from_env({}).decrypt(dev) == "hunter22"


# -- masking -----------------------------------------------------------------------------


def test_mask_known_secrets_hides_secrets_of_four_or_more_characters():
    text = "auth failed for svc:DELTA-012 with key DELTA-012-EXTRA and pin 123"

    masked = mask_known_secrets(text, ["DELTA-012", "DELTA-012-EXTRA", "123", ""])

    assert masked == "auth failed for svc:*** with key *** and pin 123"


def test_the_logging_filter_masks_messages_arguments_and_tracebacks():
    stream = io.StringIO()
    handler = logging.StreamHandler(stream)
    handler.setFormatter(logging.Formatter("%(levelname)s %(message)s"))
    handler.addFilter(SecretMaskingFilter(["DELTA-012"]))
    logger = logging.getLogger("tests.masking")
    logger.addHandler(handler)
    logger.propagate = False
    try:
        logger.warning("password %s refused", "DELTA-012")
        try:
            raise RuntimeError("bad credentials svc:DELTA-012")
        except RuntimeError:
            logger.exception("connector failed")
    finally:
        logger.removeHandler(handler)

    output = stream.getvalue()
    assert "DELTA-012" not in output
    assert "password *** refused" in output
    assert "RuntimeError: bad credentials svc:***" in output


def test_install_masking_filter_adds_one_filter_to_the_root_handlers():
    root = logging.getLogger()
    handler = logging.StreamHandler(io.StringIO())
    root.addHandler(handler)
    try:
        first = install_masking_filter(["ALPHA-1234"])
        second = install_masking_filter(["BRAVO-5678"])

        assert first is second
        assert handler.filters.count(first) == 1
        assert {"ALPHA-1234", "BRAVO-5678"} <= first.secrets
    finally:
        root.removeHandler(handler)
        for h in root.handlers:
            for f in list(h.filters):
                if isinstance(f, SecretMaskingFilter):
                    h.removeFilter(f)
