from __future__ import annotations

import importlib

import pytest

from console import services
from console.choices import ConnectorState, SubjectType, TargetState, WorkerState
from console.models import Channel, Connector, LifecycleEvent, Task, Worker
from console.services.workers import drain_worker, undrain_worker
from runtime_adapter.base import ConnectorStatus, TaskStatus
from runtime_adapter.states import State

pytestmark = pytest.mark.django_db

# The module (console.services.reconcile is also the name of its entry point).
reconcile_module = importlib.import_module("console.services.reconcile.loop")

NOW = 1_700_000_000.0


@pytest.fixture
def started(spec):
    """Start channels by name; returns their connectors keyed by name."""

    def start(*names: str) -> dict[str, Connector]:
        for name in names:
            channel = services.create_channel(name=name, spec=spec)
            services.start_channel(channel)
        return {c.runtime_id: c for c in Connector.objects.filter(runtime_id__in=names)}

    return start


def reconcile(runtime, now=NOW):
    return services.reconcile(runtime=runtime, now=now)


def connector(name: str) -> Connector:
    return Connector.objects.get(runtime_id=name)


def events(**filters) -> list[tuple[str, str, str, str]]:
    rows = LifecycleEvent.objects.filter(**filters).order_by("id")
    return [(e.subject_id, e.from_state, e.to_state, e.reason) for e in rows]


def test_workers_are_recorded_alive_or_dead_by_whether_their_heartbeat_changes(runtime, settings):
    """The console's own observation: a worker seen for the first time is ALIVE whatever its
    heartbeat's time says; one whose heartbeat stops changing is DEAD after the timeout."""
    settings.SLUICE_WORKER_SESSION_TIMEOUT = 10
    runtime.heartbeat("w1", at=NOW - 1)
    runtime.heartbeat("w2", at=NOW - 30)
    reconcile(runtime)
    assert set(Worker.objects.values_list("state", flat=True)) == {WorkerState.ALIVE}

    runtime.heartbeat("w1", at=NOW + 10)
    reconcile(runtime, now=NOW + 11)

    states = dict(Worker.objects.values_list("worker_id", "state"))
    assert states == {"w1": WorkerState.ALIVE, "w2": WorkerState.DEAD}
    w1 = Worker.objects.get(worker_id="w1")
    assert (w1.host, w1.last_heartbeat.timestamp()) == ("w1.example", NOW + 10)
    assert w1.heartbeat_seen_at.timestamp() == NOW + 11  # the console's clock
    assert [e[2] for e in events(subject_type=SubjectType.WORKER)] == ["ALIVE", "ALIVE", "DEAD"]


def test_worker_death_and_recovery_are_recorded(runtime):
    runtime.heartbeat("w1", at=NOW)
    reconcile(runtime)

    reconcile(runtime, now=NOW + 11)
    runtime.heartbeat("w1", at=NOW + 12)
    reconcile(runtime, now=NOW + 12)

    transitions = [(f, t) for _, f, t, _ in events(subject_type=SubjectType.WORKER)]
    assert transitions == [("", "ALIVE"), ("ALIVE", "DEAD"), ("DEAD", "ALIVE")]
    death = LifecycleEvent.objects.get(to_state="DEAD")
    assert "missed its session timeout" in death.reason
    assert death.actor == "system:reconcile"


def test_a_worker_forgotten_by_the_runtime_becomes_dead_after_its_session_timeout(
    runtime, settings
):
    """Its registration may come back (an emptied store loses every one until the next
    heartbeats): it is silent, not dead at once."""
    settings.SLUICE_WORKER_SESSION_TIMEOUT = 10
    runtime.heartbeat("w1", at=NOW)
    reconcile(runtime)
    runtime.forget_worker("w1")

    reconcile(runtime, now=NOW + 5)
    assert Worker.objects.get().state == WorkerState.ALIVE
    reconcile(runtime, now=NOW + 11)

    assert Worker.objects.get().state == WorkerState.DEAD
    assert "no longer registered with the runtime" in events(to_state="DEAD")[0][3]


