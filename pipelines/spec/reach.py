"""A team's reach: what its channels may touch, set by a site admin (issue 33).

A :class:`Reach` holds, for one team, any of:

* ``topic_prefixes`` - the Kafka topic-name prefixes its channels may read and write (a Kafka
  source's ``topics`` or ``topic_pattern``, a Kafka sink's ``topic`` - a bus rule's target and a
  dead-letter sink included - and, as each event is written, the topic a sink's
  ``topic_field`` or the event's ``sluicetopic`` extension chose). Sluice's own topics derived
  from the channel (an http source's ingest topic) stay allowed.
* ``kafka_clusters`` - the Kafka brokers (``host:port``) its Kafka stages may name in
  ``bootstrap_servers``: every broker of a stage's list must be one of them.
* ``files_roots`` - the directories its files stages and SQLite databases may use (in place
  of ``SLUICE_FILES_ROOTS``; Sluice's own state stays refused).
* ``http_sink``, ``jdbc_sink``, ``http_enrich``, ``schema_registry`` - the allow-lists of
  :mod:`pipelines.net` (in place of ``SLUICE_HTTP_SINK_ALLOW``, ``SLUICE_JDBC_SINK_ALLOW``,
  ``SLUICE_HTTP_ENRICH_ALLOW``, ``SLUICE_SCHEMA_REGISTRY_ALLOW``), in the same syntax: host
  names, addresses, CIDRs.

A key left out is the site's default (the environment); a key given replaces it (an empty
list: nothing at all).

The checks that already guard what a spec names consult the reach **in effect** (a context
variable): :func:`pipelines.net.allow_list` and :func:`pipelines.spec.paths.files_roots`
return the team's lists, and the Kafka configs check their topics with :func:`check_topic`
and :func:`check_topic_pattern`. The console validates a channel's spec inside
``with in_effect(team, reach)``; a driver runs each channel's query inside it (its
``Deployment.policy["reach"]``), and :func:`carried` hands it to the functions Spark calls
back on other threads (``foreachBatch``), so the connection-time guards use the team's lists.
"""

from __future__ import annotations

import ipaddress
import re
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass
from pathlib import PurePosixPath
from typing import Any, ParamSpec, TypeVar

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

MAX_PREFIXES = 100
"""Most topic prefixes a team's reach lists."""
MAX_ROOTS = 32
"""Most files roots a team's reach lists."""
MAX_BROKERS = 64
"""Most Kafka brokers a team's reach lists."""
MAX_HOSTS = 256
"""Most entries of one allow-list of a team's reach."""
MAX_PATH_LENGTH = 1024
"""The longest files root."""
MAX_HOST_LENGTH = 253
"""The longest allow-list entry (a DNS name's longest; a CIDR is shorter)."""
MAX_TOPIC_LENGTH = 249
"""The longest Kafka topic name, so the longest prefix."""

_TOPIC_CHARS = re.compile(r"[A-Za-z0-9._-]+")
_HOST_NAME = re.compile(
    r"(?=.{1,253}\.?\Z)([A-Za-z0-9_]([A-Za-z0-9_-]{0,61}[A-Za-z0-9_])?)"
    r"(\.[A-Za-z0-9_]([A-Za-z0-9_-]{0,61}[A-Za-z0-9_])?)*\.?"
)
_CONTROL = re.compile(r"[\x00-\x1f\x7f]")
_BROKER = re.compile(r"(\[[0-9A-Fa-f:.]+\]|[A-Za-z0-9._-]+):([0-9]{1,5})")

HOST_KEYS = ("http_sink", "jdbc_sink", "http_enrich", "schema_registry")
"""The keys of a reach that are allow-lists of :mod:`pipelines.net` (an ``Outbound``'s
``reach_key``)."""
KEYS = ("topic_prefixes", "kafka_clusters", "files_roots", *HOST_KEYS)


def _unique(values: list[str]) -> list[str]:
    return list(dict.fromkeys(values))


