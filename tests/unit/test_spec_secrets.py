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
