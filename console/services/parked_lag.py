"""The lag of channels no driver runs, from the broker's end offsets instead of a last report.

A running channel's driver reports, per source partition, the offset it reached and the
partition's end offset: its tasks' lag. Once no driver runs it (its connector STOPPED or
UNASSIGNED, its tasks parked by the control loop), nothing reports, and the records written
since would go unseen: a stopped channel with 150 unread records showed a lag of 0.

So :func:`refresh_parked_lag` (a Celery task every 10 s, beside the control loop: see
``console.schedule``) reads for each such channel with a Kafka-backed source where its next
start reads (its checkpoint, a pending offset change laid over it, as
:func:`console.services.offsets.channel_offsets` shows them) and each partition's end offset
now, and writes them into its tasks: ``lag = end - next``, ``rows_per_second = 0`` (nothing
flows). Every reader (the status, the channels list, ``/metrics``, the history scraped from it)
reads those rows: one truth.

One refresh spends at most :data:`BUDGET_SECONDS` (the channels take turns across refreshes).
A channel whose checkpoint or brokers cannot be read keeps what its tasks showed, is logged and
is left alone for :data:`BACKOFF_SECONDS`: its brokers being down costs the others little. A
channel that never committed a batch has no next offset yet (its ``starting_offsets`` decides
at its start): it is left as it is.
"""

from __future__ import annotations

import logging
import time
from typing import Any

from django.db import transaction

from console.choices import ConnectorState
from console.models import Channel, Task
from console.runtime import get_runtime
from console.services.offsets_common import KAFKA_BACKED_SOURCES, deployed_spec
from runtime_adapter.base import OffsetsError, RuntimeUnavailable

logger = logging.getLogger(__name__)

MAX_CHANNELS = 200
"""The most channels one refresh reads; they take turns."""
BUDGET_SECONDS = 5.0
"""The time one refresh may spend reading brokers; the rest wait for the next one."""
BACKOFF_SECONDS = 60.0
"""How long a channel whose brokers or checkpoint could not be read is left alone."""
PARKED_STATES = (ConnectorState.STOPPED, ConnectorState.UNASSIGNED)

#: An end offset is what a far-future time finds (Kafka's offsets_for_times answers the end).
_FAR_FUTURE_MS = 32503680000000

_cursor = 0
_failed_until: dict[int, float] = {}


def refresh_parked_lag(*, clock: Any = time.monotonic) -> int:
    """Refresh the parked channels' lag within :data:`BUDGET_SECONDS`; the number of tasks
    changed."""
    started = clock()
    for pk in [pk for pk, until in _failed_until.items() if until <= started]:
        del _failed_until[pk]  # (a deleted channel's entry goes too)
    changed = 0
    for channel in _parked_channels():
        if clock() - started > BUDGET_SECONDS:
            break
        if _failed_until.get(channel.pk, 0.0) > clock():
            continue
        try:
            changed += _refresh(channel)
        except Exception as exc:  # one channel's source must not stop the others' refresh
            _failed_until[channel.pk] = clock() + BACKOFF_SECONDS
            if isinstance(exc, (RuntimeUnavailable, OffsetsError)):
                logger.info("lag of stopped channel %s not refreshed: %s", channel.name, exc)
            else:
                logger.exception("lag of stopped channel %s not refreshed", channel.name)
        else:
            _failed_until.pop(channel.pk, None)
    return changed


def _parked_channels() -> list[Channel]:
    """Channels with parked tasks, at most :data:`MAX_CHANNELS`, taking turns: each refresh
    goes on after the last channel the previous one read."""
    global _cursor
    ids = sorted(
        set(
            Task.objects.filter(
                connector__state__in=PARKED_STATES, topic__isnull=False
            ).values_list("connector__channel_id", flat=True)
        )
    )
    turn = [pk for pk in ids if pk > _cursor] + [pk for pk in ids if pk <= _cursor]
    wanted = turn[:MAX_CHANNELS]
    _cursor = wanted[-1] if wanted else 0
    found = Channel.objects.filter(pk__in=wanted).select_related("connector")
    by_id = {channel.pk: channel for channel in found}
    return [by_id[pk] for pk in wanted if pk in by_id]


def _refresh(channel: Channel) -> int:
    spec = deployed_spec(channel)
    if spec["source"]["type"] not in KAFKA_BACKED_SOURCES:
        return 0
    runtime = get_runtime()
    found = runtime.offsets(channel.connector.runtime_id, channel.checkpoint_key)
    if found.batch_id is None or (found.pending is not None and found.pending.kind != "offsets"):
        # Never committed, or reset / moved to a time: where it starts is decided at its
        # start; what its tasks show stays (and says so by its age).
        return 0
    nexts: dict[tuple[Any, Any], int | None] = {
        (o.topic, o.partition): o.offset for o in found.offsets
    }
    _starts, ends = runtime.window_offsets(spec, _FAR_FUTURE_MS, _FAR_FUTURE_MS)
    end_of = {(o.topic, o.partition): o.offset for o in ends}
    return _write(channel, nexts, end_of)


def _write(
    channel: Channel, nexts: dict[tuple[Any, Any], int | None], end_of: dict[tuple[Any, Any], int]
) -> int:
    changed = 0
    with transaction.atomic():
        tasks = Task.objects.select_for_update().filter(
            connector__channel=channel, connector__state__in=PARKED_STATES
        )
        for task in tasks:
            key = (task.topic, task.partition)
            end = end_of.get(key)
            offset = nexts.get(key, task.offset)
            values = {
                "offset": offset,
                "end_offset": end,
                "lag": max(end - offset, 0) if end is not None and offset is not None else None,
                "rows_per_second": 0.0,
            }
            if all(getattr(task, name) == value for name, value in values.items()):
                continue
            for name, value in values.items():
                setattr(task, name, value)
            task.save(update_fields=[*values])
            changed += 1
    return changed
