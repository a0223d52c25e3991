"""Lifecycle over the API: pause, resume, create with a target, KIP-745 restart, drift and
the restart policy as a channel field."""

from __future__ import annotations

import pytest

from console.choices import ConnectorState, SubjectType, TargetState
from console.models import Channel, Connector, LifecycleEvent, Revision, Task, Worker
from runtime_adapter.states import TargetState as RuntimeTargetState

pytestmark = pytest.mark.django_db

CHANNELS = "/api/v1/channels/"


def create(api, spec, name="orders", **extra):
    return api.post(CHANNELS, {"name": name, "spec": spec, **extra}, format="json")


def running(api, spec, runtime, name="orders", tasks=(ConnectorState.RUNNING,)) -> Connector:
    """A started channel whose connector runs on w1 with the given task states."""
    create(api, spec, name=name)
    assert api.post(f"{CHANNELS}{name}/start").status_code == 202
    Worker.objects.get_or_create(worker_id="w1", defaults={"state": "ALIVE"})
    Connector.objects.filter(runtime_id=name).update(worker="w1", state=ConnectorState.RUNNING)
    connector = Connector.objects.get(runtime_id=name)
    for task_id, state in enumerate(tasks):
        Task.objects.create(connector=connector, task_id=task_id, state=state, worker_id="w1")
    runtime.calls.clear()
    return connector


def channel_events(name="orders") -> list[tuple[str, str, str, str, str]]:
    rows = LifecycleEvent.objects.filter(channel__name=name).order_by("id")
    return [(e.subject_type, e.from_state, e.to_state, e.actor, e.reason) for e in rows]


# -- pause and resume --------------------------------------------------------------------------


def test_pause_returns_202_and_keeps_the_driver(api, spec, runtime):
    running(api, spec, runtime)

    response = api.post(f"{CHANNELS}orders/pause")

    assert response.status_code == 202
    assert response.json() == {"name": "orders", "target_state": "PAUSED"}
    assert runtime.calls == [("set_target_state", "orders", RuntimeTargetState.PAUSED)]
    assert Channel.objects.get().target_state == TargetState.PAUSED
    assert channel_events()[-1] == (
        SubjectType.CHANNEL,
        "RUNNING",
        "PAUSED",
        "user:alice",
        "pause requested",
    )


def test_pausing_twice_records_one_change(api, spec, runtime):
    running(api, spec, runtime)

    api.post(f"{CHANNELS}orders/pause")
    second = api.post(f"{CHANNELS}orders/pause")

    assert second.status_code == 202
    assert LifecycleEvent.objects.filter(to_state="PAUSED").count() == 1


def test_resume_returns_202_and_keeps_the_deployed_revision(api, spec, runtime):
    running(api, spec, runtime)
    api.post(f"{CHANNELS}orders/pause")
    spec["sink"]["config"]["topic"] = "other"
    api.patch(f"{CHANNELS}orders/", {"spec": spec}, format="json")

    response = api.post(f"{CHANNELS}orders/resume")

    assert response.status_code == 202
    assert response.json() == {"name": "orders", "target_state": "RUNNING"}
    assert runtime.calls_named("set_target_state")[-1] == ("orders", RuntimeTargetState.RUNNING)
    assert runtime.calls_named("deploy") == []  # resume is not a redeploy
    assert Channel.objects.get().target_state == TargetState.RUNNING
    status = api.get(f"{CHANNELS}orders/status").json()
    assert (status["revision"], status["latest_revision"], status["drift"]) == (1, 2, True)
    assert channel_events()[-1][1:] == ("PAUSED", "RUNNING", "user:alice", "resume requested")


def test_resume_of_a_running_channel_changes_nothing(api, spec, runtime):
    running(api, spec, runtime)

    assert api.post(f"{CHANNELS}orders/resume").status_code == 202
    assert LifecycleEvent.objects.filter(reason="resume requested").count() == 0


@pytest.mark.parametrize("action", ["pause", "resume"])
def test_pause_and_resume_of_a_stopped_channel_are_409_with_the_reason(api, spec, runtime, action):
    create(api, spec)
    before = LifecycleEvent.objects.count()

    response = api.post(f"{CHANNELS}orders/{action}")

    assert response.status_code == 409
    detail = response.json()["detail"]
    assert "'orders' is STOPPED" in detail
    assert "start it" in detail
    assert Channel.objects.get().target_state == TargetState.STOPPED
    assert runtime.calls == []
    assert LifecycleEvent.objects.count() == before


def test_pause_after_stop_is_409(api, spec, runtime):
    running(api, spec, runtime)
    api.post(f"{CHANNELS}orders/stop")

    assert api.post(f"{CHANNELS}orders/pause").status_code == 409