class Reach(BaseModel):
    """One team's reach (see the module docstring); ``None``: the site's default."""

    model_config = ConfigDict(extra="forbid", strict=True, frozen=True)

    topic_prefixes: list[str] | None = Field(
        None,
        max_length=MAX_PREFIXES,
        description="Kafka topic-name prefixes the team's channels may read and write.",
        examples=[["payments.", "shared.payments-"]],
    )
    kafka_clusters: list[str] | None = Field(
        None,
        max_length=MAX_BROKERS,
        description="Kafka brokers (host:port) the team's Kafka stages may name.",
        examples=[["kafka-1.internal:9092", "kafka-2.internal:9092"]],
    )
    files_roots: list[str] | None = Field(
        None,
        max_length=MAX_ROOTS,
        description="Absolute directories the team's files stages and SQLite databases may use.",
        examples=[["/srv/sluice/data/payments"]],
    )
    http_sink: list[str] | None = Field(
        None,
        max_length=MAX_HOSTS,
        description="Non-public hosts, addresses or CIDRs the HTTP sink may reach.",
        examples=[["api.internal", "10.1.0.0/16"]],
    )
    jdbc_sink: list[str] | None = Field(
        None,
        max_length=MAX_HOSTS,
        description="Non-public PostgreSQL hosts, addresses or CIDRs the JDBC sink may reach.",
    )
    http_enrich: list[str] | None = Field(
        None,
        max_length=MAX_HOSTS,
        description="Non-public hosts, addresses or CIDRs the enrich transform may call.",
    )
    schema_registry: list[str] | None = Field(
        None,
        max_length=MAX_HOSTS,
        description="Non-public hosts, addresses or CIDRs of external schema registries.",
    )

    @field_validator("topic_prefixes")
    @classmethod
    def _check_prefixes(cls, value: list[str] | None) -> list[str] | None:
        if value is None:
            return None
        for index, prefix in enumerate(value):
            if not prefix:
                raise ValueError(
                    f"[{index}]: must not be empty (leave topic_prefixes out for the site's "
                    "default: every topic)"
                )
            if len(prefix) > MAX_TOPIC_LENGTH:
                raise ValueError(f"[{index}]: longer than {MAX_TOPIC_LENGTH} characters")
            if not _TOPIC_CHARS.fullmatch(prefix):
                raise ValueError(
                    f"[{index}]: {prefix!r} is not the start of a Kafka topic name (letters, "
                    "digits, '.', '_' or '-')"
                )
        return _unique(value)

    @field_validator("kafka_clusters")
    @classmethod
    def _check_brokers(cls, value: list[str] | None) -> list[str] | None:
        if value is None:
            return None
        brokers = []
        for index, entry in enumerate(value):
            if len(entry) > MAX_HOST_LENGTH + 6:
                raise ValueError(f"[{index}]: longer than {MAX_HOST_LENGTH + 6} characters")
            broker = canonical_broker(entry)
            if broker is None:
                raise ValueError(
                    f"[{index}]: {entry[:100]!r} is not a Kafka broker as host:port "
                    "(kafka-1.internal:9092, [::1]:9092)"
                )
            brokers.append(broker)
        return _unique(brokers)

    @field_validator("files_roots")
    @classmethod
    def _check_roots(cls, value: list[str] | None) -> list[str] | None:
        if value is None:
            return None
        for index, root in enumerate(value):
            if len(root) > MAX_PATH_LENGTH:
                raise ValueError(f"[{index}]: longer than {MAX_PATH_LENGTH} characters")
            if _CONTROL.search(root):
                raise ValueError(f"[{index}]: must not contain control characters")
            path = PurePosixPath(root)
            if not path.is_absolute():
                raise ValueError(f"[{index}]: {root!r} is not an absolute path")
            if ".." in path.parts:
                raise ValueError(f"[{index}]: {root!r} must not contain '..' segments")
            if path == PurePosixPath("/"):
                raise ValueError(f"[{index}]: the whole file system cannot be a files root")
        return _unique(value)

    @field_validator(*HOST_KEYS)
    @classmethod
    def _check_hosts(cls, value: list[str] | None) -> list[str] | None:
        if value is None:
            return None
        for index, entry in enumerate(value):
            if len(entry) > MAX_HOST_LENGTH:
                raise ValueError(f"[{index}]: longer than {MAX_HOST_LENGTH} characters")
            if not _is_host_entry(entry):
                raise ValueError(
                    f"[{index}]: {entry!r} is neither a host name, an address nor a CIDR "
                    "(api.internal, 10.0.0.5, 10.0.0.0/8, ::1)"
                )
        return _unique([entry.strip("[]").lower() for entry in value])

    def given(self) -> dict[str, list[str]]:
        """The keys this reach sets (the others are the site's default)."""
        return {key: list(value) for key, value in self.model_dump().items() if value is not None}


def canonical_broker(entry: str) -> str | None:
    """``host:port`` as brokers are compared: host in lower case without a trailing dot, an
    address literal in its canonical form (``[0:0::1]:9092`` is ``[::1]:9092``); ``None`` when
    ``entry`` is not a broker."""
    match = _BROKER.fullmatch(entry.strip())
    if match is None or not 0 < int(match.group(2)) < 65536:
        return None
    host = match.group(1).strip("[]").lower().rstrip(".")
    try:
        address = ipaddress.ip_address(host)
    except ValueError:
        return f"{host}:{int(match.group(2))}" if _HOST_NAME.fullmatch(host) else None
    shown = f"[{address}]" if address.version == 6 else str(address)
    return f"{shown}:{int(match.group(2))}"


