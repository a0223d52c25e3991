"""Redrive: send a channel's dead letters back through it once their cause is fixed.

:func:`redrive_dead_letters` writes the selected dead letters' ORIGINAL records (the payload
the source read; for an HTTP-ingested channel, the ingested body) to the channel's redrive
topic, ``sluice-redrive.<channel>``, on the channel's source Kafka cluster (the console's own
Kafka for non-Kafka sources): value = the original bytes, headers ``sluice-origin-topic``,
``sluice-origin-partition``, ``sluice-origin-offset``, ``sluice-origin-timestamp`` and
``sluice-dead-letter-id`` (UTF-8 text; an origin the dead letter does not know is left out).
It then asks for a bounded run of the channel's current spec over exactly those records
(``console.services.runs.start_redrive``), which tags each event as redriven.

Nothing is written when that run cannot be started in this installation
(:class:`RedriveUnavailable`): records nobody reads would only confuse the next redrive.
Each redrive is counted per channel (``sluice_dead_letters_redriven_total`` in ``/metrics``);
the request itself is in the audit trail (``channel.dead_letters.redrive``).
"""

from __future__ import annotations

import importlib
import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, cast

from django.conf import settings
from django.contrib.auth.models import User

from console import metrics
from console.errors import ServiceError, runtime_errors
from console.models import Channel, Revision
from console.selectors.dead_letters import (
    SCAN_LIMIT,
    DeadLetterFilters,
    get_dead_letters,
    list_dead_letters,
)
from console.services.ingest.kafka import get_ingest_kafka
from runtime_adapter import dead_letters as store
from runtime_adapter.dead_letters import DeadLetter, OutgoingRecord
from runtime_adapter.kafka import TopicReplication, security_settings

logger = logging.getLogger(__name__)

REDRIVE_TOPIC_PREFIX = "sluice-redrive."
MAX_REDRIVE = SCAN_LIMIT
"""The most dead letters one redrive sends back (``all: true`` takes the newest ones)."""
HEADER_ORIGIN_TOPIC = "sluice-origin-topic"
HEADER_ORIGIN_PARTITION = "sluice-origin-partition"
HEADER_ORIGIN_OFFSET = "sluice-origin-offset"
HEADER_ORIGIN_TIMESTAMP = "sluice-origin-timestamp"
HEADER_DEAD_LETTER_ID = "sluice-dead-letter-id"


class RedriveUnavailable(ServiceError):
    """No redrive run can be started in this installation; nothing was written."""


class InvalidRedrive(ServiceError):
    """The selection names nothing that can be redriven; ``errors`` keyed by field."""

    def __init__(self, errors: dict[str, list[str]]) -> None:
        super().__init__("nothing to redrive")
        self.errors = errors


@dataclass(frozen=True)
class RedriveResult:
    """What a redrive wrote and started."""

    topic: str
    count: int
    start_offsets: dict[int, int]
    end_offsets: dict[int, int]
    run: Any
    """The ``ChannelRun`` that processes the records."""
    skipped: dict[str, str] = field(default_factory=dict)
    """Selected ids not redriven, with why (gone, or no original record to send)."""


def redrive_topic(channel_name: str) -> str:
    """The topic a channel's redriven records are written to."""
    return f"{REDRIVE_TOPIC_PREFIX}{channel_name}"


def redrive_cluster(channel: Channel) -> tuple[str, dict[str, object] | None]:
    """``(bootstrap servers, librdkafka settings)`` of the cluster the redrive topic lives
    on: the Kafka source's own cluster, else the console's Kafka (HTTP ingestion's)."""
    revision = cast(Revision, channel.latest_revision_obj())
    from console.crypto import decrypt_spec

    source = decrypt_spec(revision.spec).get("source") or {}
    config = source.get("config") or {}
    if source.get("type") == "kafka" and config.get("bootstrap_servers"):
        extra = security_settings(config.get("security"))
        if extra is None:
            raise RedriveUnavailable(
                "the channel's source Kafka uses TLS, which the console's Kafka client cannot "
                "reach; nothing was written"
            )
        return str(config["bootstrap_servers"]), extra
    return get_ingest_kafka().bootstrap_servers, None


def redrive_records(letters: Sequence[DeadLetter]) -> list[OutgoingRecord]:
    """The records a redrive writes for ``letters``, in origin order (see the module
    docstring); letters without an original payload are left out."""
    records = []
    for letter in store.records_of(letters):
        if letter.payload is None:
            continue
        headers = [(HEADER_DEAD_LETTER_ID, letter.id.encode())]
        origin = (
            (HEADER_ORIGIN_TOPIC, letter.origin_topic),
            (HEADER_ORIGIN_PARTITION, letter.origin_partition),
            (HEADER_ORIGIN_OFFSET, letter.origin_offset),
            (HEADER_ORIGIN_TIMESTAMP, letter.origin_timestamp),
        )
        headers += [(name, str(value).encode()) for name, value in origin if value is not None]
        records.append(OutgoingRecord(value=letter.payload.encode("utf-8"), headers=headers))
    return records


