"""The restart policy: automatic restarts of FAILED connectors by the control loop."""

from __future__ import annotations

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from console import services
from console.choices import ConnectorState, RestartPolicyType, SubjectType
from console.models import Channel, Connector, LifecycleEvent
from console.selectors.restart_policy import RestartPolicy
from runtime_adapter.states import State

pytestmark = pytest.mark.django_db

NOW = 1_700_000_000.0
TRACE = (
    "Traceback (most recent call last):\n"
    '  File "driver.py", line 1, in <module>\n'
    "pyspark.errors.AnalysisException: topic orders does not exist\n"
)
ERROR_LINE = "pyspark.errors.AnalysisException: topic orders does not exist"


def reconcile(runtime, at):
    return services.reconcile(runtime=runtime, now=at)


@pytest.fixture
def failing(runtime, spec):
    """Channels started on w1 whose connectors report FAILED at NOW (recorded by a pass)."""

    def make(*names: str, **policy) -> None:
        runtime.heartbeat("w1", at=NOW)
        for name in names:
            channel = services.create_channel(name=name, spec=spec, restart_policy=policy)
            services.start_channel(channel)
        reconcile(runtime, NOW)  # placed on w1
        for name in names:
            runtime.report(name, State.FAILED, "w1", trace=TRACE)
        reconcile(runtime, NOW)  # FAILED seen at NOW: the backoff counts from here

    return make


def connector(name="a") -> Connector:
    return Connector.objects.get(runtime_id=name)


def fail_again(runtime, at, name="a"):
    """The restarted driver fails too."""
    runtime.heartbeat("w1", at=at)
    runtime.report(name, State.FAILED, "w1", trace=TRACE, generation=runtime.generations[name])
    reconcile(runtime, at)


def policy_events(name="a") -> list[tuple[str, str, str]]:
    rows = LifecycleEvent.objects.filter(
        subject_type=SubjectType.CONNECTOR, subject_id=name, actor="system:reconcile"
    ).order_by("id")
    return [
        (e.from_state, e.to_state, e.reason)
        for e in rows
        if "restart" in e.reason or "exhausted" in e.reason
    ]


def test_the_backoff_doubles_and_stops_at_its_cap():
    policy = RestartPolicy(backoff_initial_seconds=1, backoff_max_seconds=60)

    assert [policy.delay(n) for n in range(1, 9)] == [1, 2, 4, 8, 16, 32, 60, 60]
    assert policy.delay(10_000) == 60  # no overflow


def test_a_failed_connector_is_restarted_once_the_backoff_has_passed(runtime, failing):
    failing("a")
    assert connector().state == ConnectorState.FAILED

    reconcile(runtime, NOW + 0.5)  # the first wait is 1 s
    assert runtime.calls_named("restart") == []

    report = reconcile(runtime, NOW + 1)

    assert report.restarts == 1
    assert runtime.calls_named("restart") == [("a",)]
    row = connector()
    assert (row.state, row.generation, row.restart_attempts) == (
        ConnectorState.RESTARTING,
        1,
        1,
    )
    event = LifecycleEvent.objects.filter(subject_type=SubjectType.CONNECTOR).first()
    assert (event.from_state, event.to_state, event.actor) == (
        "FAILED",
        "RESTARTING",
        "system:reconcile",
    )
    assert event.reason == f"automatic restart 1/5 after failure: {ERROR_LINE}"
    assert event.channel.name == "a"


def test_each_further_attempt_waits_twice_as_long_from_its_failure(runtime, failing):
    failing("a")
    reconcile(runtime, NOW + 1)  # restart 1
    fail_again(runtime, NOW + 10)  # FAILED again, seen at NOW + 10

    reconcile(runtime, NOW + 11.5)
    assert len(runtime.calls_named("restart")) == 1  # attempt 2 waits 2 s

    reconcile(runtime, NOW + 12)

    assert len(runtime.calls_named("restart")) == 2
    assert connector().restart_attempts == 2
    assert policy_events()[-1] == (
        "FAILED",
        "RESTARTING",
        f"automatic restart 2/5 after failure: {ERROR_LINE}",
    )


def test_an_exhausted_policy_is_recorded_once_and_restarts_no_more(runtime, failing):
    failing("a", max_attempts=2)
    reconcile(runtime, NOW + 1)  # restart 1
    fail_again(runtime, NOW + 10)
    reconcile(runtime, NOW + 12)  # restart 2
    fail_again(runtime, NOW + 20)  # attempts used up

    for at in (NOW + 100, NOW + 1000, NOW + 10_000):
        runtime.heartbeat("w1", at=at)
        reconcile(runtime, at)

    assert len(runtime.calls_named("restart")) == 2
    assert connector().state == ConnectorState.FAILED
    assert policy_events() == [
        ("FAILED", "RESTARTING", f"automatic restart 1/2 after failure: {ERROR_LINE}"),
        ("FAILED", "RESTARTING", f"automatic restart 2/2 after failure: {ERROR_LINE}"),
        (
            "FAILED",
            "FAILED",
            f"restart policy exhausted after 2 attempts; last failure: {ERROR_LINE}",
        ),
    ]


