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
"""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Any, cast

from django.contrib.auth.models import User
from django.db import transaction
from django.utils import timezone

from console.choices import FINAL_RUN_STATES, RunKind, RunState
from console.crypto import decrypt_spec
from console.models import Channel, ChannelRun, Revision
from console.services.errors import InvalidTransition, ServiceError
from console.services.ingest import with_ingest_fields
from console.services.lifecycle import actor_for as _user_actor

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
) -> ChannelRun:
    """Record a replay of ``[window_start, window_end)`` (or of ``[start_offsets,
    end_offsets)`` per partition) through the channel's current spec. The API's serializer
    checks the request's shape; this checks it against the channel and the clock."""
    revision, spec = _spec(channel)
    _replayable(channel, spec)
    errors: dict[str, list[str]] = {}
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
) -> ChannelRun:
    """The dead-letter redrive's hand-off (COMMON.md's contract): a bounded run of the
    channel's current spec over exactly ``[start_offsets, end_offsets)`` of ``topic``
    (``count`` records). ``actor`` is a :class:`User` or a name."""
    if set(start_offsets) != set(end_offsets):
        raise ValueError("start_offsets and end_offsets must name the same partitions")
    if any(end_offsets[p] < start_offsets[p] for p in start_offsets):
        raise ValueError("an end offset before its start")
    if count < 0:
        raise ValueError("count must be 0 or more")
    revision, _ = _spec(channel)
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
