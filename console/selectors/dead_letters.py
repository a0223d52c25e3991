"""A channel's dead letters, read back from its dead-letter target (read only).

The target is the ``errors.dead_letter`` sink of the channel's latest revision. Readable
targets: ``kafka`` (the topic's tail, without a consumer group that moves), ``files`` (the
directory's committed files, under the files roots) and ``jdbc`` (the table, newest rows
first); another (``http``) is reported as not readable with why. Reads are bounded: at most
:data:`SCAN_LIMIT` of the newest dead letters (per Kafka partition) are scanned, then
filtered and sorted newest first; :class:`DeadLetterScan` says when the bound was reached.
The reading itself is :mod:`runtime_adapter.dead_letters` (no Spark).
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Concatenate, ParamSpec, TypeVar, cast

from console.crypto import decrypt_spec
from console.errors import runtime_errors
from console.models import Channel, Revision
from console.selectors.specs import team_reach
from pipelines.spec.configs.jdbc import JdbcSinkConfig
from pipelines.spec.paths import PathNotAllowed, resolve_files_location
from runtime_adapter import dead_letters as store
from runtime_adapter.dead_letters import BadDeadLetterId, DeadLetter
from runtime_adapter.kafka import security_settings

SCAN_LIMIT = 5000
"""The most dead letters one list reads (per partition of a Kafka topic), newest first."""
READABLE_TARGETS = ("kafka", "files", "jdbc")


@dataclass(frozen=True)
class DeadLetterTarget:
    """Where a channel's dead letters go, and whether the console can read them back."""

    type: str | None
    """The dead-letter sink's type; ``None`` when the channel has none."""
    location: str
    readable: bool
    note: str = ""
    config: dict[str, Any] = field(default_factory=dict, repr=False)
    """The sink's config, secrets in plain text: never shown."""


@dataclass(frozen=True)
class DeadLetterFilters:
    """What a list keeps; every field set must match."""

    error_class: str | None = None
    stage: str | None = None
    rule: str | None = None
    target: str | None = None
    since: datetime | None = None
    until: datetime | None = None
    q: str | None = None
    """Case-insensitive text the message must contain."""

    def matches(self, letter: DeadLetter) -> bool:
        exact = (
            (self.error_class, letter.error_class),
            (self.stage, letter.stage),
            (self.rule, letter.rule),
            (self.target, letter.target),
        )
        if any(wanted is not None and wanted != found for wanted, found in exact):
            return False
        if self.since is not None and (letter.time is None or letter.time < self.since):
            return False
        if self.until is not None and (letter.time is None or letter.time >= self.until):
            return False
        return self.q is None or self.q.casefold() in letter.message.casefold()

    def as_dict(self) -> dict[str, str]:
        """The filters set, as text (the audit trail and ``all: true`` redrives name them)."""
        values = {
            "error_class": self.error_class,
            "stage": self.stage,
            "rule": self.rule,
            "target": self.target,
            "since": self.since.isoformat() if self.since else None,
            "until": self.until.isoformat() if self.until else None,
            "q": self.q,
        }
        return {key: value for key, value in values.items() if value is not None}


@dataclass(frozen=True)
class DeadLetterScan:
    """The dead letters a list found, newest first, and how far it looked."""

    target: DeadLetterTarget
    letters: list[DeadLetter]
    scanned: int
    """How many stored dead letters were read (before filtering)."""
    limit_reached: bool
    """The scan stopped at :data:`SCAN_LIMIT`: older dead letters were not looked at."""
    facets: dict[str, list[str]] = field(default_factory=dict)
    """The distinct error classes, stages and rules seen in the scan (for filter menus)."""


P = ParamSpec("P")
R = TypeVar("R")


def within_reach(
    function: Callable[Concatenate[Channel, P], R],
) -> Callable[Concatenate[Channel, P], R]:
    """``function`` of a channel run within its team's reach: a files dead-letter directory
    under the team's own roots, a JDBC host its list allows, is read back (and nothing else)."""

    @functools.wraps(function)
    def within(channel: Channel, /, *args: P.args, **kwargs: P.kwargs) -> R:
        with team_reach(channel.team):
            return function(channel, *args, **kwargs)

    return within


