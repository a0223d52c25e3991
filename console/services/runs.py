"""Bounded runs beside a channel's live connector: replays and redrives (:class:`ChannelRun`).

* :func:`start_replay` records a replay of a time window (or explicit offsets per partition)
  of the channel's Kafka source, or of its HTTP ingest topic (the archive), through the
  channel's CURRENT spec into its sinks.
* :func:`start_redrive` (called by the dead-letter redrive) records a run of the current spec
  over exactly the given offsets of the channel's redrive topic (``sluice-redrive.<name>``).
* :func:`cancel_run` cancels a run that has not finished.

A run reads with its own checkpoint and consumer identity (never the live query's), each
event it writes carries the CloudEvents extension ``sluicereplay`` = the run id and
``sluicerun`` = its kind. What only the channel can tell about a request (a window in the
future, a source without offsets) raises :class:`InvalidRun`, keyed by field paths.

A run writes into the same targets as the live channel: their consumers get the events a
second time. :func:`run_targets` says which targets those are and how each marks a run's
events (:func:`target_of`); a run into a live target starts only when its request says
``confirm`` (else :class:`InvalidRun` on ``confirm``, naming them), so neither a person nor
a script writes duplicates into a production topic by accident.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from datetime import datetime, timedelta
from typing import Any, cast

from django.contrib.auth.models import User
from django.db import transaction
from django.utils import timezone

from console.choices import FINAL_RUN_STATES, RunKind, RunState
from console.crypto import decrypt_spec
from console.errors import InvalidSpec, InvalidTransition, ServiceError
from console.models import Channel, ChannelRun, Revision
from console.selectors.specs import normalize_spec
from console.services.ingest import with_ingest_fields
from console.services.lifecycle import actor_for as _user_actor
from pipelines.http_client import display_url

#: Sources a run can read again: Kafka topics, and HTTP ingestion's own topic.
REPLAYABLE_SOURCES = ("kafka", "http")
#: The CloudEvents extensions a run's events carry.
RUN_ID_EXTENSION = "sluicereplay"
RUN_KIND_EXTENSION = "sluicerun"
#: Clock skew allowed between a client and the console for "not in the future".
FUTURE_SLACK = timedelta(seconds=5)


class InvalidRun(ServiceError):
    """The request does not say a valid run; ``errors`` maps field paths to messages."""

    def __init__(self, errors: dict[str, list[str]]) -> None:
        super().__init__("invalid run request")
        self.errors = errors


@dataclass(frozen=True)
class RunTarget:
    """One target a run writes into, as the confirmation names it."""

    rule: str | None
    """The bus rule it belongs to (None: the channel's sink)."""
    type: str
    """The sink plugin: kafka, http, jdbc, files, preview."""
    where: str
    """What it writes to: ``topic orders-out``, ``POST https://…/hook``, ``table orders``."""
    live: bool
    """Whether others read it (every target but the console's own live tail, ``preview``)."""
    marked: str
    """How a run's events are marked there, or that they are not."""

    def label(self) -> str:
        """``kafka topic orders-out`` (``rule eu: …`` for a bus's target)."""
        text = f"{self.type} {self.where}"
        return f"rule {self.rule}: {text}" if self.rule else text

    def to_json(self) -> dict[str, Any]:
        return {**asdict(self), "name": self.label()}


_MARKS = f"{RUN_ID_EXTENSION} (the run id) and {RUN_KIND_EXTENSION} (replay or redrive)"


def _kafka_target(config: dict[str, Any]) -> tuple[str, str]:
    fmt = config.get("format", "json")
    where = f"topic {config.get('topic', '?')}"
    if config.get("topic_field"):
        where += f" (or the topic in {config['topic_field']})"
    if fmt == "cloudevents":
        return where, f"CloudEvents extension attributes {_MARKS} in each record's event"
    if fmt == "cloudevents-binary":
        return where, f"record headers ce_{RUN_ID_EXTENSION} and ce_{RUN_KIND_EXTENSION}"
    return where, f"record headers {_MARKS}"


def _http_target(config: dict[str, Any]) -> tuple[str, str]:
    body = config.get("body", "cloudevents")
    where = f"{config.get('method', 'POST')} {display_url(str(config.get('url', '?')))}"
    if body == "cloudevents":
        return where, f"CloudEvents extension attributes {_MARKS} in each request's event"
    if body == "cloudevents-binary":
        return where, f"request headers ce-{RUN_ID_EXTENSION} and ce-{RUN_KIND_EXTENSION}"
    return where, f"request headers {_MARKS}"


def _stored_target(kind: str, config: dict[str, Any], default: str) -> tuple[str, str]:
    where = f"table {config.get('table', '?')}" if kind == "jdbc" else f"{config.get('path', '?')}"
    if config.get("content", default) == "cloudevents":
        return where, f"members {_MARKS} of each stored event"
    upsert = " (rows are upserted by event id: a replayed event rewrites its row)"
    return where, "not marked: only the data is stored" + (upsert if kind == "jdbc" else "")


def target_of(sink: dict[str, Any], rule: str | None = None) -> RunTarget:
    """What a sink of a spec is as a run's target (see :class:`RunTarget`)."""
    kind = str(sink.get("type", "?"))
    config = dict(sink.get("config") or {})
    if kind == "kafka":
        where, marked = _kafka_target(config)
    elif kind == "http":
        where, marked = _http_target(config)
    elif kind == "jdbc":
        where, marked = _stored_target(kind, config, "cloudevents")
    elif kind == "files":
        where, marked = _stored_target(kind, config, "data")
    elif kind == "preview":
        return RunTarget(rule, kind, "the console's live tail", False, f"extensions {_MARKS}")
    else:
        where, marked = "", "not marked"
    return RunTarget(rule, kind, where, True, marked)


def run_targets(spec: dict[str, Any]) -> list[RunTarget]:
    """Every target a run of ``spec`` writes into: the sink, or each bus rule's sinks."""
    if spec.get("rules"):
        return [
            target_of(sink, str(rule.get("name")))
            for rule in spec["rules"]
            for sink in rule.get("sinks") or []
        ]
    return [target_of(spec["sink"])] if spec.get("sink") else []


def channel_targets(channel: Channel) -> list[RunTarget]:
    """The targets a run of ``channel`` (its current spec) would write into now."""
    return run_targets(_spec(channel)[1])


def unconfirmed(targets: list[RunTarget], verb: str) -> dict[str, list[str]]:
    """The error of a run request into live ``targets`` without ``confirm``."""
    live = [target.label() for target in targets if target.live]
    return {
        "confirm": [
            f"This {verb} writes into live targets their consumers read: {'; '.join(live)}. "
            "They get these events a second time. Send confirm: true to write into them."
        ]
    }


def actor_for(user: User | None, actor: str | None = None) -> str:
    """``actor`` when given, else ``user:<name>`` or ``system``."""
    return actor or _user_actor(user)


def redrive_topic(channel: Channel) -> str:
    """The topic the dead-letter redrive writes a channel's original records to."""
    return f"sluice-redrive.{channel.name}"


def _spec(channel: Channel) -> tuple[Revision, dict[str, Any]]:
    revision = cast(Revision, channel.latest_revision_obj())
    return revision, with_ingest_fields(decrypt_spec(revision.spec), channel.name)


def _replayable(channel: Channel, spec: dict[str, Any]) -> None:
    source_type = spec["source"]["type"]
    if source_type not in REPLAYABLE_SOURCES:
        raise InvalidRun(
            {
                "source": [
                    f"channel {channel.name!r} reads a {source_type} source, which cannot be "
                    "replayed: only Kafka-backed sources (kafka, http ingestion) keep their "
                    "events to read again"
                ]
            }
        )


def _within_reach(channel: Channel, spec: dict[str, Any]) -> None:
    """A run of a spec saved before its team's reach tightened is refused here (the driver
    would refuse it too): ``InvalidRun`` keyed ``spec.<path>``."""
    try:
        normalize_spec(spec, team=channel.team)
    except InvalidSpec as exc:
        raise InvalidRun(
            {f"spec.{path}" if path else "spec": messages for path, messages in exc.errors.items()}
        ) from None


def _source_topics(spec: dict[str, Any]) -> list[str]:
    config = spec["source"].get("config", {})
    topics = config.get("topics") or config.get("topic") or []
    return [topics] if isinstance(topics, str) else list(topics)


def _offset_map(
    offsets: list[dict[str, Any]], topics: list[str], field: str
) -> dict[str, dict[str, int]]:
    """``[{topic, partition, offset}]`` → ``{topic: {"partition": offset}}``; unknown topics
    and partitions named twice are errors keyed by ``field[i].…``."""
    found: dict[str, dict[str, int]] = {}
    errors: dict[str, list[str]] = {}
    for index, item in enumerate(offsets):
        topic, partition = item["topic"], str(item["partition"])
        if topic not in topics:
            errors[f"{field}[{index}].topic"] = [
                f"the channel does not read topic {topic!r} (it reads {', '.join(topics)})"
            ]
        elif partition in found.get(topic, {}):
            errors[f"{field}[{index}].partition"] = [f"partition {partition} of {topic} twice"]
        else:
            found.setdefault(topic, {})[partition] = int(item["offset"])
    if errors:
        raise InvalidRun(errors)
    return found


def start_replay(
    channel: Channel,
    *,
    window_start: datetime | None = None,
    window_end: datetime | None = None,
    start_offsets: list[dict[str, Any]] | None = None,
    end_offsets: list[dict[str, Any]] | None = None,
    user: User | None = None,
    actor: str | None = None,
    confirm: bool = False,
) -> ChannelRun:
    """Record a replay of ``[window_start, window_end)`` (or of ``[start_offsets,
    end_offsets)`` per partition) through the channel's current spec. The API's serializer
    checks the request's shape; this checks it against the channel and the clock, and
    that a replay into live targets was confirmed (``confirm``)."""
    revision, spec = _spec(channel)
    _replayable(channel, spec)
    _within_reach(channel, spec)
    errors: dict[str, list[str]] = {}
    targets = run_targets(spec)
    if not confirm and any(target.live for target in targets):
        errors |= unconfirmed(targets, "replay")
    now = timezone.now()
    by_time = window_start is not None or window_end is not None
    if by_time:
        if window_start is None:
            errors["window.start"] = ["Required with window.end."]
        if window_end is None:
            errors["window.end"] = ["Required with window.start."]
        if window_start and window_end and window_end <= window_start:
            errors["window.end"] = ["Must be after window.start."]
        if window_start and window_start > now + FUTURE_SLACK:
            errors.setdefault("window.start", []).append("Must not be in the future.")
        if window_end and window_end > now + FUTURE_SLACK:
            errors.setdefault("window.end", []).append(
                "Must not be in the future: a replay reads events already kept."
            )
    if errors:
        raise InvalidRun(errors)
    topics = _source_topics(spec)
    starts = _offset_map(start_offsets or [], topics, "start_offsets")
    ends = _offset_map(end_offsets or [], topics, "end_offsets")
    for topic, partitions in starts.items():
        for partition, first in partitions.items():
            end = ends.get(topic, {}).get(partition)
            if end is None:
                errors[f"end_offsets.{topic}.{partition}"] = [
                    "Required: the end (exclusive) of each partition given a start."
                ]
            elif end < first:
                errors[f"end_offsets.{topic}.{partition}"] = ["Must not be before its start."]
    if errors:
        raise InvalidRun(errors)
    expected = sum(ends[t][p] - starts[t][p] for t in starts for p in starts[t]) if starts else None
    run = ChannelRun.objects.create(
        channel=channel,
        kind=RunKind.REPLAY,
        revision=revision,
        window_start=window_start,
        window_end=window_end,
        start_offsets=starts,
        end_offsets=ends,
        expected=expected,
        created_by=actor_for(user, actor),
        targets=[target.to_json() for target in targets],
    )
    return _started(run)


def start_redrive(
    channel: Channel,
    *,
    topic: str,
    start_offsets: dict[int, int],
    end_offsets: dict[int, int],
    count: int,
    actor: Any,
    dead_letter_ids: list[str] | None = None,
) -> ChannelRun:
    """The dead-letter redrive's hand-off (COMMON.md's contract): a bounded run of the
    channel's current spec over exactly ``[start_offsets, end_offsets)`` of ``topic``
    (``count`` records, the originals of ``dead_letter_ids``, which the dead-letter list
    then marks as redriven by this run). ``actor`` is a :class:`User` or a name. The
    redrive confirmed its live targets before it wrote the records."""
    if set(start_offsets) != set(end_offsets):
        raise ValueError("start_offsets and end_offsets must name the same partitions")
    if any(end_offsets[p] < start_offsets[p] for p in start_offsets):
        raise ValueError("an end offset before its start")
    if count < 0:
        raise ValueError("count must be 0 or more")
    revision, spec = _spec(channel)
    user = actor if isinstance(actor, User) else None
    name = None if user is not None else str(actor or "system")
    run = ChannelRun.objects.create(
        channel=channel,
        kind=RunKind.REDRIVE,
        revision=revision,
        topic=topic,
        start_offsets={topic: {str(p): int(o) for p, o in start_offsets.items()}},
        end_offsets={topic: {str(p): int(o) for p, o in end_offsets.items()}},
        expected=count,
        created_by=actor_for(user, name),
        dead_letter_ids=list(dead_letter_ids or []),
        targets=[target.to_json() for target in run_targets(spec)],
    )
    return _started(run)


def _started(run: ChannelRun) -> ChannelRun:
    """``run``, started at once once its transaction commits (the run executor's
    :func:`~console.services.run_executor.start_now`; the loop's next pass otherwise)."""
    from console.services.run_executor import start_now  # the executor imports this module

    def start() -> None:
        start_now(run)

    transaction.on_commit(start)
    return run


def cancel_run(
    run: ChannelRun, *, user: User | None = None, actor: str | None = None
) -> ChannelRun:
    """Cancel ``run`` unless it has finished (then :class:`InvalidTransition`)."""
    with transaction.atomic():
        run = ChannelRun.objects.select_for_update().get(pk=run.pk)
        if run.state in FINAL_RUN_STATES:
            raise InvalidTransition(
                f"run {run.id} is {run.state}: only an unfinished run can be cancelled"
            )
        run.state = RunState.CANCELLED
        run.finished_at = timezone.now()
        run.error = f"cancelled by {actor_for(user, actor)}"
        run.save(update_fields=["state", "finished_at", "error"])
    from console.services.run_executor import stop_run_now  # the executor imports this module

    stop_run_now(run)
    return run
