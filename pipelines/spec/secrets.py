"""Secrets in channel specs: find them, hide them, and keep them across edits.

A config field holds a secret when its type is :data:`pipelines.spec.configs.base.Secret`,
which marks it ``"writeOnly": true`` in the plugin's JSON Schema. The schema is the only
source: a secret is found at any depth the schema describes (nested models, ``Optional``,
``dict[str, Secret]``, lists of models), and functions here accept specs that are not valid
(they skip what they cannot place) so they can be used on any request body.

Secrets are write-only. What leaves the console is :func:`redact`-ed: each secret that is
set (any value but ``None``) becomes :data:`SECRET_MARKER`. What comes back goes through
:func:`merge_secrets` before it is validated: a secret sent as the marker, or a secret field
left out, keeps the value stored for the same stage (same position, same type, same
binding; a bus's rule is found by its name wherever it moved); ``null`` clears an optional
secret, and a new value replaces it. So GET-then-PUT of a spec neither leaks nor loses its
secrets. Dict entries and list items are data, not
fields: leaving one out removes it, only the marker keeps it.

A stored secret is bound to where it goes (as EventBridge binds a connection's credentials to
its endpoint): each config model with secrets declares a classmethod
``secret_binding(config) -> dict[str, Any]`` naming the normalised address its secrets
authenticate to (an HTTP origin, a database, a set of Kafka brokers and the identity used
there). When the binding of the stage sent differs from the stored one, the stored secrets of
that stage are not kept: each one sent as the marker or left out is an error naming what
changed, so an editor who points a stage at another host must type the secret again and
cannot have the stored one sent there. A model that declares no binding binds its secrets to
all of its other settings (:func:`secret_binding`): forgetting to declare one fails closed.

Paths are spelled as in spec validation errors: ``source.config.password``,
``transforms[0].config.headers.Authorization``.

Secrets are stored encrypted: :func:`encrypt_secrets` replaces each secret string by
``"enc:v1:<Fernet token>"`` and :func:`decrypt_secrets` turns it back, with a
:class:`SecretBox` built from ``SLUICE_SECRETS_KEY`` (:func:`secret_box_from_env`). The
console saves encrypted specs and hands them to the runtime as they are; the driver decrypts
just before it builds the query, so neither the database nor Redis holds a plaintext secret.
Plaintext values (saved before encryption) are read as they are. What may quote a secret
(traces, logs, lifecycle reasons) goes through :func:`mask_known_secrets` or
:class:`SecretMaskingFilter`.
"""

from __future__ import annotations

import base64
import copy
import functools
import hashlib
import logging
import os
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from typing import Any

from cryptography.fernet import Fernet, InvalidToken, MultiFernet
from pydantic import BaseModel
from pydantic_core import to_jsonable_python

from pipelines.spec.channel import DEFAULT_RULE, SpecError
from pipelines.spec.plugins import PluginKind, UnknownPluginError, get_plugin

SECRET_MARKER = "__sluice_secret__"
"""Stands for a stored secret in anything the console returns, and in what clients send back."""

Loc = tuple[str | int, ...]
Schema = Mapping[str, Any]


def secret_paths(spec: Mapping[str, Any] | BaseModel) -> list[str]:
    """Paths of the secrets set in ``spec`` (a channel spec, valid or not), in spec order."""
    return [_path(loc) for loc in _spec_secrets(_as_json(spec), _walk)]


def secret_values(spec: Mapping[str, Any] | BaseModel) -> list[str]:
    """The distinct non-empty string values of the secrets set in ``spec``."""
    data = _as_json(spec)
    return _strings(_get(data, loc) for loc in _spec_secrets(data, _walk))


def redact(spec: Mapping[str, Any] | BaseModel) -> dict[str, Any]:
    """A copy of ``spec`` with every secret that is set replaced by :data:`SECRET_MARKER`."""
    data = _json_copy(spec)
    for loc in _spec_secrets(data, _walk):
        _set(data, loc, SECRET_MARKER)
    return data


SECRET_CHANGED_MARKER = "__sluice_secret_changed__"
"""Stands, in a comparison of two versions of a spec, for a secret the later one changed."""