def test_connectors_go_to_the_least_loaded_live_worker(runtime, started, dead_worker):
    runtime.heartbeat("w1", at=NOW)
    runtime.heartbeat("w2", at=NOW)
    dead_worker("w3", at=NOW - 60)  # dead: never chosen
    reconcile(runtime)
    started("a", "b", "c")  # each start places its connector at once, as reconcile would

    report = reconcile(runtime)

    placement = dict(Connector.objects.values_list("runtime_id", "worker"))
    assert placement == {"a": "w1", "b": "w2", "c": "w1"}
    deployed = {call[0].connector_id: call[0].worker_id for call in runtime.calls_named("deploy")}
    assert deployed == placement
    assert report.placements == 0, "nothing left for the pass to place"
    reasons = [reason for *_, reason in events(subject_type=SubjectType.CONNECTOR)]
    assert reasons[0] == "assigned to worker w1 (least loaded, hosting 0)"


def test_least_loaded_counts_only_connectors_that_want_to_run(runtime, started):
    runtime.heartbeat("w1", at=NOW)
    runtime.heartbeat("w2", at=NOW)
    reconcile(runtime)
    started("a", "b")
    reconcile(runtime)  # a → w1, b → w2
    services.stop_channel(Channel.objects.get(name="b"))

    started("c")
    reconcile(runtime)

    assert connector("c").worker_id == "w2"  # w2 hosts only a stopped connector


def test_placement_is_sticky(runtime, started):
    runtime.heartbeat("w1", at=NOW)
    reconcile(runtime)
    started("a", "b")
    reconcile(runtime)
    runtime.heartbeat("w2", at=NOW)  # an empty worker joins

    report = reconcile(runtime)

    assert set(Connector.objects.values_list("worker", flat=True)) == {"w1"}
    assert report.placements == 0


def test_connectors_of_a_dead_worker_move_with_a_recorded_reason(runtime, started):
    runtime.heartbeat("w1", at=NOW)
    runtime.heartbeat("w2", at=NOW)
    reconcile(runtime)
    started("a")
    reconcile(runtime)
    assert connector("a").worker_id == "w1"
    runtime.report("a", State.RUNNING, "w1")
    reconcile(runtime)
    assert connector("a").state == ConnectorState.RUNNING

    runtime.heartbeat("w2", at=NOW + 20)  # w1 stays silent past its session timeout
    reconcile(runtime, now=NOW + 20)

    moved = connector("a")
    assert moved.worker_id == "w2"
    assert moved.state == ConnectorState.UNASSIGNED
    assert runtime.assignments["a"] == "w2"
    last = LifecycleEvent.objects.filter(
        subject_type=SubjectType.CONNECTOR, actor="system:reconcile"
    ).first()
    assert (last.from_state, last.to_state, last.actor) == (
        "RUNNING",
        "UNASSIGNED",
        "system:reconcile",
    )
    assert last.reason.startswith("worker w1 missed its session timeout; assigned to worker w2")
    assert last.channel.name == "a"


def test_with_no_live_worker_connectors_are_unassigned(runtime, started):
    runtime.heartbeat("w1", at=NOW)
    reconcile(runtime)
    started("a", "b")
    reconcile(runtime)

    reconcile(runtime, now=NOW + 60)

    assert set(Connector.objects.values_list("worker", flat=True)) == {None}
    assert set(Connector.objects.values_list("state", flat=True)) == {ConnectorState.UNASSIGNED}
    assert runtime.assignments == {"a": None, "b": None}
    reasons = {e.reason for e in LifecycleEvent.objects.filter(subject_id="a")}
    assert "worker w1 missed its session timeout; no live worker to take over" in reasons


def test_a_started_channel_without_workers_stays_unassigned(runtime, started):
    started("a")

    reconcile(runtime)

    assert connector("a").state == ConnectorState.UNASSIGNED
    assert runtime.calls_named("assign") == []


def test_reported_status_is_written_and_transitions_recorded(runtime, started):
    runtime.heartbeat("w1", at=NOW)
    reconcile(runtime)
    started("a")
    reconcile(runtime)
    runtime.report(
        "a",
        State.RUNNING,
        "w1",
        tasks=[
            TaskStatus(0, State.RUNNING, "w1", "orders", 0, offset=10, end_offset=15, lag=5),
            TaskStatus(1, State.FAILED, "w1", "orders", 1, offset=7, rows_per_second=3.5),
        ],
        updated_at=NOW,
    )

    reconcile(runtime)

    row = connector("a")
    assert (row.state, row.worker_id, row.last_status_at.timestamp()) == ("RUNNING", "w1", NOW)
    tasks = list(
        Task.objects.filter(connector=row).values_list("task_id", "partition", "offset", "lag")
    )
    assert tasks == [(0, 0, 10, 5), (1, 1, 7, None)]
    connector_event = LifecycleEvent.objects.filter(
        subject_type=SubjectType.CONNECTOR, actor="system:reconcile"
    ).first()
    assert (connector_event.from_state, connector_event.to_state) == ("UNASSIGNED", "RUNNING")
    assert connector_event.reason == "reported by worker w1"
    # A new task in its connector's state is covered by the connector's event.
    assert events(subject_type=SubjectType.TASK) == [("a/1", "", "FAILED", "reported by worker w1")]