def test_pause_and_resume_of_a_missing_channel_are_404(api):
    assert api.post(f"{CHANNELS}missing/pause").status_code == 404
    assert api.post(f"{CHANNELS}missing/resume").status_code == 404


def test_pause_when_the_runtime_is_down_is_503_and_changes_nothing(api, spec, runtime):
    running(api, spec, runtime)
    runtime.unavailable = ConnectionError("redis is down")

    assert api.post(f"{CHANNELS}orders/pause").status_code == 503
    assert Channel.objects.get().target_state == TargetState.RUNNING


def test_start_of_a_paused_channel_deploys_the_latest_revision(api, spec, runtime):
    running(api, spec, runtime)
    api.post(f"{CHANNELS}orders/pause")

    assert api.post(f"{CHANNELS}orders/start").status_code == 202

    (deployment,) = runtime.calls_named("deploy")
    assert deployment[0].target_state == RuntimeTargetState.RUNNING
    assert Channel.objects.get().target_state == TargetState.RUNNING


def test_lifecycle_actions_need_authentication(anon, api, spec):
    create(api, spec)
    for action in ("pause", "resume", "restart"):
        assert anon.post(f"{CHANNELS}orders/{action}").status_code == 401


# -- create with a target state ----------------------------------------------------------------


def test_create_without_a_target_is_stopped_and_not_deployed(api, spec, runtime):
    response = create(api, spec)

    assert response.status_code == 201
    assert response.json()["target_state"] == "STOPPED"
    assert runtime.calls_named("deploy") == []
    assert not Connector.objects.exists()


@pytest.mark.parametrize("target", ["RUNNING", "PAUSED"])
def test_create_with_a_target_deploys_revision_one(api, spec, runtime, target):
    response = create(api, spec, target_state=target)

    assert response.status_code == 201, response.json()
    body = response.json()
    assert (body["target_state"], body["deployed_revision"], body["drift"]) == (target, 1, False)
    (deployment,) = runtime.calls_named("deploy")
    assert deployment[0].target_state == RuntimeTargetState(target)
    assert deployment[0].revision == 1
    assert Connector.objects.get().state == ConnectorState.UNASSIGNED
    assert channel_events() == [
        (SubjectType.CHANNEL, "", target, "user:alice", "created with revision 1")
    ]


def test_create_stopped_explicitly(api, spec, runtime):
    response = create(api, spec, target_state="STOPPED")

    assert response.status_code == 201
    assert runtime.calls == []


def test_create_with_an_unknown_target_is_400(api, spec):
    response = create(api, spec, target_state="SLEEPING")

    assert response.status_code == 400
    assert "target_state" in response.json()
    assert not Channel.objects.exists()


def test_create_running_when_the_runtime_is_down_saves_nothing(api, spec, runtime):
    runtime.unavailable = ConnectionError("redis is down")

    response = create(api, spec, target_state="RUNNING")

    assert response.status_code == 503
    assert not Channel.objects.exists()
    assert not Revision.objects.exists()
    assert not LifecycleEvent.objects.exists()


def test_update_may_repeat_the_target_but_not_change_it(api, spec, runtime):
    create(api, spec)
    url = f"{CHANNELS}orders/"

    same = api.patch(url, {"target_state": "STOPPED", "description": "x"}, format="json")
    other = api.patch(url, {"target_state": "RUNNING"}, format="json")

    assert same.status_code == 200
    assert other.status_code == 400
    assert "start, stop, pause or resume" in other.json()["target_state"][0]
    assert Channel.objects.get().target_state == TargetState.STOPPED


# -- restart (KIP-745) -------------------------------------------------------------------------


def restart(api, query=""):
    return api.post(f"{CHANNELS}orders/restart{query}")


def test_restart_by_default_replaces_the_driver_and_lists_what_restarts(api, spec, runtime):
    running(api, spec, runtime, tasks=[ConnectorState.RUNNING, ConnectorState.RUNNING])

    response = restart(api)

    assert response.status_code == 202
    assert response.json() == {
        "name": "orders",
        "connector": {"state": "RESTARTING", "worker_id": "w1"},
        "tasks": [
            {"id": 0, "state": "RESTARTING", "worker_id": "w1"},
            {"id": 1, "state": "RESTARTING", "worker_id": "w1"},
        ],
    }
    assert runtime.calls_named("restart") == [("orders",)]
    connector = Connector.objects.get()
    assert (connector.state, connector.generation) == (ConnectorState.RESTARTING, 1)
    assert set(Task.objects.values_list("state", flat=True)) == {ConnectorState.RESTARTING}
    subject, before, after, actor, reason = channel_events()[-1]
    assert (subject, before, after, actor) == (
        SubjectType.CONNECTOR,
        "RUNNING",
        "RESTARTING",
        "user:alice",
    )
    assert reason == (
        "restart requested (include_tasks=false, only_failed=false): the connector asked for; "
        "restarting the driver and its 2 task(s) (generation 1)"
    )
    status = api.get(f"{CHANNELS}orders/status").json()
    assert (status["state"], status["generation"]) == ("RESTARTING", 1)