def redact_against(
    spec: Mapping[str, Any] | BaseModel, earlier: Mapping[str, Any] | BaseModel | None
) -> dict[str, Any]:
    """:func:`redact` ``spec``, except that each secret whose value ``earlier`` (an earlier
    version of the spec, secrets in plaintext as ``spec``'s) does not hold anywhere reads as
    :data:`SECRET_CHANGED_MARKER`: a comparison tells that a secret changed, never what it
    is. (A secret moved from one stage to another reads unchanged.)"""
    data = _json_copy(spec)
    known = set(secret_values(earlier)) if earlier is not None else set()
    for loc in _spec_secrets(data, _walk):
        value = _get(data, loc)
        changed = isinstance(value, str) and bool(value) and value not in known
        _set(data, loc, SECRET_CHANGED_MARKER if changed else SECRET_MARKER)
    return data


def merge_secrets(new_spec: object, stored_spec: Mapping[str, Any] | BaseModel | None) -> Any:
    """Return ``new_spec`` (a copy) with the secrets it keeps taken from ``stored_spec``.

    A secret sent as :data:`SECRET_MARKER`, or a secret field left out of an object whose
    model declares it, takes the stored value at the same path, provided the stage at that
    position has the same type in both specs and the same :func:`secret_binding`. Inside a
    bus the position is taken within the stored rule of the same ``name``, so reordering,
    inserting or removing rules keeps every rule's secrets; a renamed rule keeps none.
    Everything else is returned as sent (validate the result afterwards); a ``new_spec``
    that is not an object is returned unchanged.

    Raises :class:`SpecError` for a marker with no stored secret to keep (a new channel, a
    stage moved or retyped): saving the marker itself as the secret would be wrong; and for
    a marker or a left-out secret whose stage now points somewhere else (its binding
    changed): the secret must be entered again, or sent as ``null`` to clear it.
    """
    if not isinstance(new_spec, Mapping):
        return new_spec
    merged = copy.deepcopy(dict(new_spec))
    stored = _rules_by_name(_as_json(stored_spec) if stored_spec is not None else {}, merged)
    kept: dict[Loc, Any] = {}
    rebound: dict[Loc, str] = {}
    changes = _BindingChanges(merged, stored)
    for loc in _spec_secrets(stored, _walk):
        if not _same_stage(merged, stored, loc):
            continue
        changed = changes.of(loc)
        if changed:
            rebound[loc] = (
                f"re-enter the {changes.title(loc)}: the address it authenticates to "
                f"changed ({', '.join(changed)})"
            )
        else:
            kept[loc] = _get(stored, loc)
    errors: dict[str, list[str]] = {}
    for loc in _spec_secrets(merged, _walk):
        if _get(merged, loc) != SECRET_MARKER:
            continue
        if loc in kept:
            _set(merged, loc, kept[loc])
        elif loc in rebound:
            errors[_path(loc)] = [rebound[loc]]
        else:
            errors[_path(loc)] = [
                f"{SECRET_MARKER!r} keeps a stored secret, and there is none here to keep; "
                "send the secret itself"
            ]
    for loc in _spec_secrets(merged, _absent):
        if loc in kept:
            _set(merged, loc, kept[loc])
        elif loc in rebound:
            errors[_path(loc)] = [f"{rebound[loc]}; or send null to remove it"]
    if errors:
        raise SpecError(errors)
    return merged


def _rules_by_name(stored: Any, new: Mapping[str, Any]) -> Any:
    """``stored`` with its rules placed where ``new`` has the rules of the same name.

    A bus's rule is known by its name, not its place: rules reordered, inserted or removed
    keep their stages' secrets, and a rule named anew (or a new rule) keeps none. So the
    position-by-position comparison of :func:`merge_secrets` compares each new rule with
    the stored rule of its name (``None`` where there is none). Inside a rule, stages are
    compared by position, as the channel's own transforms are.

    A linear channel is a bus of one rule named ``default`` (``ChannelSpec.branches``): a
    linear channel made a bus keeps its sink's secrets in the first sink of its rule
    ``default``, and a bus made linear keeps, in its sink, those of that rule's first sink.
    """
    if not isinstance(stored, Mapping):
        return stored
    new_rules = new.get("rules")
    stored_rules = stored.get("rules")
    if not isinstance(new_rules, list):
        if not isinstance(stored_rules, list) or new.get("sink") is None:
            return stored
        default = _rules_named(stored_rules).get(DEFAULT_RULE)
        sinks = default.get("sinks") if isinstance(default, Mapping) else None
        sink = sinks[0] if isinstance(sinks, list) and sinks else None
        return {**{k: v for k, v in stored.items() if k != "rules"}, "sink": sink}
    if not isinstance(stored_rules, list):
        sink = stored.get("sink")
        stored_rules = [] if sink is None else [{"name": DEFAULT_RULE, "sinks": [sink]}]
    named = _rules_named(stored_rules)
    aligned = [
        named.pop(rule["name"], None)
        if isinstance(rule, Mapping) and isinstance(rule.get("name"), str)
        else None
        for rule in new_rules
    ]
    return {**{k: v for k, v in stored.items() if k != "sink"}, "rules": aligned}