def test_failure_is_recorded_with_the_error_line_of_the_trace(runtime, started):
    runtime.heartbeat("w1", at=NOW)
    reconcile(runtime)
    started("a")
    reconcile(runtime)
    trace = (
        "Traceback (most recent call last):\n"
        '  File "driver.py", line 1, in <module>\n'
        "pyspark.errors.AnalysisException: topic orders does not exist\n"
    )
    runtime.report("a", State.FAILED, "w1", trace=trace)

    reconcile(runtime)

    row = connector("a")
    assert (row.state, row.trace) == (ConnectorState.FAILED, trace)
    event = LifecycleEvent.objects.filter(
        subject_type=SubjectType.CONNECTOR, actor="system:reconcile"
    ).first()
    assert event.to_state == "FAILED"
    assert event.reason == "pyspark.errors.AnalysisException: topic orders does not exist"


def test_tasks_follow_the_report_and_are_removed_when_gone(runtime, started):
    runtime.heartbeat("w1", at=NOW)
    reconcile(runtime)
    started("a")
    reconcile(runtime)
    runtime.report(
        "a",
        State.RUNNING,
        "w1",
        tasks=[TaskStatus(0, State.RUNNING, "w1"), TaskStatus(1, State.RUNNING, "w1")],
    )
    reconcile(runtime)

    runtime.report(
        "a", State.RUNNING, "w1", tasks=[TaskStatus(0, State.FAILED, "w1")], updated_at=2.0
    )
    reconcile(runtime)

    assert list(Task.objects.values_list("task_id", "state")) == [(0, "FAILED")]
    assert events(subject_id="a/0")[-1][1:3] == ("RUNNING", "FAILED")


def test_a_stopped_connector_without_status_is_stopped_and_its_tasks_too(runtime, started):
    runtime.heartbeat("w1", at=NOW)
    reconcile(runtime)
    started("a")
    reconcile(runtime)
    runtime.report("a", State.RUNNING, "w1", tasks=[TaskStatus(0, State.RUNNING, "w1", offset=5)])
    reconcile(runtime)
    services.stop_channel(Channel.objects.get(name="a"))
    del runtime.statuses["a"]

    reconcile(runtime)

    assert connector("a").state == ConnectorState.STOPPED
    assert list(Task.objects.values_list("state", "worker_id", "offset")) == [("STOPPED", None, 5)]


def test_a_workers_stopped_report_parks_the_tasks_with_their_offsets(runtime, started):
    # The worker says STOPPED without tasks (no driver runs it): they are parked, not gone,
    # so the lag of what was written since can still be shown (console.services.parked_lag).
    runtime.heartbeat("w1", at=NOW)
    reconcile(runtime)
    started("a")
    reconcile(runtime)
    task = TaskStatus(0, State.RUNNING, "w1", topic="t", partition=0, offset=5, rows_per_second=4)
    runtime.report("a", State.RUNNING, "w1", tasks=[task])
    reconcile(runtime)
    services.stop_channel(Channel.objects.get(name="a"))
    runtime.report("a", State.STOPPED, "w1", updated_at=2.0)

    reconcile(runtime)

    assert connector("a").state == ConnectorState.STOPPED
    rows = Task.objects.values_list("state", "worker_id", "offset", "rows_per_second")
    assert list(rows) == [("STOPPED", None, 5, 0.0)]


def test_status_from_an_older_generation_is_ignored(runtime, started):
    runtime.heartbeat("w1", at=NOW)
    reconcile(runtime)
    started("a")
    reconcile(runtime)
    Connector.objects.filter(runtime_id="a").update(generation=2)
    runtime.report("a", State.FAILED, "w1", generation=1, trace="old driver died")

    reconcile(runtime)

    row = connector("a")
    assert (row.state, row.trace) == (ConnectorState.UNASSIGNED, "")
    runtime.report("a", State.RUNNING, "w1", generation=2)
    reconcile(runtime)
    assert connector("a").state == ConnectorState.RUNNING


