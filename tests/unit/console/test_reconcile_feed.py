"""The control loop following the runtime's status feed (``SLUICE_RUNTIME_STATUS_FEED``, the
runtime group placing): a pass looks at the connectors with news, those time or a worker's
death acts on, and every connector once a resync is due; workers' vouches date the reports
of the rest. The feed here is an in-memory log; the real one (the status topic, written by
runtime workers' relays) is tested in tests/unit/runtime_adapter/test_group_placement.py
and on the real stacks (tests/integration, tests/e2e, tests/faults)."""

from __future__ import annotations

import importlib
from collections.abc import Mapping

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from console import services
from console.choices import ConnectorState, SubjectType, TargetState
from console.models import Channel, Connector, LifecycleEvent, LoopCursor, Task
from console.selectors import reporting
from runtime_adapter.base import ConnectorStatus, FeedBatch, StatusNews, TaskStatus, Vouch
from runtime_adapter.states import State

pytestmark = pytest.mark.django_db

reconcile_module = importlib.import_module("console.services.reconcile")
NOW = 1_700_000_000.0


class FakeFeed:
    """A status feed over an in-memory log; the cursor is the log's length at a read."""

    def __init__(self) -> None:
        self.log: list[StatusNews | Vouch] = []
        self.reads: list[Mapping[int, int] | None] = []
        self.behind = False
        """Set by tests: a read stops at its time budget, before the end of the log."""

    def read(self, cursor: Mapping[int, int] | None, *, budget: float = 0.5) -> FeedBatch:
        self.reads.append(None if cursor is None else dict(cursor))
        items = self.log[(cursor or {}).get(0, 0) :]
        return FeedBatch(
            [i for i in items if isinstance(i, StatusNews)],
            [i for i in items if isinstance(i, Vouch)],
            {0: len(self.log)},
            not self.behind,
        )

    def news(
        self,
        cid: str,
        state: State,
        worker: str,
        *,
        reporting: bool = True,
        generation: int = 0,
        **kw,
    ) -> None:
        status = ConnectorStatus(
            cid, state, worker, generation, updated_at=kw.pop("at", NOW), report_interval=10.0, **kw
        )
        self.log.append(StatusNews(cid, status, reporting, 1))

    def vouch(self, worker: str, *ids: str, age: float = 0.0) -> None:
        """``worker`` vouches for ``ids``, each last refreshed ``age`` seconds before."""
        self.log.append(Vouch(worker, dict.fromkeys(ids, age), 10.0, 1, at=NOW))


@pytest.fixture
def feed(runtime, settings) -> FakeFeed:
    settings.SLUICE_RECONCILE_RESYNC_SECONDS = 1_000_000  # (see far_resync)
    runtime.places = True
    runtime.feed = FakeFeed()
    return runtime.feed


@pytest.fixture
def running(runtime, feed, spec):
    """Channels started and reported RUNNING on w1 through the feed, after a first pass."""

    def start(*names: str, at: float = NOW) -> None:
        runtime.heartbeat("w1", at=at)
        for name in names:
            channel = services.create_channel(name=name, spec=spec)
            services.start_channel(channel)
            runtime.assignments[name] = "w1"
            feed.news(name, State.RUNNING, "w1")
        reconcile(runtime, at)
        far_resync()

    return start


def far_resync() -> None:
    """Move the rolling resync's next slice far from these few connectors' ids: the passes
    that follow look at them only for news or what is due."""
    LoopCursor.objects.filter(name="status-feed").update(resync_slice=500_000)


def reconcile(runtime, now=NOW):
    return services.reconcile(runtime=runtime, now=now)


def connector(name: str) -> Connector:
    return Connector.objects.get(runtime_id=name)


def shown(name: str, at: float) -> str:
    return reporting.shown_state(connector(name), at=reporting_at(at))


def reporting_at(at: float):
    from datetime import UTC, datetime

    return datetime.fromtimestamp(at, tz=UTC)


def events(**filters) -> list[tuple[str, str, str, str]]:
    rows = LifecycleEvent.objects.filter(**filters).order_by("id")
    return [(e.subject_id, e.from_state, e.to_state, e.reason) for e in rows]


