"""The runs' part of the control loop (console.services.run_executor) against the in-memory
runtime: a run's states PENDING → RUNNING → SUCCEEDED | FAILED | CANCELLED, its window
resolved to offsets once, its progress from the run connector's positions, its connector
deployed beside the live one (own id, own checkpoint, available-now, bounds) and removed
after the end."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from console import services
from console.choices import WorkerState
from console.models import Channel, ChannelRun, Connector, Worker
from console.services import runs
from console.services.run_executor import execute_runs, run_outcome
from runtime_adapter.base import ConnectorStatus, SourceOffset, TaskStatus
from runtime_adapter.states import State, TargetState

pytestmark = pytest.mark.django_db

NOW = datetime.now(UTC)
START, END = NOW - timedelta(hours=1), NOW - timedelta(minutes=1)


@pytest.fixture
def channel(api, spec) -> Channel:
    created = api.post("/api/v1/channels/", {"name": "orders", "spec": spec}, format="json")
    assert created.status_code == 201, created.content
    Worker.objects.create(worker_id="w1", host="h", pid=1, state=WorkerState.ALIVE)
    return Channel.objects.get(name="orders")


def ms(moment: datetime) -> int:
    return int(moment.timestamp() * 1000)


def status(run: ChannelRun, state: State, offsets: dict[int, int], **kwargs) -> ConnectorStatus:
    tasks = [
        TaskStatus(task_id=p, state=state, worker_id="w1", topic="orders", partition=p, offset=o)
        for p, o in offsets.items()
    ]
    return ConnectorStatus(run.runtime_id, state, "w1", tasks=tasks, **kwargs)


def test_a_window_runs_to_success_with_progress_and_is_removed(channel, runtime, user):
    runtime.windows[(ms(START), ms(END))] = (
        [SourceOffset("orders", 0, 10), SourceOffset("orders", 1, 0)],
        [SourceOffset("orders", 0, 20), SourceOffset("orders", 1, 10)],
    )
    run = runs.start_replay(channel, window_start=START, window_end=END, user=user, confirm=True)
    assert run.state == "PENDING" and run.expected is None

    assert execute_runs() == 1
    run.refresh_from_db()
    assert run.state == "RUNNING" and run.started_at is not None
    assert run.start_offsets == {"orders": {"0": 10, "1": 0}}
    assert run.end_offsets == {"orders": {"0": 20, "1": 10}}
    assert run.expected == 20
    deployment = runtime.deployments[run.runtime_id]
    assert run.runtime_id.endswith(f".run-{run.id.hex}")
    assert deployment.checkpoint == f"{channel.checkpoint_key}.run-{run.id.hex}"
    assert deployment.spec["runtime"]["mode"] == "available-now"
    assert deployment.run == {
        "run_id": str(run.id),
        "kind": "replay",
        "start_offsets": run.start_offsets,
        "end_offsets": run.end_offsets,
    }
    assert runtime.assignments[run.runtime_id] == "w1"
    assert runtime.targets[run.runtime_id] == TargetState.RUNNING

    # Half of partition 0 and all of partition 1 (offsets past the end count to the end).
    runtime.statuses[run.runtime_id] = status(run, State.RUNNING, {0: 15, 1: 99})
    assert execute_runs() == 1
    run.refresh_from_db()
    assert (run.events_read, run.progress) == (15, 0.75)
    assert execute_runs() == 0  # nothing new: nothing written

    sink = {"stage": "sink", "index": None, "type": "kafka", "in": 20, "out": 20, "failed": 0}
    runtime.statuses[run.runtime_id] = status(
        run, State.STOPPED, {0: 20, 1: 10}, finished=True, stages=[sink]
    )
    execute_runs()
    run.refresh_from_db()
    assert run.state == "SUCCEEDED" and run.progress == 1.0
    assert (run.events_read, run.events_written) == (20, 20)
    assert run.finished_at is not None and run.runtime_id  # removed at the next pass
    connector = run.runtime_id
    execute_runs()
    run.refresh_from_db()
    assert run.runtime_id == "" and connector not in runtime.deployments
    assert ("delete", connector) in runtime.calls
    calls = len(runtime.calls)
    execute_runs()
    assert len(runtime.calls) == calls  # a finished, removed run costs nothing


def test_a_window_without_events_succeeds_at_once(channel, runtime, user):
    runtime.windows[(ms(START), ms(END))] = (
        [SourceOffset("orders", 0, 7)],
        [SourceOffset("orders", 0, 7)],
    )
    run = runs.start_replay(channel, window_start=START, window_end=END, user=user, confirm=True)
    execute_runs()
    run.refresh_from_db()
    assert run.state == "SUCCEEDED" and run.expected == 0 and not run.runtime_id
    assert not runtime.deployments or all(".run-" not in c for c in runtime.deployments)


def test_a_failed_run_is_failed_with_its_error_line(channel, runtime, user):
    run = runs.start_replay(
        channel,
        start_offsets=[{"topic": "orders", "partition": 0, "offset": 0}],
        end_offsets=[{"topic": "orders", "partition": 0, "offset": 4}],
        user=user,
        confirm=True,
    )
    execute_runs()
    run.refresh_from_db()
    trace = "org.apache.spark.SparkException: the sink refused\n\tat x.y(Z.java:1)"
    runtime.statuses[run.runtime_id] = status(run, State.FAILED, {0: 2}, trace=trace)
    execute_runs()
    run.refresh_from_db()
    assert run.state == "FAILED" and run.events_read == 2
    assert run.error == "org.apache.spark.SparkException: the sink refused"


def test_a_cancelled_run_is_stopped_then_removed(channel, runtime, user):
    run = runs.start_replay(
        channel,
        start_offsets=[{"topic": "orders", "partition": 0, "offset": 0}],
        end_offsets=[{"topic": "orders", "partition": 0, "offset": 4}],
        user=user,
        confirm=True,
    )
    execute_runs()
    run.refresh_from_db()
    runtime.statuses[run.runtime_id] = status(run, State.RUNNING, {0: 1})
    runs.cancel_run(run, user=user)
    assert runtime.targets[run.runtime_id] == TargetState.STOPPED  # at once
    execute_runs()  # its query is still reported running: stopped, not yet deleted
    assert run.runtime_id in runtime.deployments
    runtime.statuses[run.runtime_id] = status(run, State.STOPPED, {0: 2})
    execute_runs()
    run.refresh_from_db()
    assert run.state == "CANCELLED" and run.runtime_id == ""
    assert not any(".run-" in c for c in runtime.deployments)


def test_a_pending_run_waits_for_a_live_worker_and_a_cancelled_one_never_starts(
    channel, runtime, user
):
    Worker.objects.update(state=WorkerState.DEAD)
    run = runs.start_replay(
        channel,
        start_offsets=[{"topic": "orders", "partition": 0, "offset": 0}],
        end_offsets=[{"topic": "orders", "partition": 0, "offset": 4}],
        user=user,
        confirm=True,
    )
    assert execute_runs() == 0
    run.refresh_from_db()
    assert run.state == "PENDING"
    runs.cancel_run(run, user=user)
    Worker.objects.update(state=WorkerState.ALIVE)
    execute_runs()
    assert not runtime.deployments or all(".run-" not in c for c in runtime.deployments)


def test_a_redrive_whose_letters_fail_again_is_failed_with_the_counts(channel, runtime, user, api):
    Connector.objects.create(channel=channel, runtime_id=channel.name)  # it ran before
    topic = runs.redrive_topic(channel)
    run = runs.start_redrive(
        channel,
        topic=topic,
        start_offsets={0: 3},
        end_offsets={0: 5},
        count=2,
        actor=user,
        dead_letter_ids=["kafka:dlq:0:7", "kafka:dlq:0:8"],
    )
    execute_runs()
    run.refresh_from_db()
    assert run.dead_letter_ids == ["kafka:dlq:0:7", "kafka:dlq:0:8"]
    tasks = [TaskStatus(0, State.STOPPED, "w1", topic=topic, partition=0, offset=5)]
    sink = {"stage": "sink", "index": None, "type": "kafka", "in": 1, "out": 1, "failed": 0}
    runtime.statuses[run.runtime_id] = ConnectorStatus(
        run.runtime_id,
        State.STOPPED,
        "w1",
        tasks=tasks,
        stages=[sink],
        finished=True,
        dead_letters=1,
    )
    execute_runs()
    run.refresh_from_db()
    assert run.state == "FAILED", "a letter that failed again is no success"
    assert (run.events_read, run.events_written, run.events_failed) == (2, 1, 1)
    assert run.error.startswith("1 of 2 redriven events failed again: they are new dead letters")
    # The channel counts the new letter as its dead-letter list shows it: its own and its runs'.
    connector = Connector.objects.get(channel=channel)
    assert (connector.dead_letters, connector.run_dead_letters) == (0, 1)
    answer = api.get(f"/api/v1/channels/{channel.name}/status").json()
    assert answer["dead_letters"] == 1


def test_run_outcome_says_what_went_through():
    assert run_outcome("replay", 300, 0) == ("SUCCEEDED", "")
    state, error = run_outcome("replay", 300, 3)
    assert state == "FAILED" and error.startswith("3 of 300 replayed events failed")
    state, error = run_outcome("redrive", 1, 1)
    assert state == "FAILED" and error.startswith("1 of 1 redriven event failed again")


def test_a_redrive_runs_over_its_topic(channel, runtime, user):
    topic = runs.redrive_topic(channel)
    run = runs.start_redrive(
        channel, topic=topic, start_offsets={0: 3}, end_offsets={0: 5}, count=2, actor=user
    )
    execute_runs()
    run.refresh_from_db()
    deployment = runtime.deployments[run.runtime_id]
    assert deployment.run is not None
    assert deployment.run["kind"] == "redrive"
    assert deployment.run["start_offsets"] == {topic: {"0": 3}}
    assert run.state == "RUNNING" and run.expected == 2


def test_deleting_the_channel_removes_its_running_run_from_the_runtime(channel, runtime, user):
    """The run's row goes with the channel (cascade): its connector and checkpoint must not
    stay behind in the runtime, where nothing would ever remove them."""
    runtime.windows[(ms(START), ms(END))] = (
        [SourceOffset("orders", 0, 0)],
        [SourceOffset("orders", 0, 5)],
    )
    run = runs.start_replay(channel, window_start=START, window_end=END, user=user, confirm=True)
    execute_runs()
    run.refresh_from_db()
    assert run.state == "RUNNING" and run.runtime_id in runtime.deployments

    services.delete_channel(Channel.objects.get(pk=channel.pk), user=user)

    assert ("delete", run.runtime_id) in runtime.calls
    assert run.runtime_id not in runtime.deployments
    assert not ChannelRun.objects.exists()


REPLAY_OFFSETS = {
    "start_offsets": [{"topic": "orders", "partition": 0, "offset": 0}],
    "end_offsets": [{"topic": "orders", "partition": 0, "offset": 4}],
    "confirm": True,
}


@pytest.mark.django_db(transaction=True)  # requests commit as in production: on_commit runs
def test_a_replay_starts_in_its_request_and_reads_show_its_end_at_once(channel, runtime, api):
    """What a user waits for: the run is deployed as its request commits (not at the loop's
    next pass), and reading it reports its query's end as soon as the runtime does."""
    created = api.post("/api/v1/channels/orders/replays/", REPLAY_OFFSETS, format="json")
    assert created.status_code == 201, created.content
    assert created.json()["state"] == "RUNNING"  # no control-loop pass in between
    run = ChannelRun.objects.get()
    assert run.state == "RUNNING" and runtime.assignments[run.runtime_id] == "w1"

    url = f"/api/v1/channels/orders/replays/{run.id}/"
    runtime.statuses[run.runtime_id] = status(run, State.RUNNING, {0: 2})
    assert api.get(url).json()["events_read"] == 2
    runtime.statuses[run.runtime_id] = status(run, State.STOPPED, {0: 4}, finished=True)
    listed = api.get("/api/v1/channels/orders/replays/").json()["results"]
    assert [(r["id"], r["state"]) for r in listed] == [(str(run.id), "SUCCEEDED")]
    assert api.get(url).json()["state"] == "SUCCEEDED"
    execute_runs()  # the loop's pass then removes its connector, as before
    assert run.runtime_id not in runtime.deployments