def write_redrive_records(
    channel: Channel, letters: Sequence[DeadLetter]
) -> tuple[str, dict[int, int], dict[int, int], int]:
    """Write ``letters``' originals to the channel's redrive topic (created when missing);
    ``(topic, start_offsets, end_offsets, count)`` of what Kafka confirmed, offsets per
    partition (end exclusive). Raises :class:`RuntimeUnavailable` when Kafka fails."""
    records = redrive_records(letters)
    topic = redrive_topic(channel.name)
    bootstrap, extra = redrive_cluster(channel)
    with runtime_errors("redrive"):
        store.ensure_redrive_topic(
            bootstrap,
            topic,
            replication=TopicReplication(
                settings.SLUICE_TOPIC_REPLICATION_FACTOR, settings.SLUICE_TOPIC_MIN_INSYNC_REPLICAS
            ),
            settings=extra,
        )
        placed = store.produce_confirmed(bootstrap, topic, records, settings=extra)
    start: dict[int, int] = {}
    end: dict[int, int] = {}
    for partition, offset in placed:
        start[partition] = min(start.get(partition, offset), offset)
        end[partition] = max(end.get(partition, offset + 1), offset + 1)
    return topic, start, end, len(placed)


def redrive_dead_letters(
    channel: Channel,
    *,
    ids: Sequence[str] | None = None,
    filters: DeadLetterFilters | None = None,
    user: User | None = None,
    confirm: bool = False,
) -> RedriveResult:
    """Redrive the dead letters ``ids`` names, or (``ids`` None) every one matching
    ``filters`` (at most :data:`MAX_REDRIVE`, the newest). Raises
    :class:`RedriveUnavailable` before writing anything when no run can be started,
    :class:`InvalidRedrive` when nothing selected can be redriven or the channel's live
    targets were not confirmed (``confirm``, see :func:`console.services.runs.run_targets`),
    :class:`RuntimeUnavailable` when Kafka fails."""
    start_redrive = redrive_starter()
    if not confirm:
        from console.services.runs import channel_targets, unconfirmed

        targets = channel_targets(channel)
        if any(target.live for target in targets):
            raise InvalidRedrive(unconfirmed(targets, "redrive"))
    skipped: dict[str, str] = {}
    if ids is not None:
        found = get_dead_letters(channel, list(dict.fromkeys(ids)))
        letters = [letter for letter in found.values() if letter is not None]
        skipped |= {i: "no such dead letter" for i, letter in found.items() if letter is None}
    else:
        scan = list_dead_letters(channel, filters or DeadLetterFilters())
        letters = scan.letters[:MAX_REDRIVE]
    skipped |= {d.id: "no original record to send" for d in letters if d.payload is None}
    sendable = [d for d in letters if d.payload is not None]
    if not sendable:
        key = "ids" if ids is not None else "all"
        reasons = sorted(set(skipped.values())) or ["no dead letter matches"]
        raise InvalidRedrive({key: [f"nothing to redrive: {'; '.join(reasons)}"]})
    topic, start, end, count = write_redrive_records(channel, sendable)
    run = start_redrive(
        channel,
        topic=topic,
        start_offsets=start,
        end_offsets=end,
        count=count,
        actor=user,
        dead_letter_ids=[letter.id for letter in sendable],
    )
    metrics.record_redriven(channel.name, count)
    logger.info(
        "redrive of %d dead letter(s) of channel %s to %s (%s)", count, channel.name, topic, start
    )
    return RedriveResult(topic, count, start, end, run, skipped)


@dataclass(frozen=True)
class Redriven:
    """The latest redrive of one dead letter: what the list and detail mark it with."""

    run: str
    at: str | None
    by: str
    state: str
    outcome: str
    """``written``, ``failed again``, ``running``, ``cancelled`` … in plain words."""

    def to_json(self) -> dict[str, Any]:
        return {
            "run": self.run,
            "at": self.at,
            "by": self.by,
            "state": self.state,
            "outcome": self.outcome,
        }


REDRIVES_LOOKED_AT = 500
"""The newest redrive runs of a channel whose letters are marked (older ones are not)."""


def redrive_outcome(state: str, written: int, failed: int, error: str) -> str:
    """A redrive run's outcome in words, for the letters it redrove."""
    if state in ("PENDING", "RUNNING"):
        return "running"
    if state == "CANCELLED":
        return "cancelled"
    if failed:
        return f"{failed} failed again, {written} written"
    if state == "FAILED":
        return f"failed: {error}" if error else "failed"
    return f"{written} written"


def redrives_of(channel: Channel, ids: Sequence[str]) -> dict[str, Redriven]:
    """The latest redrive of each of ``ids`` that was redriven (by the channel's newest
    :data:`REDRIVES_LOOKED_AT` redrive runs), keyed by id."""
    from console.models import ChannelRun

    wanted = set(ids)
    found: dict[str, Redriven] = {}
    runs = (
        ChannelRun.objects.filter(channel=channel, kind="redrive")
        .order_by("-created_at")
        .only(
            "id",
            "created_at",
            "created_by",
            "state",
            "events_written",
            "events_failed",
            "error",
            "dead_letter_ids",
        )[:REDRIVES_LOOKED_AT]
    )
    for run in runs:
        for letter_id in set(run.dead_letter_ids or []) & wanted:
            if letter_id in found:
                continue  # a newer run redrove it since
            found[letter_id] = Redriven(
                run=str(run.id),
                at=run.created_at.isoformat().replace("+00:00", "Z"),
                by=run.created_by,
                state=str(run.state),
                outcome=redrive_outcome(
                    str(run.state), run.events_written, run.events_failed, run.error
                ),
            )
    return found


def redrive_starter() -> Callable[..., Any]:
    """``console.services.runs.start_redrive``, imported when first needed (the runs
    module may be absent); :class:`RedriveUnavailable` when it is missing."""
    try:
        runs = importlib.import_module("console.services.runs")
        return cast(Callable[..., Any], runs.start_redrive)
    except (ImportError, AttributeError) as exc:
        raise RedriveUnavailable(
            "redrive runs are not available in this installation "
            "(console.services.runs.start_redrive is missing); nothing was written"
        ) from exc