def test_restart_only_failed_with_nothing_failed_restarts_nothing(api, spec, runtime):
    running(api, spec, runtime, tasks=[ConnectorState.RUNNING])

    response = restart(api, "?include_tasks=true&only_failed=true")

    assert response.status_code == 202
    assert response.json() == {
        "name": "orders",
        "connector": {"state": "RUNNING", "worker_id": "w1"},
        "tasks": [{"id": 0, "state": "RUNNING", "worker_id": "w1"}],
    }
    assert runtime.calls_named("restart") == []
    assert Connector.objects.get().state == ConnectorState.RUNNING
    assert channel_events()[-1][1:] == (
        "RUNNING",
        "RUNNING",
        "user:alice",
        "restart requested (include_tasks=true, only_failed=true): nothing FAILED, "
        "nothing restarted",
    )


def test_a_failed_task_restarts_the_driver_only_when_tasks_are_included(api, spec, runtime):
    running(api, spec, runtime, tasks=[ConnectorState.RUNNING, ConnectorState.FAILED])

    connector_only = restart(api, "?only_failed=true")
    assert connector_only.json()["connector"]["state"] == "RUNNING"
    assert runtime.calls_named("restart") == []

    with_tasks = restart(api, "?include_tasks=true&only_failed=true")

    assert with_tasks.status_code == 202
    body = with_tasks.json()
    assert body["connector"]["state"] == "RESTARTING"
    # Both tasks live in the one driver: both restart.
    assert [t["state"] for t in body["tasks"]] == ["RESTARTING", "RESTARTING"]
    assert runtime.calls_named("restart") == [("orders",)]
    assert "task(s) 1 FAILED" in channel_events()[-1][4]


def test_only_failed_restarts_a_failed_connector(api, spec, runtime):
    running(api, spec, runtime, tasks=[ConnectorState.FAILED])
    Connector.objects.update(state=ConnectorState.FAILED, restart_attempts=3)

    response = restart(api, "?only_failed=true")

    assert response.json()["connector"]["state"] == "RESTARTING"
    connector = Connector.objects.get()
    assert connector.restart_attempts == 0  # the user took over: the policy starts afresh
    assert "the connector is FAILED" in channel_events()[-1][4]


def test_restart_of_a_paused_channel_keeps_it_paused(api, spec, runtime):
    running(api, spec, runtime)
    api.post(f"{CHANNELS}orders/pause")

    assert restart(api).status_code == 202
    assert Channel.objects.get().target_state == TargetState.PAUSED


def test_restart_of_a_stopped_or_never_started_channel_is_409(api, spec, runtime):
    create(api, spec)
    never = restart(api)
    assert never.status_code == 409
    assert "never started" in never.json()["detail"]

    api.post(f"{CHANNELS}orders/start")
    api.post(f"{CHANNELS}orders/stop")
    stopped = restart(api)

    assert stopped.status_code == 409
    assert "STOPPED" in stopped.json()["detail"]
    assert runtime.calls_named("restart") == []


def test_restart_rejects_a_bad_flag(api, spec, runtime):
    running(api, spec, runtime)

    response = restart(api, "?include_tasks=maybe")

    assert response.status_code == 400
    assert "include_tasks" in response.json()
    assert runtime.calls_named("restart") == []


def test_restart_of_a_missing_channel_is_404(api):
    assert api.post(f"{CHANNELS}missing/restart").status_code == 404


def test_restart_when_the_runtime_is_down_is_503_and_changes_nothing(api, spec, runtime):
    running(api, spec, runtime)
    runtime.unavailable = ConnectionError("redis is down")

    assert restart(api).status_code == 503
    connector = Connector.objects.get()
    assert (connector.state, connector.generation) == (ConnectorState.RUNNING, 0)
    assert not LifecycleEvent.objects.filter(subject_type=SubjectType.CONNECTOR).exists()


# -- drift -------------------------------------------------------------------------------------