def test_a_newer_generation_is_adopted(runtime, started):
    runtime.heartbeat("w1", at=NOW)
    reconcile(runtime)
    started("a")
    reconcile(runtime)
    runtime.report("a", State.RUNNING, "w1", generation=3)

    reconcile(runtime)

    assert connector("a").generation == 3


def test_status_reported_by_a_dead_worker_is_not_believed(runtime, started):
    runtime.heartbeat("w1", at=NOW)
    reconcile(runtime)
    started("a")
    reconcile(runtime)
    services.stop_channel(Channel.objects.get(name="a"))
    runtime.report("a", State.RUNNING, "w1")  # last words of w1, which then dies

    reconcile(runtime, now=NOW + 60)

    assert connector("a").state == ConnectorState.STOPPED


def test_a_second_pass_with_nothing_new_changes_nothing(
    runtime, started, django_assert_max_num_queries
):
    runtime.heartbeat("w1", at=NOW)
    runtime.heartbeat("w2", at=NOW - 60)
    reconcile(runtime)
    started("a", "b")
    reconcile(runtime)
    runtime.report(
        "a",
        State.RUNNING,
        "w1",
        tasks=[TaskStatus(0, State.RUNNING, "w1", offset=1)],
        driver_id="w1-shared-1",
        reason="catching up",
    )
    runtime.report("b", State.FAILED, "w1", trace="boom")
    reconcile(runtime)
    before = (
        list(LifecycleEvent.objects.values_list("id", flat=True)),
        list(Connector.objects.values()),
        list(Task.objects.values()),
        list(Worker.objects.values()),
    )
    calls = len(runtime.calls)

    report = reconcile(runtime)

    after = (
        list(LifecycleEvent.objects.values_list("id", flat=True)),
        list(Connector.objects.values()),
        list(Task.objects.values()),
        list(Worker.objects.values()),
    )
    assert after == before
    assert (report.events, report.placements) == (0, 0)
    assert len(runtime.calls) == calls


def test_queries_do_not_grow_with_the_number_of_channels(
    runtime, started, django_assert_max_num_queries
):
    for worker in ("w1", "w2"):
        runtime.heartbeat(worker, at=NOW)
    names = [f"c{i}" for i in range(30)]
    started(*names)
    for name in names:
        runtime.report(name, State.RUNNING, None, tasks=[TaskStatus(0, State.RUNNING, None)])
    runtime.epoch = "filled"  # the store lost nothing (a re-send's queries: test_resend)

    # 10, and the health levels stored: the channels' rows, their tasks' lag, one write;
    # and the count of runs the runtime holds (console.services.resend)
    with django_assert_max_num_queries(14):
        reconcile(runtime)

    assert runtime.status_calls == 1
    assert set(Connector.objects.values_list("state", flat=True)) == {ConnectorState.RUNNING}


def test_dead_letter_counts_are_mirrored_and_shown_in_status(runtime, started, api):
    connectors = started("orders")
    runtime.heartbeat("w1")
    reconcile(runtime)
    worker = Connector.objects.get(pk=connectors["orders"].pk).worker_id
    runtime.report("orders", State.RUNNING, worker, dead_letters=7, sink_retries=3, updated_at=2.0)

    reconcile(runtime)

    assert connector("orders").dead_letters == 7
    assert connector("orders").sink_retries == 3
    assert api.get("/api/v1/channels/orders/status").json()["dead_letters"] == 7


WAITING = (
    "waiting for source topic 'orders' to be created on localhost:9092 (looked every 5 s); "
    "it will be read from its first event"
)


def test_the_driver_and_the_runtimes_reason_are_mirrored(runtime, started):
    runtime.heartbeat("w1", at=NOW)
    started("a")
    reconcile(runtime)
    runtime.report("a", State.RUNNING, "w1", driver_id="w1-shared-1")
    reconcile(runtime)
    assert (connector("a").driver_id, connector("a").status_reason) == ("w1-shared-1", "")

    runtime.report("a", State.UNASSIGNED, "w1", driver_id="w1-shared-1", reason=WAITING)
    reconcile(runtime)

    row = connector("a")
    assert (row.state, row.driver_id, row.status_reason) == ("UNASSIGNED", "w1-shared-1", WAITING)
    # The runtime's reason is the recorded reason of the change, not "reported by worker w1".
    assert events(subject_type=SubjectType.CONNECTOR)[-1] == ("a", "RUNNING", "UNASSIGNED", WAITING)