def _rules_named(rules: list[Any]) -> dict[str, Any]:
    """The rules of a list by name (the first of a name, should it repeat)."""
    named: dict[str, Any] = {}
    for rule in rules:
        if isinstance(rule, Mapping) and isinstance(rule.get("name"), str):
            named.setdefault(rule["name"], rule)
    return named


def secret_binding(model: type[BaseModel], config: Any) -> dict[str, Any]:
    """Where the secrets of one stage's ``config`` (raw JSON, valid or not) go.

    ``model.secret_binding(config)`` when the model declares it: a few named values, each
    normalised so that a change that keeps the address (the case of a host name, a default
    port written out, another path) keeps the binding. Without a declaration: every setting
    of the stage but its secrets, defaults filled in, so that any other change drops the
    stored secrets (it fails closed). Raises ``TypeError``, ``ValueError``, ``KeyError`` or
    ``AttributeError`` when ``config`` is too malformed to read a binding from.
    """
    if not isinstance(config, Mapping):
        raise TypeError("a stage config is an object")
    declared = getattr(model, "secret_binding", None)
    return dict(declared(config)) if callable(declared) else _settings(model, config)


def redact_config(model: type[BaseModel], config: Any) -> Any:
    """A copy of one stage's ``config`` with its secrets replaced by :data:`SECRET_MARKER`."""
    config = copy.deepcopy(config)
    for loc in dict.fromkeys(_walk(_schema(model), config, (), _defs(model))):
        _set(config, loc, SECRET_MARKER)
    return config


def config_secret_values(model: type[BaseModel], config: Any) -> list[str]:
    """The distinct non-empty string values of the secrets set in one stage's ``config``."""
    found = _walk(_schema(model), config, (), _defs(model))
    return _strings(_get(config, loc) for loc in found)


def scrub(text: str, secrets: Iterable[str]) -> str:
    """``text`` with every occurrence of each secret replaced by :data:`SECRET_MARKER`.

    For text that may quote a secret: validation messages, a driver's error trace. Longer
    secrets are replaced first, so one that contains another is hidden whole.
    """
    for secret in sorted({s for s in secrets if s}, key=len, reverse=True):
        text = text.replace(secret, SECRET_MARKER)
    return text


# -- encryption at rest ------------------------------------------------------------------

ENCRYPTED_PREFIX = "enc:v1:"
"""Starts every encrypted secret value; what follows is a Fernet token."""

SECRETS_KEY_ENV = "SLUICE_SECRETS_KEY"
"""Comma-separated Fernet keys: the first encrypts, all decrypt (list the new key first)."""

DEVELOPMENT_SECRET_KEY = "django-insecure-sluice-development-key-do-not-use-in-production"
"""The console's development ``SECRET_KEY`` (``console.settings.DEV_SECRET_KEY``), which the
runtime cannot import: with neither key set, both sides derive the same fallback key from it."""


class SecretsKeyError(ValueError):
    """``SLUICE_SECRETS_KEY`` is malformed (a key is not a Fernet key)."""


class SecretDecryptionError(ValueError):
    """An encrypted secret cannot be decrypted with any configured key."""


def is_encrypted(value: Any) -> bool:
    """Whether ``value`` is a secret as :meth:`SecretBox.encrypt` writes it."""
    return isinstance(value, str) and value.startswith(ENCRYPTED_PREFIX)


def derive_key(secret: str) -> bytes:
    """A Fernet key derived from ``secret`` (the fallback when no key is configured)."""
    digest = hashlib.sha256(b"sluice-secrets-at-rest:" + secret.encode()).digest()
    return base64.urlsafe_b64encode(digest)