def test_a_pass_looks_only_at_what_the_feed_or_time_says_and_never_reads_every_status(
    runtime, feed, running
) -> None:
    running("a", "b", "c")
    assert {connector(n).state for n in "abc"} == {ConnectorState.RUNNING}
    assert runtime.status_calls == 0, "statuses come from the feed only"

    quiet = reconcile(runtime, NOW + 1)
    assert (quiet.full, quiet.connectors, quiet.news) == (False, 0, 0)

    feed.news("b", State.PAUSED, "w1")
    one = reconcile(runtime, NOW + 2)
    assert (one.full, one.connectors, one.news) == (False, 1, 1)
    assert connector("b").state == ConnectorState.PAUSED
    assert events(subject_id="b", to_state="PAUSED")[0][3] == "reported by worker w1"
    assert runtime.status_calls == 0


def test_news_carries_tasks_and_a_failure_and_the_restart_policy_acts_without_news(
    runtime, feed, running
) -> None:
    running("a")
    tasks = [TaskStatus(0, State.RUNNING, "w1", "orders", 0, 40, 50, 10, 2.0)]
    feed.news("a", State.RUNNING, "w1", tasks=tasks)
    runtime.heartbeat("w1", at=NOW + 1)
    reconcile(runtime, NOW + 1)
    assert list(connector("a").tasks.values_list("offset", "lag")) == [(40, 10)]

    feed.news("a", State.FAILED, "w1", trace="Traceback…\nValueError: boom")
    runtime.heartbeat("w1", at=NOW + 2)
    reconcile(runtime, NOW + 2)
    failed = connector("a")
    assert (failed.state, failed.restart_attempts) == (ConnectorState.FAILED, 0)

    runtime.heartbeat("w1", at=NOW + 20)
    report = reconcile(runtime, NOW + 20)  # its backoff passed: restarted, with no news
    assert report.restarts == 1 and report.news == 0
    assert connector("a").state == ConnectorState.RESTARTING
    assert runtime.calls_named("restart") == [("a",)]


def test_vouches_keep_reports_believed_and_their_end_turns_them_not_reporting(
    runtime, feed, running
) -> None:
    """A vouch dates each report by its age (and one reconcile interval, the longest a
    record waits for a pass): believed twice the report interval from then."""
    running("a", "b")
    for at in (NOW + 5, NOW + 10, NOW + 15, NOW + 20, NOW + 25):
        runtime.heartbeat("w1", at=at)
        feed.vouch("w1", "a", "b", age=3)
        assert reconcile(runtime, at).connectors == 0, "a vouch is applied in SQL, not loaded"
        assert shown("a", at + 15.9) == shown("b", at + 15.9) == ConnectorState.RUNNING
        assert shown("a", at + 16.1) == "NOT_REPORTING"  # at - 3 - 1 + 20
    assert connector("a").status_seen_at == reporting_at(NOW + 21)
    assert connector("a").last_status_at == reporting_at(NOW - 3)  # the worker's clock

    runtime.heartbeat("w1", at=NOW + 30)
    feed.vouch("w1", "a", age=3)  # b no longer vouched for
    reconcile(runtime, NOW + 30)
    runtime.heartbeat("w1", at=NOW + 42)
    report = reconcile(runtime, NOW + 42)  # b's deadline (NOW + 21 + 20) passed
    assert report.connectors == 1
    assert shown("b", NOW + 42) == "NOT_REPORTING"
    [silent] = events(subject_id="b", to_state="NOT_REPORTING")
    assert silent[3].startswith("not reporting since")
    assert shown("a", NOW + 42) == ConnectorState.RUNNING

    runtime.heartbeat("w1", at=NOW + 43)
    feed.vouch("w1", "a", "b", age=1)  # b again (its driver reports again)
    reconcile(runtime, NOW + 43)
    assert shown("b", NOW + 43) == ConnectorState.RUNNING
    assert events(subject_id="b", from_state="NOT_REPORTING")[0][3] == "reports again"