@within_reach
def dead_letter_target(channel: Channel) -> DeadLetterTarget:
    """The channel's dead-letter target as its latest revision names it."""
    revision = cast(Revision, channel.latest_revision_obj())
    spec = decrypt_spec(revision.spec)
    errors = spec.get("errors") or {}
    sink = errors.get("dead_letter")
    if not sink:
        why = (
            "bad events fail the channel (errors.tolerance none)"
            if errors.get("tolerance", "none") != "all"
            else "bad events are counted and skipped (no errors.dead_letter target)"
        )
        return DeadLetterTarget(None, "", False, f"this channel keeps no dead letters: {why}")
    kind = str(sink.get("type"))
    config = dict(sink.get("config") or {})
    if kind == "kafka":
        location = f"Kafka topic {config.get('topic')} on {config.get('bootstrap_servers')}"
        if security_settings(config.get("security")) is None:
            return DeadLetterTarget(
                kind, location, False, "TLS Kafka targets cannot be read by the console", config
            )
        return DeadLetterTarget(kind, location, True, "", config)
    if kind == "files":
        location = f"directory {config.get('path')} ({config.get('format', 'parquet')})"
        try:
            resolved = resolve_files_location(str(config.get("path", "")))
        except (PathNotAllowed, ValueError) as exc:
            return DeadLetterTarget(kind, location, False, f"the directory is not allowed: {exc}")
        if not resolved.startswith("file://"):
            return DeadLetterTarget(
                kind, location, False, "only local directories can be read back", config
            )
        return DeadLetterTarget(kind, location, True, "", config)
    if kind == "jdbc":
        location = f"table {config.get('table')} ({_database(config)})"
        try:
            JdbcSinkConfig.model_validate(config)
        except ValueError as exc:
            return DeadLetterTarget(kind, location, False, f"the table cannot be reached: {exc}")
        return DeadLetterTarget(kind, location, True, "", config)
    return DeadLetterTarget(
        kind, f"{kind} sink", False, f"a {kind} dead-letter target cannot be read back", config
    )


def _database(config: dict[str, Any]) -> str:
    """The database of a JDBC URL without credentials: its scheme, host and name."""
    url = str(config.get("url", ""))
    scheme, _, rest = url.partition("://")
    host = rest.rpartition("@")[2].split("?")[0]
    return f"{scheme}://{host}" if scheme else "database"


@within_reach
def list_dead_letters(
    channel: Channel, filters: DeadLetterFilters, *, scan_limit: int = SCAN_LIMIT
) -> DeadLetterScan:
    """The channel's dead letters that match ``filters``, newest first (see the module
    docstring). Raises :class:`~console.errors.RuntimeUnavailable` when Kafka does
    not answer."""
    target = dead_letter_target(channel)
    if not target.readable:
        return DeadLetterScan(target, [], 0, False)
    stored, limit_reached = _scan(target, scan_limit)
    facets = {
        "error_class": sorted({d.error_class for d in stored if d.error_class}),
        "stage": sorted({d.stage for d in stored if d.stage}),
        "rule": sorted({d.rule for d in stored if d.rule}),
        "target": sorted({d.target for d in stored if d.target}),
    }
    found = [d for d in stored if filters.matches(d)]
    found.sort(key=_newest_first, reverse=True)
    return DeadLetterScan(target, found, len(stored), limit_reached, facets)


