from __future__ import annotations

import json

from runtime_adapter.host.failures import format_trace, summarize_failure
from runtime_adapter.host.progress import TaskTracker
from runtime_adapter.kafka import PartitionInfo
from runtime_adapter.states import State

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