@pytest.mark.django_db(transaction=True)
def test_a_replay_asked_with_no_live_worker_waits_for_the_loop(channel, runtime, api):
    Worker.objects.update(state=WorkerState.DEAD)
    created = api.post("/api/v1/channels/orders/replays/", REPLAY_OFFSETS, format="json")
    assert created.status_code == 201 and created.json()["state"] == "PENDING"
    Worker.objects.update(state=WorkerState.ALIVE)
    assert execute_runs() == 1
    assert ChannelRun.objects.get().state == "RUNNING"


@pytest.mark.django_db(transaction=True)
def test_reading_a_run_whose_worker_died_moves_nothing(channel, runtime, api):
    """Moving a run off a dead worker is the loop's pass's work, never a read's."""
    created = api.post("/api/v1/channels/orders/replays/", REPLAY_OFFSETS, format="json")
    run = ChannelRun.objects.get(pk=created.json()["id"])
    runtime.statuses[run.runtime_id] = status(run, State.RUNNING, {0: 2})
    Worker.objects.update(state=WorkerState.DEAD)
    Worker.objects.create(worker_id="w2", host="h", pid=2, state=WorkerState.ALIVE)
    assert api.get(f"/api/v1/channels/orders/replays/{run.id}/").json()["events_read"] == 0
    assert runtime.assignments[run.runtime_id] == "w1"
    execute_runs()  # the pass moves it
    assert runtime.assignments[run.runtime_id] == "w2"
