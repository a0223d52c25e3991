"""Channel specs, plugins and event patterns, through :mod:`pipelines.spec`.

Nothing here changes state: these are the checks the API and the admin run, and the
redaction that keeps secrets inside the console (see :mod:`pipelines.spec.secrets`).
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from typing import Any

from console.crypto import decrypt_spec, plain_secret_values
from console.errors import InvalidSpec
from console.models import Team
from pipelines.spec import (
    PLUGIN_KINDS,
    Plugin,
    SpecError,
    StageSpec,
    UnknownPluginError,
    get_plugin,
    parse_stage_config,
    plugins,
    validate_spec,
)
from pipelines.spec.channel import MAX_RULES, MAX_TRANSFORMS, RULE_NAME_PATTERN, RuleSpec
from pipelines.spec.patterns import PatternError, matches, validate_pattern
from pipelines.spec.reach import InvalidReach, in_effect, parse_reach
from pipelines.spec.routing import FILTER, RuleRoute, Verdict, route_sample
from pipelines.spec.secrets import (
    ENCRYPTED_PREFIX,
    SECRET_CHANGED_MARKER,
    SECRET_MARKER,
    config_secret_values,
    encrypted_secret_paths,
    mask_known_secrets,
    merge_secrets,
    redact,
    redact_config,
    scrub,
    secret_values,
)

__all__ = [
    "FILTER",
    "MAX_RULES",
    "MAX_TRANSFORMS",
    "PLUGIN_KINDS",
    "RULE_FIELDS",
    "RULE_NAME",
    "SECRET_CHANGED_MARKER",
    "SECRET_MARKER",
    "AmbiguousPluginType",
    "NormalizedSpec",
    "PatternError",
    "Plugin",
    "RuleRoute",
    "UnknownPluginError",
    "UnknownPluginType",
    "Verdict",
    "check_stage_config",
    "event_pattern_matches",
    "find_plugin",
    "get_plugin",
    "mask_known_secrets",
    "normalize_spec",
    "plain_secret_values",
    "plugins",
    "redact_spec",
    "rules_routing",
    "scrub",
    "scrub_secrets",
    "team_reach",
    "validate_pattern",
]


RULE_FIELDS = tuple(RuleSpec.model_fields)
"""The fields of a bus's rule (``name``, ``description``, ``enabled``, ``pattern``, …)."""
RULE_NAME = re.compile(RULE_NAME_PATTERN.removesuffix("$") + r"\Z")
"""A rule's name, whole (``$`` would let a trailing newline through)."""


class NormalizedSpec(dict[str, Any]):
    """A spec :func:`normalize_spec` returned: its normalised JSON form (this dict), with
    the spec as it was sent (``sent``) and the stored spec its secrets were merged from
    (``stored``, plaintext; ``None`` for a new channel).

    A write validates its spec where it reads the request (the API's serializer, the
    admin's form) and hands this to the service, whose own :func:`normalize_spec` then
    returns it as it is instead of validating it again. Against another stored spec (a
    revision saved in between, under the service's lock) it is normalised again from
    ``sent``, so a secret kept by its marker is always the latest one.
    """

    def __init__(
        self,
        normalized: Mapping[str, Any],
        *,
        sent: Any,
        stored: Mapping[str, Any] | None,
        reach: tuple[str, Any] | None = None,
    ) -> None:
        super().__init__(normalized)
        self.sent = sent
        self.stored = stored
        self.reach = reach
        """``(team, reach)`` it was validated under (``None``: the site's defaults only)."""


def _reach_key(team: Team | None) -> tuple[str, Any] | None:
    """What a spec was validated within: a team without a reach sets nothing (the site's
    defaults, as without a team), so its spec need not be validated again."""
    return None if team is None or not team.reach else (team.name, team.reach)


