"""A hosted connector's failure report: its own failures are reported, the loss of its
driver's JVM is not (the worker reports that, with the cause and the JVM's log)."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from runtime_adapter.base import Deployment
from runtime_adapter.config import RuntimeConfig
from runtime_adapter.host.hosted import HostedConnector, reach_of
from runtime_adapter.states import State, TargetState
from runtime_adapter.store import Placement
from tests.support.reports import ReportingStore


def spark(jvm_answers: bool) -> SimpleNamespace:
    def now() -> int:
        if not jvm_answers:
            raise ConnectionRefusedError("py4j: the gateway is gone")
        return 1

    system = SimpleNamespace(currentTimeMillis=now)
    jvm = SimpleNamespace(java=SimpleNamespace(lang=SimpleNamespace(System=system)))
    return SimpleNamespace(sparkContext=SimpleNamespace(_jvm=jvm))


@pytest.mark.parametrize(("jvm_answers", "reported"), [(True, [State.FAILED]), (False, [])])
def test_a_failure_is_reported_unless_the_jvm_is_gone(monkeypatch, jvm_answers, reported):
    store = ReportingStore()
    hosted = HostedConnector(
        store,  # type: ignore[arg-type]
        RuntimeConfig.from_env(),
        connector_id="c1",
        worker_id="w1",
        generation=0,
        placement=Placement(0, 1, 1.0),
        spark=spark(jvm_answers),
    )

    def step(deployment: Deployment) -> None:
        raise RuntimeError("An error occurred while calling o1522.isActive")

    monkeypatch.setattr(hosted, "step", step)
    hosted.deployment = Deployment("c1", "c1", 1, {}, TargetState.RUNNING, worker_id="w1")
    hosted.run()
    assert [status.state for status in store.reported] == reported
    assert hosted.done.is_set()


OOM = (
    "Job aborted due to stage failure: Task 0 in stage 111.0 failed 1 times, most recent "
    "failure: Lost task 0.0 in stage 111.0 (TID 184) (localhost executor driver): "
    "java.lang.OutOfMemoryError: Java heap space"
)


@pytest.mark.parametrize(
    ("error", "jvm_goes_after", "reported"),
    [
        # Spark fails the task, then exits the JVM: the worker reports it, naming the culprit.
        (OOM, 2, []),
        # The JVM stayed up after all: the connector's failure is its own to report.
        (OOM, None, [State.FAILED]),
        # Spark's own out-of-memory error is an ordinary failure: the JVM lives on.
        (
            "org.apache.spark.memory.SparkOutOfMemoryError: Unable to acquire 64 bytes",
            2,
            [State.FAILED],
        ),
    ],
)
def test_a_query_failure_fatal_to_the_jvm_is_left_to_the_worker(
    monkeypatch, error, jvm_goes_after, reported
):
    import runtime_adapter.host.hosted as hosted_module

    monkeypatch.setattr(hosted_module, "JVM_EXIT_WAIT", 3.0)
    monkeypatch.setattr(hosted_module.time, "sleep", lambda _s: None)
    store = ReportingStore()
    calls = {"n": 0}

    def now() -> int:
        calls["n"] += 1
        if jvm_goes_after is not None and calls["n"] > jvm_goes_after:
            raise ConnectionRefusedError("py4j: the gateway is gone")
        return 1

    jvm = SimpleNamespace(
        java=SimpleNamespace(lang=SimpleNamespace(System=SimpleNamespace(currentTimeMillis=now)))
    )
    hosted = HostedConnector(
        store,  # type: ignore[arg-type]
        RuntimeConfig.from_env(),
        connector_id="c1",
        worker_id="w1",
        generation=0,
        placement=Placement(0, 1, 1.0),
        spark=SimpleNamespace(sparkContext=SimpleNamespace(_jvm=jvm)),
    )
    hosted.prepared = True
    hosted.query = SimpleNamespace(isActive=False, exception=lambda: error)
    deployment = Deployment("c1", "c1", 1, {}, TargetState.RUNNING, worker_id="w1")
    assert hosted.step(deployment) == 1
    assert [status.state for status in store.reported] == reported


# -- the team's reach (issue 33): checked again in the driver ---------------------------------


def kafka_deployment(read: str, policy: dict | None) -> Deployment:
    kafka = {"bootstrap_servers": "localhost:9092"}
    spec = {
        "source": {"type": "kafka", "config": {**kafka, "topics": [read]}},
        "sink": {"type": "kafka", "config": {**kafka, "topic": "b.out"}},
    }
    return Deployment(
        "c1", "c1", 1, spec, TargetState.RUNNING, worker_id="w1", team="b", policy=policy
    )


def hosted_for(store: ReportingStore) -> HostedConnector:
    return HostedConnector(
        store,  # type: ignore[arg-type]
        RuntimeConfig.from_env(),
        connector_id="c1",
        worker_id="w1",
        generation=0,
        placement=Placement(0, 1, 1.0),
        spark=spark(True),
    )


def test_a_spec_outside_its_teams_reach_fails_in_the_driver(monkeypatch):
    """Saved before the policy tightened, or written into the config topic by hand: the
    driver refuses it before it touches a broker, FAILED with the reason in the trace."""
    store = ReportingStore()
    hosted = hosted_for(store)
    touched: list[str] = []
    monkeypatch.setattr(hosted, "watch_source", lambda *args: touched.append("brokers"))
    hosted.deployment = kafka_deployment("a.payments", {"reach": {"topic_prefixes": ["b."]}})

    hosted.run()

    assert [status.state for status in store.reported] == [State.FAILED]
    trace = store.reported[0].trace
    assert "source.config.topics" in trace
    assert "topic 'a.payments' is outside the team's reach: team b may reach only topics" in trace
    assert touched == []


def test_a_spec_within_its_teams_reach_passes_the_drivers_check(monkeypatch):
    import runtime_adapter.host.hosted as hosted_module

    store = ReportingStore()
    hosted = hosted_for(store)
    monkeypatch.setattr(hosted, "watch_source", lambda *args: None)
    monkeypatch.setattr(hosted_module, "check_reachable", lambda *args, **kwargs: None)
    for policy in ({"reach": {"topic_prefixes": ["b."]}}, None, {"drivers": {"cores": 1}}):
        hosted.prepared = False
        deployment = kafka_deployment("b.payments", policy)
        with reach_of(deployment):  # as the connector's thread runs each turn
            hosted.prepare(deployment)
        assert hosted.prepared
    with reach_of(kafka_deployment("b.x", {"reach": {"topic_prefixes": ["b."]}})):
        from pipelines.spec.reach import current

        scope = current()
        assert scope is not None and scope.team == "b"


def test_an_invalid_policy_reach_fails_the_connector(monkeypatch):
    store = ReportingStore()
    hosted = hosted_for(store)
    hosted.deployment = kafka_deployment("b.x", {"reach": {"topic_prefixes": "b."}})

    hosted.run()

    assert [status.state for status in store.reported] == [State.FAILED]
    assert "team b's reach (its policy) is invalid" in store.reported[0].trace