def _is_host_entry(entry: str) -> bool:
    text = entry.strip("[]")
    try:
        ipaddress.ip_network(text, strict=False)
        return True
    except ValueError:
        pass
    return bool(_HOST_NAME.fullmatch(text))


class InvalidReach(ValueError):
    """A reach that does not validate: ``errors`` maps each field path to its messages."""

    def __init__(self, errors: dict[str, list[str]]) -> None:
        super().__init__("; ".join(f"{path}: {' '.join(m)}" for path, m in errors.items()))
        self.errors = errors


def parse_reach(data: Any) -> Reach:
    """``data`` (a team's stored reach: a JSON object) as a :class:`Reach`; raises
    :class:`InvalidReach` with field paths (``http_sink``, ``topic_prefixes``, ...)."""
    if data is None:
        return Reach()
    if isinstance(data, Reach):
        return data
    if not isinstance(data, Mapping):
        raise InvalidReach({"": ["must be an object"]})
    try:
        return Reach.model_validate(dict(data))
    except ValidationError as error:
        errors: dict[str, list[str]] = {}
        for detail in error.errors(include_url=False):
            path = "".join(
                f"[{part}]" if isinstance(part, int) else f".{part}" for part in detail["loc"]
            ).removeprefix(".")
            message = detail["msg"].removeprefix("Value error, ")
            if detail["type"] == "extra_forbidden":
                message = f"is not a key of a reach; the keys are: {', '.join(KEYS)}"
            errors.setdefault(path, []).append(message)
        raise InvalidReach(errors) from None


# -- the reach in effect ---------------------------------------------------------------------


@dataclass(frozen=True)
class TeamReach:
    """The reach in effect: whose (``team``, named in refusals) and what."""

    team: str
    reach: Reach

    def names(self, key: str) -> str:
        """Who grants ``key`` in a refusal: ``team payments's reach (http_sink)``."""
        return f"team {self.team}'s reach ({key})"


_IN_EFFECT: ContextVar[TeamReach | None] = ContextVar("sluice_reach", default=None)


def current() -> TeamReach | None:
    """The team reach in effect here, or ``None``: the site's defaults only."""
    return _IN_EFFECT.get()


@contextmanager
def in_effect(team: str, reach: Reach | Mapping[str, Any] | None) -> Iterator[TeamReach]:
    """Run the block with ``team``'s ``reach`` in effect (a stored reach is parsed first:
    :class:`InvalidReach` when it does not validate)."""
    scope = TeamReach(team, parse_reach(reach))
    token = _IN_EFFECT.set(scope)
    try:
        yield scope
    finally:
        _IN_EFFECT.reset(token)


P = ParamSpec("P")
R = TypeVar("R")


def carried(function: Callable[P, R]) -> Callable[P, R]:
    """``function`` run with the reach in effect now (none: ``function`` itself), wherever it
    is called: Spark calls ``foreachBatch`` functions on a thread of its own, where the
    connector's thread's context does not reach."""
    scope = current()
    if scope is None:
        return function

    def with_reach(*args: P.args, **kwargs: P.kwargs) -> R:
        token = _IN_EFFECT.set(scope)
        try:
            return function(*args, **kwargs)
        finally:
            _IN_EFFECT.reset(token)

    return with_reach


# -- the checks ------------------------------------------------------------------------------


def topic_prefixes() -> tuple[TeamReach, list[str]] | None:
    """The reach in effect and its topic prefixes, when it limits topics; else ``None``."""
    scope = current()
    if scope is None or scope.reach.topic_prefixes is None:
        return None
    return scope, scope.reach.topic_prefixes


def may_only(scope: TeamReach, prefixes: list[str]) -> str:
    """``team payments may reach only topics starting with 'payments.'``."""
    if not prefixes:
        return f"team {scope.team} may reach no Kafka topic (its reach lists no topic prefix)"
    shown = ", ".join(repr(prefix) for prefix in prefixes)
    return f"team {scope.team} may reach only topics starting with {shown}"


def check_topic(topic: str) -> str:
    """``topic`` when the reach in effect allows it, else ``ValueError`` naming the team and
    the prefixes it may reach."""
    limited = topic_prefixes()
    if limited is None:
        return topic
    scope, prefixes = limited
    if not any(topic.startswith(prefix) for prefix in prefixes):
        raise ValueError(
            f"topic {topic!r} is outside the team's reach: {may_only(scope, prefixes)}"
        )
    return topic