@within_reach
def get_dead_letter(channel: Channel, letter_id: str) -> DeadLetter | None:
    """The dead letter ``letter_id`` names in the channel's target; ``None`` when there is
    none (a malformed id, another target's, or one gone by retention)."""
    target = dead_letter_target(channel)
    if not target.readable:
        return None
    config = target.config
    try:
        if target.type == "kafka":
            topic, partition, offset = store.parse_kafka_id(letter_id)
            if topic != config.get("topic"):
                return None
            with runtime_errors():
                record = store.read_kafka_record(
                    str(config["bootstrap_servers"]),
                    topic,
                    partition,
                    offset,
                    settings=security_settings(config.get("security")),
                )
            return store.kafka_letter(record) if record is not None else None
        if target.type == "jdbc":
            row_id = store.parse_jdbc_id(letter_id)
            with runtime_errors():
                found = store.jdbc_letters(_jdbc(config), limit=1, row_id=row_id)
            return found[0] if found else None
        name, row = store.parse_files_id(letter_id)
        return store.files_letter(_directory(config), _files_format(config), name, row)
    except BadDeadLetterId:
        return None


MAX_RANGE_READ = 20_000
"""Selected Kafka dead letters are read in one pass over their partitions' offset span when
it is at most this long (else one by one)."""


def get_dead_letters(channel: Channel, letter_ids: Sequence[str]) -> dict[str, DeadLetter | None]:
    """Each of ``letter_ids`` with its dead letter (``None`` when it names none). Kafka ids
    of the target's topic are read in one pass per partition (see :data:`MAX_RANGE_READ`)."""
    target = dead_letter_target(channel)
    found: dict[str, DeadLetter | None] = dict.fromkeys(letter_ids)
    if not target.readable:
        return found
    wanted: dict[int, set[int]] = {}
    if target.type == "kafka":
        for letter_id in letter_ids:
            try:
                topic, partition, offset = store.parse_kafka_id(letter_id)
            except BadDeadLetterId:
                continue
            if topic == target.config.get("topic"):
                wanted.setdefault(partition, set()).add(offset)
    ranges = {p: (min(offsets), max(offsets) + 1) for p, offsets in wanted.items()}
    if ranges and sum(end - start for start, end in ranges.values()) <= MAX_RANGE_READ:
        config = target.config
        with runtime_errors():
            records = store.read_kafka_ranges(
                str(config["bootstrap_servers"]),
                str(config["topic"]),
                ranges,
                settings=security_settings(config.get("security")),
            )
        for record in records:
            letter = (
                store.kafka_letter(record) if record.offset in wanted[record.partition] else None
            )
            if letter is not None and letter.id in found:
                found[letter.id] = letter
        return found
    return {letter_id: get_dead_letter(channel, letter_id) for letter_id in letter_ids}


def _scan(target: DeadLetterTarget, limit: int) -> tuple[list[DeadLetter], bool]:
    config = target.config
    if target.type == "kafka":
        with runtime_errors():
            records = store.read_kafka_tail(
                str(config["bootstrap_servers"]),
                str(config["topic"]),
                limit=limit,
                settings=security_settings(config.get("security")),
            )
        partitions: dict[int, int] = {}
        for record in records:
            partitions[record.partition] = partitions.get(record.partition, 0) + 1
        letters = [d for d in map(store.kafka_letter, records) if d is not None]
        return letters, any(count >= limit for count in partitions.values())
    if target.type == "jdbc":
        with runtime_errors():
            letters = store.jdbc_letters(_jdbc(config), limit=limit)
        return letters, len(letters) >= limit
    letters = store.files_letters(_directory(config), _files_format(config), limit=limit)
    return letters, len(letters) >= limit


def _jdbc(config: dict[str, Any]) -> JdbcSinkConfig:
    return JdbcSinkConfig.model_validate(config)


def _directory(config: dict[str, Any]) -> Path:
    return Path(resolve_files_location(str(config["path"])).removeprefix("file://"))


def _files_format(config: dict[str, Any]) -> str:
    return str(config.get("format") or "parquet")


_EPOCH = datetime.min.replace(tzinfo=UTC)


def _newest_first(letter: DeadLetter) -> tuple[datetime, int, int]:
    where = letter.location
    return (
        letter.time or _EPOCH,
        int(where.get("offset", where.get("row", 0))),
        int(where.get("partition", 0)),
    )