def test_news_that_a_connector_stopped_reporting_is_shown_at_once(runtime, feed, running) -> None:
    running("a")
    runtime.heartbeat("w1", at=NOW + 5)
    feed.vouch("w1", "a", age=2)
    reconcile(runtime, NOW + 5)
    feed.news("a", State.RUNNING, "w1", reporting=False)
    runtime.heartbeat("w1", at=NOW + 8)
    reconcile(runtime, NOW + 8)
    judged = reporting.of_connector(connector("a"), at=reporting_at(NOW + 8))
    assert not judged.reporting and judged.since == reporting_at(NOW + 2)
    assert events(subject_id="a", to_state="NOT_REPORTING")


def test_a_dead_workers_connectors_are_looked_at_and_unassigned_without_news(
    runtime, feed, running, settings
) -> None:
    settings.SLUICE_WORKER_SESSION_TIMEOUT = 10
    running("a", "b")
    report = reconcile(runtime, NOW + 11)  # w1's heartbeat stopped changing 11 s ago
    assert report.connectors == 2
    assert {connector(n).state for n in "ab"} == {ConnectorState.UNASSIGNED}

    runtime.heartbeat("w2", at=NOW + 12)
    runtime.assignments.update(a="w2", b="w2")  # the group gave w1's slots to w2
    reconcile(runtime, NOW + 12)
    assert {connector(n).worker_id for n in "ab"} == {"w2"}
    feed.news("a", State.RUNNING, "w2")
    feed.news("b", State.RUNNING, "w2")
    runtime.heartbeat("w2", at=NOW + 13)
    reconcile(runtime, NOW + 13)
    assert {connector(n).state for n in "ab"} == {ConnectorState.RUNNING}
    assert reconcile(runtime, NOW + 14).connectors == 0


def test_a_stop_shows_until_the_worker_says_it_stopped_or_is_dead(
    runtime, feed, running, settings
) -> None:
    """No news in a pass is not "no status": a stopping query stays RUNNING until its live
    worker reports it STOPPED; on a dead worker nothing runs it, and the loop settles it."""
    settings.SLUICE_WORKER_SESSION_TIMEOUT = 10
    running("a", "b")
    services.stop_channel(Channel.objects.get(name="a"))
    services.stop_channel(Channel.objects.get(name="b"))
    runtime.heartbeat("w1", at=NOW + 1)
    reconcile(runtime, NOW + 1)
    assert {connector(n).state for n in "ab"} == {ConnectorState.RUNNING}, "still stopping"
    feed.news("a", State.STOPPED, "w1")
    runtime.heartbeat("w1", at=NOW + 2)
    reconcile(runtime, NOW + 2)
    assert connector("a").state == ConnectorState.STOPPED
    assert connector("b").state == ConnectorState.RUNNING

    reconcile(runtime, NOW + 13)  # w1 silent past its session: dead, b is not running
    assert connector("b").state == ConnectorState.STOPPED
    assert reconcile(runtime, NOW + 14).connectors == 0


def test_each_connector_is_looked_at_once_in_a_rolling_resync(
    runtime, feed, running, settings
) -> None:
    """Three slices (a 3 s resync, a pass a second): a quiet pass looks at one, by id."""
    running("a", "b", "c", "d", "e", "f")
    settings.SLUICE_RECONCILE_RESYNC_SECONDS = 3
    LoopCursor.objects.filter(name="status-feed").update(resync_slice=0)
    looked = []
    for n in range(1, 4):
        runtime.heartbeat("w1", at=NOW + n)
        report = reconcile(runtime, NOW + n)
        assert not report.full and report.news == 0
        looked.append(report.connectors)
    assert looked == [2, 2, 2]
    assert LoopCursor.objects.get(name="status-feed").resync_slice == 0  # round again


def test_the_cursor_is_saved_with_the_pass_and_a_stale_pass_reads_again(
    runtime, feed, running
) -> None:
    running("a")
    assert LoopCursor.objects.get(name="status-feed").position == {"0": 1}
    services.reconcile(runtime=runtime, now=NOW + 1, token=5)
    feed.news("a", State.PAUSED, "w1")
    stale = services.reconcile(runtime=runtime, now=NOW + 2, token=4)
    assert stale.stale and connector("a").state == ConnectorState.RUNNING
    assert LoopCursor.objects.get(name="status-feed").position == {"0": 1}

    services.reconcile(runtime=runtime, now=NOW + 3, token=6)
    assert connector("a").state == ConnectorState.PAUSED, "the news was read again"
    assert feed.reads[-1] == {0: 1}