def test_status_and_channel_show_drift_until_the_latest_revision_is_deployed(api, spec, runtime):
    running(api, spec, runtime)
    spec["sink"]["config"]["topic"] = "other"
    api.patch(f"{CHANNELS}orders/", {"spec": spec}, format="json")

    status = api.get(f"{CHANNELS}orders/status").json()
    detail = api.get(f"{CHANNELS}orders/").json()
    listing = api.get(CHANNELS).json()["results"][0]

    assert (status["revision"], status["latest_revision"], status["drift"]) == (1, 2, True)
    assert (detail["deployed_revision"], detail["revision"], detail["drift"]) == (1, 2, True)
    assert listing["drift"] is True

    api.post(f"{CHANNELS}orders/start")  # redeploy

    status = api.get(f"{CHANNELS}orders/status").json()
    assert (status["revision"], status["latest_revision"], status["drift"]) == (2, 2, False)
    assert api.get(f"{CHANNELS}orders/").json()["drift"] is False


def test_a_never_started_channel_has_no_drift(api, spec):
    create(api, spec)

    status = api.get(f"{CHANNELS}orders/status").json()

    assert (status["revision"], status["latest_revision"], status["drift"]) == (None, 1, False)
    assert status["restart_attempts"] is None
    assert api.get(f"{CHANNELS}orders/").json()["drift"] is False


# -- the restart policy as a channel field -----------------------------------------------------

DEFAULT_POLICY = {
    "type": "on-failure",
    "max_attempts": 5,
    "backoff_initial_seconds": 1.0,
    "backoff_max_seconds": 60.0,
}


def test_a_channel_has_the_default_restart_policy(api, spec):
    assert create(api, spec).json()["restart_policy"] == DEFAULT_POLICY


def test_create_with_a_restart_policy_fills_in_the_rest(api, spec):
    response = create(api, spec, restart_policy={"max_attempts": 3, "backoff_max_seconds": 10})

    assert response.status_code == 201, response.json()
    assert response.json()["restart_policy"] == {
        **DEFAULT_POLICY,
        "max_attempts": 3,
        "backoff_max_seconds": 10.0,
    }
    assert Channel.objects.get().restart_max_attempts == 3


def test_patch_changes_only_the_given_policy_keys_and_records_it(api, spec):
    create(api, spec, restart_policy={"max_attempts": 3})

    response = api.patch(f"{CHANNELS}orders/", {"restart_policy": {"type": "never"}}, format="json")

    assert response.status_code == 200, response.json()
    assert response.json()["restart_policy"] == {
        **DEFAULT_POLICY,
        "type": "never",
        "max_attempts": 3,
    }
    assert Revision.objects.count() == 1
    assert channel_events()[-1][4] == "restart policy changed to never"


def test_put_without_a_policy_keeps_it(api, spec):
    create(api, spec, restart_policy={"type": "never"})

    response = api.put(f"{CHANNELS}orders/", {"name": "orders", "spec": spec}, format="json")

    assert response.json()["restart_policy"]["type"] == "never"


def test_an_unchanged_policy_records_nothing(api, spec):
    create(api, spec)

    api.patch(f"{CHANNELS}orders/", {"restart_policy": DEFAULT_POLICY}, format="json")

    assert LifecycleEvent.objects.count() == 1  # created


@pytest.mark.parametrize(
    ("policy", "path"),
    [
        ({"type": "always"}, "restart_policy.type"),
        ({"max_attempts": 0}, "restart_policy.max_attempts"),
        ({"backoff_initial_seconds": 0}, "restart_policy.backoff_initial_seconds"),
        (
            {"backoff_initial_seconds": 30, "backoff_max_seconds": 10},
            "restart_policy.backoff_max_seconds",
        ),
    ],
)
def test_a_bad_policy_is_refused_with_its_field_path(api, spec, policy, path):
    response = create(api, spec, restart_policy=policy)

    assert response.status_code == 400
    assert path in response.json(), response.json()
    assert not Channel.objects.exists()


def test_a_patch_is_checked_against_the_stored_policy(api, spec):
    create(api, spec, restart_policy={"backoff_initial_seconds": 30})

    response = api.patch(
        f"{CHANNELS}orders/", {"restart_policy": {"backoff_max_seconds": 10}}, format="json"
    )

    assert response.status_code == 400
    assert "restart_policy.backoff_max_seconds" in response.json()
    assert Channel.objects.get().restart_backoff_max_seconds == 60.0


def test_spec_and_policy_errors_are_reported_together(api, spec):
    spec["source"]["config"].pop("topics")

    response = create(api, spec, restart_policy={"max_attempts": -1})

    assert {"spec.source.config.topics", "restart_policy.max_attempts"} <= response.json().keys()