def test_raising_max_attempts_lets_an_exhausted_connector_be_restarted(runtime, failing):
    failing("a", max_attempts=1)
    reconcile(runtime, NOW + 1)
    fail_again(runtime, NOW + 10)
    assert "exhausted" in policy_events()[-1][2]

    services.update_channel(Channel.objects.get(name="a"), restart_policy={"max_attempts": 3})
    reconcile(runtime, NOW + 12)

    assert len(runtime.calls_named("restart")) == 2
    assert policy_events()[-1][2] == f"automatic restart 2/3 after failure: {ERROR_LINE}"


def test_policy_never_leaves_a_failed_connector_failed(runtime, failing):
    failing("a", type=RestartPolicyType.NEVER)
    runtime.heartbeat("w1", at=NOW + 3600)

    reconcile(runtime, NOW + 3600)

    assert runtime.calls_named("restart") == []
    assert connector().state == ConnectorState.FAILED
    assert policy_events() == []


def test_a_stopped_channel_is_not_restarted(runtime, failing):
    failing("a")
    services.stop_channel(Channel.objects.get(name="a"))
    runtime.heartbeat("w1", at=NOW + 3600)

    reconcile(runtime, NOW + 3600)

    assert runtime.calls_named("restart") == []


def test_a_paused_channel_is_restarted_and_stays_paused(runtime, failing):
    failing("a")
    services.pause_channel(Channel.objects.get(name="a"))

    reconcile(runtime, NOW + 1)

    assert runtime.calls_named("restart") == [("a",)]
    assert Channel.objects.get(name="a").target_state == "PAUSED"


def test_the_count_resets_after_running_long_enough(runtime, failing, settings):
    settings.SLUICE_RESTART_RESET_SECONDS = 600
    failing("a")
    reconcile(runtime, NOW + 1)  # restart 1
    runtime.report("a", State.RUNNING, "w1", generation=1)
    runtime.heartbeat("w1", at=NOW + 5)
    reconcile(runtime, NOW + 5)  # RUNNING since NOW + 5
    assert connector().restart_attempts == 1

    runtime.heartbeat("w1", at=NOW + 604)
    reconcile(runtime, NOW + 604)
    assert connector().restart_attempts == 1  # not yet

    runtime.heartbeat("w1", at=NOW + 605)
    reconcile(runtime, NOW + 605)

    assert connector().restart_attempts == 0
    assert policy_events()[-1] == (
        "RUNNING",
        "RUNNING",
        "restart attempts reset after 600 s RUNNING (was 1)",
    )
    runtime.heartbeat("w1", at=NOW + 700)
    reconcile(runtime, NOW + 700)
    assert len(policy_events()) == 2  # recorded once


def test_a_user_restart_resets_the_count(runtime, failing):
    failing("a")
    reconcile(runtime, NOW + 1)
    fail_again(runtime, NOW + 10)

    services.restart_channel(Channel.objects.get(name="a"))

    assert connector().restart_attempts == 0


def test_a_user_start_of_a_failed_channel_resets_the_count(runtime, failing):
    failing("a")
    reconcile(runtime, NOW + 1)
    fail_again(runtime, NOW + 10)
    assert connector().restart_attempts == 1

    services.start_channel(Channel.objects.get(name="a"))

    assert connector().restart_attempts == 0


def test_a_second_pass_after_a_restart_changes_nothing(runtime, failing):
    failing("a")
    reconcile(runtime, NOW + 1)
    events = LifecycleEvent.objects.count()

    report = reconcile(runtime, NOW + 2)

    assert (report.events, report.restarts) == (0, 0)
    assert LifecycleEvent.objects.count() == events
    assert len(runtime.calls_named("restart")) == 1


def _restart_pass_queries(runtime, failing, count: int, prefix: str) -> int:
    names = [f"{prefix}{i}" for i in range(count)]
    failing(*names)
    runtime.heartbeat("w1", at=NOW + 1)
    with CaptureQueriesContext(connection) as queries:
        report = reconcile(runtime, NOW + 1)
    assert report.restarts == count
    return len(queries)


def test_restarting_many_connectors_costs_the_same_queries_as_a_few(
    runtime, failing, django_assert_max_num_queries
):
    few = _restart_pass_queries(runtime, failing, 2, "few")
    Connector.objects.update(state=ConnectorState.RUNNING)
    Channel.objects.update(target_state="STOPPED")

    many = _restart_pass_queries(runtime, failing, 25, "many")

    assert many == few
    assert many <= 15  # 12, and the health levels stored (channel_health.refresh: 3)