def check_topic_pattern(pattern: str) -> str:
    """``pattern`` (a Java regular expression Spark matches whole topic names against) when
    every topic it can match starts with an allowed prefix, else ``ValueError``.

    It can only when it starts with one of the prefixes literally (``payments\\.orders-.*``,
    ``^payments-(a|b)``) and has no alternation outside a group (``payments-a|.*`` matches
    every topic); an inline flag or a group before the prefix (``(?i)payments-.*``) is refused.
    """
    limited = topic_prefixes()
    if limited is None:
        return pattern
    scope, prefixes = limited
    literal = literal_prefix(pattern)
    if "[]" in pattern or "[^]" in pattern:
        # Whether a ']' right after '[' closes the class differs between regex dialects.
        raise ValueError(
            f"pattern {pattern!r}: a character class may not start with ']' when the team's "
            f"reach limits topics ({may_only(scope, prefixes)})"
        )
    if _top_level_alternation(pattern):
        raise ValueError(
            f"pattern {pattern!r} has an alternation ('|') outside a group, so it may match "
            f"topics outside the team's reach: {may_only(scope, prefixes)}; put the "
            "alternatives in a group after the prefix (payments-(orders|refunds))"
        )
    if not any(literal.startswith(prefix) for prefix in prefixes):
        raise ValueError(
            f"pattern {pattern!r} may match topics outside the team's reach: "
            f"{may_only(scope, prefixes)}; start the pattern with one of them, literally "
            "(escape a '.' as '\\.')"
        )
    return pattern


_QUANTIFIERS = "?*+{"
_META = set("\\^$.|?*+()[]{}")


def literal_prefix(pattern: str) -> str:
    """The text every match of ``pattern`` (a Java regex, matched whole) starts with, as far
    as it can be read without doubt: literal characters and escaped punctuation from the
    start (after an optional ``^``), up to the first metacharacter; a character a quantifier
    follows is not in it (``ab?`` starts with ``a``)."""
    text = pattern[1:] if pattern.startswith("^") else pattern
    chars: list[str] = []
    index = 0
    while index < len(text):
        char = text[index]
        if char == "\\":
            if index + 1 >= len(text) or text[index + 1].isalnum():
                break  # \d, \w, \Q ...: not one literal character
            char, step = text[index + 1], 2
        elif char in _META:
            break
        else:
            step = 1
        following = text[index + step] if index + step < len(text) else ""
        if following and following in _QUANTIFIERS:
            break
        chars.append(char)
        index += step
    return "".join(chars)


def _top_level_alternation(pattern: str) -> bool:
    """Whether ``pattern`` has a ``|`` outside every group and character class (escapes and
    ``\\Q...\\E`` quoting skipped; Java's nested classes counted)."""
    depth = 0
    in_class = 0
    index = 0
    while index < len(pattern):
        char = pattern[index]
        if char == "\\":
            if pattern.startswith("\\Q", index):
                end = pattern.find("\\E", index + 2)
                index = len(pattern) if end < 0 else end + 2
                continue
            index += 2
            continue
        if in_class:
            if char == "[":
                in_class += 1
            elif char == "]":
                in_class -= 1
        elif char == "[":
            in_class = 1
        elif char == "(":
            depth += 1
        elif char == ")":
            depth = max(depth - 1, 0)
        elif char == "|" and depth == 0:
            return True
        index += 1
    return False


def check_kafka_servers(servers: str) -> str:
    """``servers`` (a Kafka stage's ``bootstrap_servers``) when every broker in it is one of
    the clusters the reach in effect lists (or it lists none), else ``ValueError``."""
    scope = current()
    if scope is None or scope.reach.kafka_clusters is None:
        return servers
    allowed = scope.reach.kafka_clusters
    for broker in servers.split(","):
        if canonical_broker(broker) not in allowed:
            shown = ", ".join(repr(b) for b in allowed) or "none"
            raise ValueError(
                f"broker {broker.strip()!r} is outside the team's reach: team {scope.team} may "
                f"use only the Kafka brokers {shown}"
            )
    return servers


def allow_list_entries(key: str) -> tuple[TeamReach, list[str]] | None:
    """The reach in effect and its entries for the allow-list ``key`` (``http_sink``, ...),
    when it sets that list; else ``None`` (the environment's list holds)."""
    scope = current()
    if scope is None:
        return None
    entries = getattr(scope.reach, key)
    return None if entries is None else (scope, entries)


def files_roots_given() -> tuple[TeamReach, list[str]] | None:
    """The reach in effect and its files roots, when it sets them; else ``None``."""
    scope = current()
    if scope is None or scope.reach.files_roots is None:
        return None
    return scope, scope.reach.files_roots