def test_a_connector_no_driver_runs_shows_neither_driver_nor_reason(runtime, started):
    runtime.heartbeat("w1", at=NOW)
    started("a")
    reconcile(runtime)
    runtime.report("a", State.RUNNING, "w1", driver_id="w1-shared-1", reason="catching up")
    reconcile(runtime)

    reconcile(runtime, now=NOW + 60)  # w1 missed its session timeout

    row = connector("a")
    assert (row.state, row.driver_id, row.status_reason) == ("UNASSIGNED", "", "")


def finished_run(runtime, started, spec) -> None:
    """Channel ``a`` in available-now mode, RUNNING on w1, whose run then finished."""
    spec["runtime"] = {"mode": "available-now"}
    runtime.heartbeat("w1", at=NOW)
    started("a")
    reconcile(runtime)
    runtime.report("a", State.RUNNING, "w1", driver_id="w1-shared-1")
    reconcile(runtime)
    runtime.report(
        "a",
        State.STOPPED,
        "w1",
        driver_id="w1-shared-1",
        reason="available-now run finished: 1200 events read",
        finished=True,
        updated_at=2.0,
    )


def test_a_finished_available_now_run_stops_its_channel(runtime, started, spec):
    finished_run(runtime, started, spec)

    reconcile(runtime)

    channel = Channel.objects.get(name="a")
    assert channel.target_state == TargetState.STOPPED
    row = connector("a")
    assert (row.state, row.finished) == (ConnectorState.STOPPED, True)
    assert row.status_reason == "available-now run finished: 1200 events read"
    assert runtime.targets["a"] == TargetState.STOPPED
    [connector_event] = LifecycleEvent.objects.filter(
        subject_type=SubjectType.CONNECTOR, to_state="STOPPED"
    )
    [channel_event] = LifecycleEvent.objects.filter(
        subject_type=SubjectType.CHANNEL, actor="system:reconcile"
    )
    assert connector_event.reason == "available-now run finished: 1200 events read"
    assert (
        channel_event.subject_id,
        channel_event.from_state,
        channel_event.to_state,
        channel_event.actor,
        channel_event.reason,
    ) == ("a", "RUNNING", "STOPPED", "system:reconcile", connector_event.reason)
    assert channel_event.created_at.timestamp() == NOW

    count, calls = LifecycleEvent.objects.count(), len(runtime.calls)
    report = reconcile(runtime)

    assert (report.events, LifecycleEvent.objects.count(), len(runtime.calls)) == (0, count, calls)


def test_a_finished_runs_reason_outlives_the_later_reports_of_its_stop(runtime, started, spec):
    finished_run(runtime, started, spec)
    reconcile(runtime)
    # Its worker reports the stop again as the driver ends (no reason), then nothing at all.
    runtime.report("a", State.STOPPED, "w1", updated_at=3.0)
    reconcile(runtime)
    row = connector("a")
    assert (row.state, row.finished) == (ConnectorState.STOPPED, True)
    assert row.status_reason == "available-now run finished: 1200 events read"

    del runtime.statuses["a"]
    reconcile(runtime)
    row = connector("a")
    assert (row.driver_id, row.status_reason) == (
        "",
        "available-now run finished: 1200 events read",
    )

    services.start_channel(Channel.objects.get(name="a"))  # a new run: its own reasons
    runtime.report("a", State.RUNNING, "w1", generation=1, updated_at=4.0)
    reconcile(runtime)
    row = connector("a")
    assert (row.state, row.finished, row.status_reason) == (ConnectorState.RUNNING, False, "")


def test_starting_a_finished_run_again_is_a_new_generation(runtime, started, spec):
    finished_run(runtime, started, spec)
    reconcile(runtime)
    channel = Channel.objects.get(name="a")

    services.start_channel(channel)

    row = connector("a")
    assert (row.generation, row.finished) == (1, False)
    assert runtime.calls_named("restart") == [("a",)]
    reason = LifecycleEvent.objects.filter(subject_type=SubjectType.CHANNEL).latest("id").reason
    assert reason == "restarting the finished available-now run again (generation 1)"
    # The report of the finished run (generation 0) is not taken for the new run's.
    runtime.statuses["a"] = ConnectorStatus(
        connector_id="a", state=State.STOPPED, worker_id="w1", finished=True, updated_at=3.0
    )
    reconcile(runtime)
    assert Channel.objects.get(name="a").target_state == TargetState.RUNNING