@contextmanager
def team_reach(team: Team | None) -> Iterator[None]:
    """``team``'s reach (:mod:`pipelines.spec.reach`) in effect for the block: what a spec
    validated there names (topics, files, hosts) must lie within it. ``None``: the site's
    defaults. A stored reach that does not validate refuses every spec, saying so."""
    if team is None:
        yield
        return
    try:
        reach = parse_reach(team.reach)
    except InvalidReach as error:
        raise InvalidSpec(
            {"": [f"team {team.name}'s reach is invalid ({error}); a site admin corrects it"]}
        ) from None
    with in_effect(team.name, reach):
        yield


def normalize_spec(
    data: Any, stored: Mapping[str, Any] | None = None, *, team: Team | None = None
) -> NormalizedSpec:
    """Validate ``data`` as a channel spec and return its normalised JSON form.

    The result is what a revision stores: defaults filled in, so two specs that mean the
    same compare equal. Secrets ``data`` sends as the marker or leaves out are taken from
    ``stored`` (the spec saved before, its secrets encrypted or not; ``None`` for a new
    channel). The result holds plaintext secrets: encrypt it before saving
    (:func:`console.crypto.encrypt_spec`). Raises :class:`InvalidSpec` with per-field
    errors, none of which quotes a secret.

    With ``team``, what the spec names must lie within the team's reach (:func:`team_reach`):
    a topic, a files path or a host outside it is a field error naming the team and what it
    may reach.

    ``data`` already normalised against the same ``stored`` and team reach (a
    :class:`NormalizedSpec`) is returned as it is: a spec is validated once per write.
    """
    if stored is not None:
        stored = decrypt_spec(stored)
    if isinstance(data, NormalizedSpec):
        if data.stored == stored and data.reach == _reach_key(team):
            return data
        data = data.sent
    try:
        merged = merge_secrets(data, stored)
        _refuse_encrypted_values(merged)
        _refuse_registry_team(merged)
        with team_reach(team):
            normalized = validate_spec(merged).model_dump(mode="json")
    except SpecError as exc:
        hidden = secret_values(data) if isinstance(data, Mapping) else []
        if stored is not None:
            hidden += secret_values(stored)
        # Not chained: the SpecError's own message may quote a secret, and tracebacks get logged.
        raise InvalidSpec(_scrubbed(exc.errors, hidden)) from None
    return NormalizedSpec(normalized, sent=data, stored=stored, reach=_reach_key(team))


def redact_spec(spec: Any) -> Any:
    """``spec`` as the console shows it: every secret replaced by the marker."""
    return redact(spec) if isinstance(spec, Mapping) else spec


def scrub_secrets(text: str, spec: Mapping[str, Any] | None) -> str:
    """``text`` (an error trace, a reason) with the secrets of ``spec`` (a stored spec, its
    secrets encrypted or not) replaced by the marker."""
    return scrub(text, plain_secret_values(spec)) if text and spec else text


def _refuse_encrypted_values(spec: Any) -> None:
    """A secret sent in the stored (encrypted) form would be saved unchecked: refuse it."""
    if isinstance(spec, Mapping):
        paths = encrypted_secret_paths(spec)
        if paths:
            message = (
                f"a secret may not start with {ENCRYPTED_PREFIX!r} (the form secrets are "
                "stored in); send the secret itself"
            )
            raise SpecError({path: [message] for path in paths})


def _registry_team_paths(spec: Any, path: str = "") -> list[str]:
    if isinstance(spec, Mapping):
        found = []
        for key, value in spec.items():
            here = f"{path}.{key}" if path else str(key)
            if key == "schema_registry" and isinstance(value, Mapping) and "team" in value:
                found.append(f"{here}.team")
            else:
                found += _registry_team_paths(value, here)
        return found
    if isinstance(spec, list):
        return [
            p for i, item in enumerate(spec) for p in _registry_team_paths(item, f"{path}[{i}]")
        ]
    return []


