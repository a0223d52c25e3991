from __future__ import annotations

import json

from runtime_adapter.host.failures import format_trace, summarize_failure
from runtime_adapter.host.progress import RATE_WINDOW_SECONDS, TaskTracker, source_rate
from runtime_adapter.kafka import PartitionInfo
from runtime_adapter.states import State
from tests.support.clock import ManualClock

SPARK_FAILURE = """Query sluice-orders [id = 1] terminated with exception: Job aborted due to \
stage failure: Task 0 in stage 1.0 failed 1 times, most recent failure: Lost task 0.0:
org.apache.spark.SparkRuntimeException: [USER_RAISED_EXCEPTION] Malformed JSON in topic orders \
partition 2 offset 41 SQLSTATE: P0001
\tat org.apache.spark.sql.errors.QueryExecutionErrors$.raiseError(QueryExecutionErrors.scala:1)
Caused by: something deeper"""


def test_summary_prefers_the_user_raised_message():
    assert summarize_failure(SPARK_FAILURE) == (
        "Malformed JSON in topic orders partition 2 offset 41"
    )


def test_summary_falls_back_to_innermost_cause_then_first_line():
    assert summarize_failure("boom\nCaused by: a\nCaused by: b: why") == "b: why"
    assert summarize_failure("just one line\nmore") == "just one line"
    assert summarize_failure("") == "unknown failure"


def test_trace_leads_with_summary_and_is_bounded():
    trace = format_trace("summary", "x" * 50_000)
    assert trace.startswith("summary\n\n")
    assert trace.endswith("(trace truncated)")
    assert len(trace) < 21_000


def progress(batch: int, end: dict, latest: dict) -> dict:
    return {
        "batchId": batch,
        "sources": [{"endOffset": json.dumps(end), "latestOffset": json.dumps(latest)}],
    }


def test_tracker_makes_one_task_per_partition_with_lag():
    tracker = TaskTracker("w1", [PartitionInfo("t", 0), PartitionInfo("t", 1)])
    before = tracker.tasks(State.RUNNING)
    assert [(t.partition, t.offset) for t in before] == [(0, None), (1, None)]
    assert tracker.update(progress(0, {"t": {"0": 10, "1": 4}}, {"t": {"0": 15, "1": 4}}))
    assert not tracker.update(progress(0, {"t": {"0": 10, "1": 4}}, {"t": {"0": 15, "1": 4}}))
    tasks = tracker.tasks(State.RUNNING)
    assert [(t.task_id, t.partition, t.offset, t.end_offset, t.lag) for t in tasks] == [
        (0, 0, 10, 15, 5),
        (1, 1, 4, 4, 0),
    ]
    assert all(t.worker_id == "w1" and t.state is State.RUNNING for t in tasks)


def test_a_partitions_rows_per_second_is_over_the_window_and_falls_to_0():
    clock = ManualClock()
    tracker = TaskTracker("w1", [PartitionInfo("t", 0)], clock=clock)
    first = progress(0, {"t": {"0": 10}}, {"t": {"0": 10}})
    first["sources"][0]["startOffset"] = json.dumps({"t": {"0": 0}})
    tracker.update(first)
    for batch in range(1, 31):  # 10 records a second, one batch a second
        clock.now += 1
        tracker.update(progress(batch, {"t": {"0": 10 + 10 * batch}}, {"t": {"0": 400}}))
    [task] = tracker.tasks(State.RUNNING)
    assert task.rows_per_second == 10.0  # the window's, not one batch's
    clock.now += RATE_WINDOW_SECONDS / 2  # nothing flows: the rate falls as the window passes
    assert tracker.tasks(State.RUNNING)[0].rows_per_second == 5.0
    clock.now += RATE_WINDOW_SECONDS
    assert tracker.tasks(State.RUNNING)[0].rows_per_second == 0.0
    assert tracker.tasks(State.RUNNING)[0].lag == 90


def test_a_steady_rate_is_not_biased_by_the_time_since_the_last_batch():
    clock = ManualClock()
    tracker = TaskTracker("w1", [PartitionInfo("t", 0)], clock=clock)
    for batch in range(20):  # 40 records every 2 s: 20 a second
        tracker.update(progress(batch, {"t": {"0": 40 * (batch + 1)}}, {"t": {"0": 800}}))
        clock.now += 2
    clock.now -= 0.1  # read 1.9 s after the last batch, whose successor has not run yet
    assert tracker.tasks(State.RUNNING)[0].rows_per_second == 20.0


def test_a_partitionless_sources_rows_per_second_is_its_stages_rate():
    tracker = TaskTracker("w1", [])
    tracker.update({"batchId": 0, "sources": [{"endOffset": 40, "latestOffset": 45}]})
    stages = [{"stage": "source", "in_per_second": 20.0}, {"stage": "sink", "in_per_second": 3}]
    # The rate source's offset counts seconds, not rows: never a rate of its own.
    assert tracker.tasks(State.RUNNING, source_rate(stages))[0].rows_per_second == 20.0
    assert tracker.tasks(State.RUNNING, source_rate([]))[0].rows_per_second is None


def test_progress_reports_become_plain_json_data():
    from runtime_adapter.host.progress import progress_dict as _progress_dict

    class Progress(dict):  # like PySpark 4's StreamingQueryProgress: not rebuildable from items
        def __init__(self, batch_id: int):
            super().__init__(batchId=batch_id)

        @property
        def json(self) -> str:
            return json.dumps(dict(self))

    plain = _progress_dict(Progress(7))
    assert type(plain) is dict and plain == {"batchId": 7}
    assert _progress_dict(None) is None
    assert _progress_dict({"batchId": 1}) == {"batchId": 1}


def test_sources_without_partitions_run_as_one_task():
    from runtime_adapter.host.progress import as_offsets as _as_offsets

    assert _as_offsets(5) == {(None, 0): 5}  # the rate source (generator)
    assert _as_offsets('{"logOffset": 3}') == {(None, 0): 3}  # the file source
    assert _as_offsets(None) == {}
    tracker = TaskTracker("w1", [])
    tracker.update({"batchId": 0, "sources": [{"endOffset": 40, "latestOffset": 45}]})
    [task] = tracker.tasks(State.RUNNING)
    assert (task.topic, task.partition, task.offset, task.lag) == (None, 0, 40, 5)
