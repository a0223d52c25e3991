"""A stopped channel's lag from the brokers' end offsets (console.services.parked_lag)."""

from __future__ import annotations

import pytest

from console.choices import ConnectorState
from console.models import Connector, Task
from console.services import parked_lag
from runtime_adapter.base import ConnectorOffsets, OffsetChange, SourceOffset
from tests.support.clock import ManualClock

pytestmark = pytest.mark.django_db

CHANNELS = "/api/v1/channels/"
END = (parked_lag._FAR_FUTURE_MS, parked_lag._FAR_FUTURE_MS)


def stopped_with_tasks(api, spec, state=ConnectorState.STOPPED) -> Connector:
    """A channel that ran (two partitions read to 40 and 10, rows/s 3) and is now ``state``."""
    assert api.post(CHANNELS, {"name": "orders", "spec": spec}, format="json").status_code == 201
    assert api.post(f"{CHANNELS}orders/start").status_code == 202
    connector = Connector.objects.get(runtime_id="orders")
    for task_id, (offset, end) in enumerate([(40, 40), (10, 12)]):
        Task.objects.create(
            connector=connector,
            task_id=task_id,
            state=state,
            topic="orders",
            partition=task_id,
            offset=offset,
            end_offset=end,
            lag=end - offset,
            rows_per_second=3.0,
        )
    Connector.objects.filter(pk=connector.pk).update(state=state)
    return connector


def tasks() -> list[tuple[int | None, int | None, int | None, float | None]]:
    return [
        (t.offset, t.end_offset, t.lag, t.rows_per_second) for t in Task.objects.order_by("task_id")
    ]


def test_a_stopped_channels_lag_is_read_from_the_end_offsets(api, spec, runtime):
    stopped_with_tasks(api, spec)
    runtime.checkpoints["orders"] = ConnectorOffsets(
        [SourceOffset("orders", 0, 40), SourceOffset("orders", 1, 10)], batch_id=3
    )
    # 150 records written since it stopped.
    runtime.windows[END] = ([], [SourceOffset("orders", 0, 140), SourceOffset("orders", 1, 60)])
    assert parked_lag.refresh_parked_lag() == 2
    assert tasks() == [(40, 140, 100, 0.0), (10, 60, 50, 0.0)]
    assert status_lag(api) == 150
    # Nothing new: nothing written again.
    assert parked_lag.refresh_parked_lag() == 0


def test_a_pending_offset_change_is_where_the_lag_counts_from(api, spec, runtime):
    stopped_with_tasks(api, spec)
    runtime.checkpoints["orders"] = ConnectorOffsets([SourceOffset("orders", 0, 40)], batch_id=3)
    runtime.offset_changes["orders"] = OffsetChange("offsets", [SourceOffset("orders", 0, 100)])
    runtime.windows[END] = ([], [SourceOffset("orders", 0, 140), SourceOffset("orders", 1, 12)])
    parked_lag.refresh_parked_lag()
    assert tasks() == [(100, 140, 40, 0.0), (10, 12, 2, 0.0)]


def test_a_running_channel_and_an_unreadable_one_are_left_alone(api, spec, runtime):
    stopped_with_tasks(api, spec, state=ConnectorState.RUNNING)
    runtime.checkpoints["orders"] = ConnectorOffsets([SourceOffset("orders", 0, 40)], batch_id=3)
    runtime.windows[END] = ([], [SourceOffset("orders", 0, 140)])
    assert parked_lag.refresh_parked_lag() == 0
    Connector.objects.update(state=ConnectorState.STOPPED)
    runtime.unavailable = ConnectionError("the runtime is down")
    clock = ManualClock()
    assert parked_lag.refresh_parked_lag(clock=clock) == 0  # logged; tried again later
    assert tasks() == [(40, 40, 0, 3.0), (10, 12, 2, 3.0)]
    # Back, it is left alone for the backoff, then read again.
    runtime.unavailable = None
    clock.now += parked_lag.BACKOFF_SECONDS / 2
    assert parked_lag.refresh_parked_lag(clock=clock) == 0
    clock.now += parked_lag.BACKOFF_SECONDS
    assert parked_lag.refresh_parked_lag(clock=clock) == 2


def test_a_refresh_stops_at_its_budget_and_the_next_goes_on(api, spec, runtime):
    stopped_with_tasks(api, spec)
    runtime.checkpoints["orders"] = ConnectorOffsets([SourceOffset("orders", 0, 40)], batch_id=3)
    runtime.windows[END] = ([], [SourceOffset("orders", 0, 41)])
    clock = ManualClock()

    def slow() -> float:  # each look at the clock finds the budget spent
        clock.now += parked_lag.BUDGET_SECONDS + 1
        return clock.now

    assert parked_lag.refresh_parked_lag(clock=slow) == 0
    assert parked_lag.refresh_parked_lag() == 2


def status_lag(api) -> int:
    status = api.get(f"{CHANNELS}orders/status").json()
    return sum(task["lag"] for task in status["tasks"])