def _refuse_registry_team(spec: Any) -> None:
    """``schema_registry.team`` is the runtime's (the channel's team, where its subjects are
    read: :func:`pipelines.registry_client.bind_registry_team`), never a spec's."""
    paths = _registry_team_paths(spec)
    if paths:
        message = "set by Sluice: a channel's subjects are its team's (leave it out)"
        raise SpecError({path: [message] for path in paths})


class AmbiguousPluginType(LookupError):
    """Several kinds of plugin share this type; ``kinds`` lists them."""

    def __init__(self, type_: str, kinds: list[str]) -> None:
        choices = " or ".join(f"?kind={kind}" for kind in kinds)
        super().__init__(
            f"{type_!r} is the type of more than one plugin ({', '.join(kinds)}); "
            f"say which with {choices}"
        )
        self.kinds = kinds


class UnknownPluginType(LookupError):
    """No plugin of any kind has this type."""

    def __init__(self, type_: str) -> None:
        known = ", ".join(sorted({plugin.type for plugin in plugins()}))
        super().__init__(f"no plugin has type {type_!r}; known types: {known}")


def find_plugin(type_: str, kind: str | None = None) -> Plugin:
    """The plugin named ``type_``, of ``kind`` when given.

    Without ``kind`` the type must name exactly one plugin. Raises
    :class:`AmbiguousPluginType` when it names several, :class:`UnknownPluginError` (with a
    kind) or :class:`UnknownPluginType` (without) when it names none, and ``LookupError``
    for an unknown kind; all are ``LookupError``.
    """
    if kind is not None:
        if kind not in PLUGIN_KINDS:
            raise LookupError(
                f"no plugin kind {kind!r}; expected one of: {', '.join(PLUGIN_KINDS)}"
            )
        return get_plugin(kind, type_)
    found = [plugin for plugin in plugins() if plugin.type == type_]
    if len(found) > 1:
        raise AmbiguousPluginType(type_, [plugin.kind for plugin in found])
    if not found:
        raise UnknownPluginType(type_)
    return found[0]


def check_stage_config(plugin: Plugin, config: Any, team: Team | None = None) -> dict[str, Any]:
    """Validate one stage's config (within ``team``'s reach, when given); return it
    normalised, its secrets replaced by the marker.

    Raises :class:`InvalidSpec` keyed like spec errors (``"config.topics"``); messages never
    quote a secret.
    """
    if not isinstance(config, Mapping):
        raise InvalidSpec({"config": ["must be an object"]})
    try:
        with team_reach(team):
            stage = StageSpec(type=plugin.type, config=dict(config))
            parsed = parse_stage_config(plugin.kind, stage)
    except SpecError as exc:
        hidden = config_secret_values(plugin.config_model, config)
        raise InvalidSpec(_scrubbed(exc.errors, hidden)) from None
    return redact_config(plugin.config_model, parsed.model_dump(mode="json"))


def event_pattern_matches(pattern: Any, event: Mapping[str, Any]) -> bool:
    """Whether ``event`` matches ``pattern``, as EventBridge's TestEventPattern answers.

    Raises :class:`pipelines.spec.patterns.PatternError` when the pattern is invalid.
    """
    return matches(pattern, dict(event))


def rules_routing(rules: Sequence[Mapping[str, Any]], event: Mapping[str, Any]) -> list[RuleRoute]:
    """For each rule (``{"name", "enabled", "pattern", "transforms"}``), in order, whether
    ``event`` reaches its sinks in a running bus, as far as it can be decided without Spark:
    the rule is enabled, ``event`` matches its pattern (no pattern: every event) and its own
    filters keep it; a rule whose event would pass through another transform is undecided
    (:mod:`pipelines.spec.routing`).

    Raises :class:`PatternError` when a pattern is invalid.
    """
    return route_sample(rules, event)


def _scrubbed(errors: Mapping[str, list[str]], secrets: list[str]) -> dict[str, list[str]]:
    return {path: [scrub(str(m), secrets) for m in messages] for path, messages in errors.items()}