class SecretBox:
    """Encrypts and decrypts secret values with a list of Fernet keys (MultiFernet).

    The first key encrypts; every key decrypts, so keys rotate by putting a new one first
    and keeping the old ones until ``manage.py encrypt_secrets --rotate`` has run.
    """

    def __init__(self, keys: Sequence[str | bytes], *, derived: bool = False) -> None:
        if not keys:
            raise SecretsKeyError(f"{SECRETS_KEY_ENV} holds no key")
        fernets = []
        for position, key in enumerate(keys, start=1):
            try:
                fernets.append(Fernet(key))
            except (ValueError, TypeError):
                raise SecretsKeyError(
                    f"{SECRETS_KEY_ENV}: key {position} is not a Fernet key (32 url-safe "
                    'base64-encoded bytes; make one with `python -c "from cryptography.fernet '
                    'import Fernet; print(Fernet.generate_key().decode())"`)'
                ) from None
        self._fernet = MultiFernet(fernets)
        self.derived = derived
        """Whether the key was derived from the secret key (no ``SLUICE_SECRETS_KEY``)."""

    @classmethod
    def from_config(cls, keys: str | None, fallback_secret: str) -> SecretBox:
        """Keys from a ``SLUICE_SECRETS_KEY`` value; unset or blank, one derived from
        ``fallback_secret`` (the console's ``SECRET_KEY``)."""
        listed = [key.strip() for key in (keys or "").split(",") if key.strip()]
        if listed:
            return cls(listed)
        return cls([derive_key(fallback_secret)], derived=True)

    def encrypt(self, value: str) -> str:
        """``value`` encrypted with the first key, tagged with :data:`ENCRYPTED_PREFIX`."""
        return ENCRYPTED_PREFIX + self._fernet.encrypt(value.encode()).decode()

    def decrypt(self, value: str) -> str:
        """The plaintext of ``value``; a value without the prefix (plaintext) as it is.

        Raises :class:`SecretDecryptionError` when no configured key opens it.
        """
        if not is_encrypted(value):
            return value
        try:
            return self._fernet.decrypt(value[len(ENCRYPTED_PREFIX) :].encode()).decode()
        except (InvalidToken, UnicodeDecodeError):
            raise SecretDecryptionError(
                f"a stored secret cannot be decrypted with the keys in {SECRETS_KEY_ENV}: "
                "the key it was encrypted with is missing (keep old keys listed after the "
                "new one while rotating)"
            ) from None

    def rotate(self, value: str) -> str:
        """``value`` encrypted with the first key (plaintext is encrypted)."""
        if not is_encrypted(value):
            return self.encrypt(value)
        try:
            token = self._fernet.rotate(value[len(ENCRYPTED_PREFIX) :].encode())
        except InvalidToken:
            return self.encrypt(self.decrypt(value))  # raises the clear error
        return ENCRYPTED_PREFIX + token.decode()


def secret_box_from_env(environ: Mapping[str, str] | None = None) -> SecretBox:
    """The :class:`SecretBox` of a process without Django settings (the runtime).

    Uses ``SLUICE_SECRETS_KEY``, else derives the key from ``SLUICE_SECRET_KEY`` or the
    development key, exactly as the console does from its ``SECRET_KEY``.
    """
    env = os.environ if environ is None else environ
    fallback = env.get("SLUICE_SECRET_KEY") or DEVELOPMENT_SECRET_KEY
    return SecretBox.from_config(env.get(SECRETS_KEY_ENV), fallback)


def encrypt_secrets(spec: Mapping[str, Any], encrypt: Callable[[str], str]) -> dict[str, Any]:
    """A copy of ``spec`` with each secret string set replaced by ``encrypt(value)``.

    Values already encrypted (:func:`is_encrypted`) are kept, so this is idempotent; values
    that are not strings are left alone (validation refuses them).
    """
    return _map_secrets(spec, lambda value: value if is_encrypted(value) else encrypt(value))


def decrypt_secrets(spec: Mapping[str, Any], decrypt: Callable[[str], str]) -> dict[str, Any]:
    """A copy of ``spec`` with each encrypted secret replaced by ``decrypt(value)``.

    Plaintext secrets (stored before encryption) are kept as they are.
    """
    return _map_secrets(spec, lambda value: decrypt(value) if is_encrypted(value) else value)