def test_a_finished_run_of_a_stopped_channel_changes_no_target(runtime, started, spec):
    finished_run(runtime, started, spec)
    services.stop_channel(Channel.objects.get(name="a"))
    before = LifecycleEvent.objects.filter(subject_type=SubjectType.CHANNEL).count()

    reconcile(runtime)

    assert Channel.objects.get(name="a").target_state == TargetState.STOPPED
    assert LifecycleEvent.objects.filter(subject_type=SubjectType.CHANNEL).count() == before


def test_a_finished_run_started_again_during_the_pass_keeps_its_target(
    runtime, started, spec, monkeypatch
):
    finished_run(runtime, started, spec)
    save = reconcile_module._Pass.save

    def start_then_save(self):
        # The user starts the channel again while the pass runs: a new generation.
        Connector.objects.filter(runtime_id="a").update(generation=1)
        save(self)

    monkeypatch.setattr(reconcile_module._Pass, "save", start_then_save)

    reconcile(runtime)

    assert Channel.objects.get(name="a").target_state == TargetState.RUNNING
    assert not LifecycleEvent.objects.filter(
        subject_type=SubjectType.CHANNEL, actor="system:reconcile"
    ).exists()
    assert runtime.calls_named("set_target_state") == []


def test_when_the_runtime_places_the_console_follows_its_owners(runtime, started):
    """``SLUICE_RUNTIME_PLACEMENT=group``: the console names no worker; it records the one
    that claimed each connector (the owner of its slot) and says when one moved."""
    runtime.places = True
    runtime.heartbeat("w1", at=NOW)
    runtime.heartbeat("w2", at=NOW)
    reconcile(runtime)
    started("a", "b")
    assert {call[0].worker_id for call in runtime.calls_named("deploy")} == {None}
    report = reconcile(runtime)
    assert not runtime.calls_named("assign"), "the console decides nothing"
    assert report.placements == 0
    assert {connector(n).state for n in "ab"} == {ConnectorState.UNASSIGNED}

    runtime.assignments.update(a="w1", b="w2")  # as the slots' owners claim them
    runtime.report("a", State.RUNNING, "w1")
    runtime.report("b", State.RUNNING, "w2")
    reconcile(runtime)
    assert dict(Connector.objects.values_list("runtime_id", "worker")) == {"a": "w1", "b": "w2"}
    assert connector("a").state == ConnectorState.RUNNING

    runtime.heartbeat("w2", at=NOW + 20)  # w1 silent past its session: its slots move
    runtime.assignments["a"] = "w2"
    reconcile(runtime, now=NOW + 20)
    moved = connector("a")
    assert (moved.worker_id, moved.state) == ("w2", ConnectorState.UNASSIGNED)
    [last] = events(subject_type=SubjectType.CONNECTOR, subject_id="a", to_state="UNASSIGNED")[-1:]
    assert last[3] == (
        "worker w1 missed its session timeout; taken over by worker w2, the owner of its slot "
        "in the runtime group, from worker w1"
    )
    assert not runtime.calls_named("assign")


def test_when_the_runtime_places_a_drained_worker_leaves_only_with_a_taker(runtime, started):
    runtime.places = True
    runtime.heartbeat("w1", at=NOW)
    reconcile(runtime)
    drain_worker("w1")
    reconcile(runtime)
    assert runtime.draining == set(), "no other worker: its channels stay"

    runtime.heartbeat("w2", at=NOW)
    reconcile(runtime)
    assert runtime.draining == {"w1"}, "it leaves the group: w2 takes its slots"
    undrain_worker("w1")
    reconcile(runtime)
    assert runtime.draining == set()


def test_a_pass_older_than_the_last_writer_writes_nothing(runtime, started):
    """The loop's fencing token: a pass that outlived its lock (token 1) finishes after a newer
    pass (token 2) has written; its results are dropped, not written over the newer ones."""
    runtime.heartbeat("w1", at=NOW)
    started("a")
    newer = reconcile_with_token(runtime, 2)
    assert not newer.stale
    runtime.report("a", State.RUNNING, "w1")
    events_before = LifecycleEvent.objects.count()

    older = reconcile_with_token(runtime, 1)

    assert older.stale
    assert connector("a").state != ConnectorState.RUNNING, "nothing written"
    assert LifecycleEvent.objects.count() == events_before
    assert not reconcile_with_token(runtime, 3).stale
    assert connector("a").state == ConnectorState.RUNNING


def reconcile_with_token(runtime, token: int):
    return services.reconcile(runtime=runtime, now=NOW, token=token)