def test_news_of_an_older_generation_than_the_connector_is_ignored(runtime, feed, running) -> None:
    running("a")
    services.restart_channel(Channel.objects.get(name="a"))
    generation = connector("a").generation
    feed.news("a", State.FAILED, "w1", generation=generation - 1)
    reconcile(runtime, NOW + 1)
    assert connector("a").state != ConnectorState.FAILED
    assert not events(subject_type=SubjectType.CONNECTOR, subject_id="a", to_state="FAILED")


def test_without_a_feed_every_pass_reads_every_status(runtime, spec) -> None:
    """Console placement, or ``SLUICE_RUNTIME_STATUS_FEED=false``: the level-triggered pass."""
    runtime.places = True
    runtime.heartbeat("w1", at=NOW)
    services.start_channel(services.create_channel(name="a", spec=spec))
    report = reconcile(runtime)
    assert report.full and runtime.status_calls == 1
    assert not LoopCursor.objects.exists()
    assert Channel.objects.get(name="a").target_state == TargetState.RUNNING


def test_what_is_read_before_the_feed_is_caught_up_dates_no_report(runtime, feed, running) -> None:
    """On the way through a backlog a record may be an old one: only a read that reached the
    end of what was written applies vouches and dates news (whose state it applies)."""
    running("a")
    runtime.heartbeat("w1", at=NOW + 5)
    feed.vouch("w1", "a", age=0)
    feed.news("a", State.PAUSED, "w1")
    feed.behind = True
    reconcile(runtime, NOW + 5)
    paused = connector("a")
    assert paused.state == ConnectorState.PAUSED
    assert paused.status_seen_at == reporting_at(NOW)  # the first report's date


def test_health_levels_follow_the_channels_a_pass_looks_at(runtime, feed, running, settings):
    """Following the feed, a pass refreshes the health of the channels it looked at (news,
    what is due, the resync's slice), not the whole fleet every 5 s."""
    running("a", "b")
    Channel.objects.update(health_level="critical")  # stale: both are RUNNING and reporting
    runtime.heartbeat("w1", at=NOW + 10)
    reconcile(runtime, NOW + 10)  # nothing looked at: nothing refreshed
    assert set(Channel.objects.values_list("health_level", flat=True)) == {"critical"}

    feed.news("a", State.RUNNING, "w1", tasks=[])
    runtime.heartbeat("w1", at=NOW + 11)
    reconcile(runtime, NOW + 11)
    levels = dict(Channel.objects.values_list("name", "health_level"))
    assert levels["a"] != "critical" and levels["b"] == "critical"


def test_a_pass_reads_tasks_only_where_it_may_change_them_and_parks_a_dead_workers(
    runtime, feed, running, settings
) -> None:
    settings.SLUICE_WORKER_SESSION_TIMEOUT = 10
    running("a")
    tasks = [TaskStatus(0, State.RUNNING, "w1", "orders", 0, 40, 50, 10, 2.0)]
    feed.news("a", State.RUNNING, "w1", tasks=tasks)
    runtime.heartbeat("w1", at=NOW + 1)
    reconcile(runtime, NOW + 1)

    # Its turn in the rolling resync, no news: looked at, its task rows not read.
    LoopCursor.objects.filter(name="status-feed").update(resync_slice=connector("a").pk)
    runtime.heartbeat("w1", at=NOW + 2)
    with CaptureQueriesContext(connection) as queries:
        report = reconcile(runtime, NOW + 2)
    assert report.connectors == 1
    rows = f'SELECT "{Task._meta.db_table}"."id"'  # (the health refresh sums lags apart)
    assert not [q["sql"] for q in queries if q["sql"].startswith(rows)]

    # Its worker dead, no news: its tasks are read and parked with it, offsets kept.
    reconcile(runtime, NOW + 13)
    assert connector("a").state == ConnectorState.UNASSIGNED
    assert list(connector("a").tasks.values_list("state", "worker_id", "offset")) == [
        (ConnectorState.UNASSIGNED, None, 40)
    ]