def rotate_secrets(spec: Mapping[str, Any], rotate: Callable[[str], str]) -> dict[str, Any]:
    """A copy of ``spec`` with every secret string set, encrypted or not, replaced by
    ``rotate(value)`` (:meth:`SecretBox.rotate`: re-encrypted with the first key)."""
    return _map_secrets(spec, rotate)


def plaintext_secret_paths(spec: Mapping[str, Any]) -> list[str]:
    """Paths of the secrets set in ``spec`` whose values are plaintext strings."""
    return [
        _path(loc)
        for loc in _spec_secrets(spec, _walk)
        if isinstance(_get(spec, loc), str)
        and _get(spec, loc)
        and not is_encrypted(_get(spec, loc))
    ]


def encrypted_secret_paths(spec: Mapping[str, Any]) -> list[str]:
    """Paths of the secrets set in ``spec`` whose values are encrypted."""
    return [_path(loc) for loc in _spec_secrets(spec, _walk) if is_encrypted(_get(spec, loc))]


def _map_secrets(spec: Mapping[str, Any], change: Callable[[str], str]) -> dict[str, Any]:
    data = _json_copy(spec)
    for loc in _spec_secrets(data, _walk):
        value = _get(data, loc)
        if isinstance(value, str) and value:
            _set(data, loc, change(value))
    return data


# -- masking -----------------------------------------------------------------------------

MASK = "***"
MASK_MIN_LENGTH = 4
"""Shorter secrets are not masked: replacing every ``"ab"`` would garble any text."""


def mask_known_secrets(text: str, secrets: Iterable[str]) -> str:
    """``text`` with each occurrence of each secret of 4 or more characters replaced by
    ``***`` (longest first, so a secret containing another is hidden whole)."""
    if not text:
        return text
    for secret in sorted({s for s in secrets if len(s) >= MASK_MIN_LENGTH}, key=len, reverse=True):
        text = text.replace(secret, MASK)
    return text


class SecretMaskingFilter(logging.Filter):
    """A logging filter that masks known secret values in each record's message.

    Attach it to handlers (it then sees records from every logger); it renders the message
    with its arguments, masks it, and clears the arguments; it formats the exception into
    ``exc_text``, masks it and drops ``exc_info``, so any formatter (plain or JSON) gets
    clean text. Secrets are
    added as they become known with :meth:`add`.
    """

    def __init__(self, secrets: Iterable[str] = ()) -> None:
        super().__init__()
        self.secrets: set[str] = set()
        self.add(secrets)

    def add(self, secrets: Iterable[object]) -> None:  # keeps only strings
        self.secrets.update(s for s in secrets if isinstance(s, str) and len(s) >= MASK_MIN_LENGTH)

    def filter(self, record: logging.LogRecord) -> bool:
        if not self.secrets:
            return True
        message = record.getMessage()
        masked = mask_known_secrets(message, self.secrets)
        if masked != message:
            record.msg, record.args = masked, None
        if record.exc_info:
            # Formatted here and dropped, so no formatter renders the unmasked original.
            record.exc_text = record.exc_text or logging.Formatter().formatException(
                record.exc_info
            )
            record.exc_info = None
        if record.exc_text:
            record.exc_text = mask_known_secrets(record.exc_text, self.secrets)
        if record.stack_info:
            record.stack_info = mask_known_secrets(record.stack_info, self.secrets)
        return True


def install_masking_filter(secrets: Iterable[str] = ()) -> SecretMaskingFilter:
    """Add one :class:`SecretMaskingFilter` to every handler of the root logger (once per
    process) and return it; later calls add ``secrets`` to the same filter."""
    root = logging.getLogger()
    existing = next(
        (f for h in root.handlers for f in h.filters if isinstance(f, SecretMaskingFilter)),
        None,
    )
    masking = existing or SecretMaskingFilter()
    masking.add(secrets)
    for handler in root.handlers:
        if masking not in handler.filters:
            handler.addFilter(masking)
    return masking


# -- finding secrets ---------------------------------------------------------------------


Finder = Callable[[Schema, Any, Loc, Schema], Iterator[Loc]]


def _spec_secrets(spec: Any, finder: Finder) -> list[Loc]:
    """Locations ``finder`` (:func:`_walk` or :func:`_absent`) finds in each stage's config."""
    found: dict[Loc, None] = {}
    for stage_loc, kind, stage in _stages(spec):
        model = _config_model(kind, stage)
        if model is not None:
            loc = (*stage_loc, "config")
            config = stage.get("config")
            found.update(dict.fromkeys(finder(_schema(model), config, loc, _defs(model))))
    return list(found)


def _stages(spec: Any) -> Iterator[tuple[Loc, PluginKind, Any]]:
    if not isinstance(spec, Mapping):
        return
    yield ("source",), "source", spec.get("source")
    transforms = spec.get("transforms")
    if isinstance(transforms, list):
        for index, stage in enumerate(transforms):
            yield ("transforms", index), "transform", stage
    if spec.get("sink") is not None or not isinstance(spec.get("rules"), list):
        yield ("sink",), "sink", spec.get("sink")
    rules = spec.get("rules")
    if isinstance(rules, list):
        for rule_index, rule in enumerate(rules):
            if not isinstance(rule, Mapping):
                continue
            rule_transforms = rule.get("transforms")
            if isinstance(rule_transforms, list):
                for index, stage in enumerate(rule_transforms):
                    yield ("rules", rule_index, "transforms", index), "transform", stage
            sinks = rule.get("sinks")
            if isinstance(sinks, list):
                for index, stage in enumerate(sinks):
                    yield ("rules", rule_index, "sinks", index), "sink", stage
    errors = spec.get("errors")
    if isinstance(errors, Mapping):
        yield ("errors", "dead_letter"), "sink", errors.get("dead_letter")


def _config_model(kind: PluginKind, stage: Any) -> type[BaseModel] | None:
    if not isinstance(stage, Mapping) or not isinstance(stage.get("type"), str):
        return None
    try:
        return get_plugin(kind, stage["type"]).config_model
    except UnknownPluginError:
        return None


def _walk(schema: Schema, value: Any, loc: Loc, defs: Schema) -> Iterator[Loc]:
    """Yield the location of each secret set in ``value`` as ``schema`` reads it.

    Every branch of ``anyOf`` / ``oneOf`` / ``allOf`` is followed: a value that any branch
    calls secret is treated as one (hiding too much is safe; too little is not).
    """
    schema = _resolve(schema, defs)
    if schema.get("writeOnly") is True:
        if value is not None:
            yield loc
        return
    for keyword in _BRANCHES:
        for branch in schema.get(keyword, ()):
            yield from _walk(branch, value, loc, defs)
    if isinstance(value, Mapping):
        properties = schema.get("properties", {})
        extra = schema.get("additionalProperties")
        for key, item in value.items():
            if key in properties:
                yield from _walk(properties[key], item, (*loc, key), defs)
            elif isinstance(extra, Mapping):
                yield from _walk(extra, item, (*loc, key), defs)
    elif isinstance(value, list) and isinstance(schema.get("items"), Mapping):
        for index, item in enumerate(value):
            yield from _walk(schema["items"], item, (*loc, index), defs)


def _absent(schema: Schema, value: Any, loc: Loc, defs: Schema) -> Iterator[Loc]:
    """Yield the location of each secret field that an object in ``value`` declares but lacks.

    Only branches of a union that ``value`` fits are followed, so a secret of another variant
    is never added to an object.
    """
    schema = _resolve(schema, defs)
    for keyword in _BRANCHES:
        for branch in schema.get(keyword, ()):
            if _fits(branch, value, defs):
                yield from _absent(branch, value, loc, defs)
    if isinstance(value, Mapping):
        properties = schema.get("properties", {})
        extra = schema.get("additionalProperties")
        for key, field in properties.items():
            if key in value:
                yield from _absent(field, value[key], (*loc, key), defs)
            elif _is_secret(field, defs):
                yield (*loc, key)
        if isinstance(extra, Mapping):
            for key, item in value.items():
                if key not in properties:
                    yield from _absent(extra, item, (*loc, key), defs)
    elif isinstance(value, list) and isinstance(schema.get("items"), Mapping):
        for index, item in enumerate(value):
            yield from _absent(schema["items"], item, (*loc, index), defs)


_BRANCHES = ("anyOf", "oneOf", "allOf")
_JSON_TYPES = {"object": Mapping, "array": list, "string": str, "boolean": bool}


def _branches(schema: Schema, defs: Schema) -> list[Schema]:
    """``schema`` resolved, and every branch of its unions at any depth, resolved."""
    schema = _resolve(schema, defs)
    found = [schema]
    for keyword in _BRANCHES:
        for branch in schema.get(keyword, ()):
            found += _branches(branch, defs)
    return found


def _is_secret(schema: Schema, defs: Schema) -> bool:
    """Whether a field's schema is a secret, possibly optional (``Secret | None``)."""
    schema = _resolve(schema, defs)
    if schema.get("writeOnly") is True:
        return True
    return any(_is_secret(branch, defs) for k in _BRANCHES for branch in schema.get(k, ()))


def _fits(schema: Schema, value: Any, defs: Schema) -> bool:
    """A cheap check that ``value`` may be of this union branch (type, fields, constants)."""
    schema = _resolve(schema, defs)
    expected = _JSON_TYPES.get(schema.get("type", ""))
    if schema.get("type") == "null":
        return value is None
    if expected is not None and not isinstance(value, expected):
        return False
    if not isinstance(value, Mapping):
        return True
    properties = schema.get("properties", {})
    if schema.get("additionalProperties") is False and not set(value) <= set(properties):
        return False
    for key, field in properties.items():
        field = _resolve(field, defs)
        if key in value and "const" in field and value[key] != field["const"]:
            return False
        if key in value and "enum" in field and value[key] not in field["enum"]:
            return False
    return True


def _resolve(schema: Schema, defs: Schema) -> Schema:
    seen: set[str] = set()
    while isinstance(schema.get("$ref"), str) and schema["$ref"] not in seen:
        seen.add(schema["$ref"])
        schema = defs.get(schema["$ref"].rpartition("/")[2], {})
    return schema


def _title(schema: Schema, loc: Loc, defs: Schema) -> str | None:
    """The title ``schema`` gives the field at ``loc`` (following ``$ref`` and unions)."""
    for part in loc:
        found: Schema | None = None
        for branch in _branches(schema, defs):
            if isinstance(part, str) and part in branch.get("properties", {}):
                found = branch["properties"][part]
                break
        if found is None:
            return None  # a dict entry or a list item: named by its key
        schema = found
    title = schema.get("title") or _resolve(schema, defs).get("title")
    return title if isinstance(title, str) and title else None


@functools.cache
def _schema(model: type[BaseModel]) -> Schema:
    return model.model_json_schema()


def _defs(model: type[BaseModel]) -> Schema:
    defs: Schema = _schema(model).get("$defs", {})  # JSON Schema: "$defs" is an object
    return defs


# -- bindings ----------------------------------------------------------------------------

_UNREADABLE = (TypeError, ValueError, KeyError, AttributeError)


def _settings(model: type[BaseModel], config: Mapping[str, Any]) -> dict[str, Any]:
    """``config`` with the model's defaults filled in (top level), without its secrets."""
    filled = dict(config)
    for name, field in model.model_fields.items():
        if name not in filled and not field.is_required():
            filled[name] = to_jsonable_python(field.get_default(call_default_factory=True))
    return _fields_without_secrets(_schema(model), filled, _defs(model))


def _whole(model: type[BaseModel], config: Any) -> Any:
    return _settings(model, config) if isinstance(config, Mapping) else config


def _fields_without_secrets(
    schema: Schema, value: Mapping[str, Any], defs: Schema
) -> dict[str, Any]:
    """A copy of the object ``value`` without the fields ``schema`` (any branch) calls secret."""
    branches = _branches(schema, defs)
    fields: dict[str, Schema] = {}
    for branch in branches:
        fields.update(branch.get("properties", {}))
    extra = next(
        (
            b["additionalProperties"]
            for b in branches
            if isinstance(b.get("additionalProperties"), Mapping)
        ),
        None,
    )
    result = {}
    for key, item in value.items():
        field = fields.get(key, extra)
        if field is None:
            result[key] = item
        elif not _is_secret(field, defs):
            result[key] = _without_secrets(field, item, defs)
    return result


def _without_secrets(schema: Schema, value: Any, defs: Schema) -> Any:
    """A copy of ``value`` without the fields ``schema`` (any branch) calls secret."""
    if isinstance(value, Mapping):
        return _fields_without_secrets(schema, value, defs)
    branches = _branches(schema, defs)
    items = next((b["items"] for b in branches if isinstance(b.get("items"), Mapping)), None)
    if isinstance(value, list) and items is not None:
        return [_without_secrets(items, item, defs) for item in value]
    return value


class _BindingChanges:
    """What changed in the binding of each stored stage, between a stored spec and a new one
    (the stages compared are at the same position and of the same type)."""

    def __init__(self, new: Any, stored: Any) -> None:
        self.new, self.stored = new, stored
        self.models = {
            stage_loc: _config_model(kind, stage) for stage_loc, kind, stage in _stages(stored)
        }
        self._changed: dict[Loc, list[str]] = {}

    def of(self, loc: Loc) -> list[str]:
        """The names of the binding values that differ for the stage holding ``loc``."""
        stage_loc = _stage_loc(loc)
        if stage_loc not in self._changed:
            self._changed[stage_loc] = self._compare(stage_loc)
        return self._changed[stage_loc]

    def title(self, loc: Loc) -> str:
        """The secret's field title as a sentence names it ("password", "SASL password")."""
        stage_loc = _stage_loc(loc)
        model = self.models.get(stage_loc)
        found = (
            None
            if model is None
            else _title(_schema(model), loc[len(stage_loc) + 1 :], _defs(model))
        )
        title = found or str(loc[-1])
        return title[0].lower() + title[1:] if title[1:2].islower() else title

    def _compare(self, stage_loc: Loc) -> list[str]:
        model = self.models.get(stage_loc)
        if model is None:
            return ["type"]
        stored = _get(self.stored, (*stage_loc, "config"))
        new = _get(self.new, (*stage_loc, "config"))
        try:
            before, after = secret_binding(model, stored), secret_binding(model, new)
        except _UNREADABLE:  # an invalid config: only the same settings keep the secrets
            before, after = {"config": _whole(model, stored)}, {"config": _whole(model, new)}
        names = dict.fromkeys([*before, *after])
        return [name for name in names if before.get(name, _MISSING) != after.get(name, _MISSING)]


# -- locations ---------------------------------------------------------------------------

_MISSING = object()


def _get(data: Any, loc: Loc) -> Any:
    for part in loc:
        if isinstance(part, int):
            if not isinstance(data, list) or part >= len(data):
                return _MISSING
        elif not isinstance(data, Mapping) or part not in data:
            return _MISSING
        data = data[part]
    return data


def _set(data: Any, loc: Loc, value: Any) -> None:
    parent = _get(data, loc[:-1])
    parent[loc[-1]] = value


def _stage_loc(loc: Loc) -> Loc:
    """The location of the stage that holds ``loc`` (``("sink",)``, ``("transforms", 1)``,
    ``("rules", 0, "sinks", 1)``)."""
    if loc[0] == "rules":
        return loc[:4]
    return loc[:2] if loc[0] in ("transforms", "errors") else loc[:1]


def _same_stage(new: Any, stored: Any, loc: Loc) -> bool:
    """Whether the stage holding ``loc`` has the same type in both specs (its position is
    the one in ``loc``: a stage moved elsewhere is another stage)."""
    stage_loc = _stage_loc(loc)
    new_stage, stored_stage = _get(new, stage_loc), _get(stored, stage_loc)
    return (
        isinstance(new_stage, Mapping)
        and isinstance(stored_stage, Mapping)
        and new_stage.get("type") == stored_stage.get("type")
    )


def _path(loc: Loc) -> str:
    path = ""
    for part in loc:
        path += f"[{part}]" if isinstance(part, int) else (f".{part}" if path else part)
    return path


def _strings(values: Iterable[Any]) -> list[str]:
    return list(dict.fromkeys(v for v in values if isinstance(v, str) and v))


def _as_json(spec: Mapping[str, Any] | BaseModel) -> Any:
    """``spec`` as JSON data. Any: a spec read from storage may be anything (``None``, a
    list); the walks skip what is not an object, and such a spec comes back unchanged."""
    return spec.model_dump(mode="json") if isinstance(spec, BaseModel) else spec


def _json_copy(spec: Mapping[str, Any] | BaseModel) -> dict[str, Any]:
    """A deep copy of ``spec`` as JSON data, to change (a dict for every valid spec)."""
    data: dict[str, Any] = copy.deepcopy(_as_json(spec))
    return data
