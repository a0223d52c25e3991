from __future__ import annotations

import pytest

from console.choices import ConnectorState, SubjectType, TargetState
from console.models import Channel, Connector, LifecycleEvent, Revision, Task, Worker
from runtime_adapter.states import TargetState as RuntimeTargetState

pytestmark = pytest.mark.django_db

CHANNELS = "/api/v1/channels/"


def create(api, spec, name="orders", description="big orders"):
    return api.post(
        CHANNELS, {"name": name, "description": description, "spec": spec}, format="json"
    )


def test_create_saves_revision_one_and_returns_the_channel(api, spec):
    response = create(api, spec)

    assert response.status_code == 201, response.data
    body = response.json()
    assert body["name"] == "orders"
    assert body["description"] == "big orders"
    assert body["target_state"] == "STOPPED"
    assert body["state"] == "STOPPED"
    assert body["revision"] == 1
    assert body["deployed_revision"] is None
    assert body["created_by"] == "alice"
    assert body["spec"]["source"]["config"]["topics"] == ["orders"]
    assert body["spec"]["source"]["config"]["starting_offsets"] == "latest"  # normalized
    assert {"created", "updated"} <= body.keys()
    channel = Channel.objects.get(name="orders")
    assert list(channel.revisions.values_list("number", flat=True)) == [1]


def test_invalid_spec_is_rejected_with_full_field_paths_and_nothing_saved(api, spec):
    spec["source"]["config"].pop("topics")
    spec["transforms"][0]["config"].pop("pattern")

    response = create(api, spec)

    assert response.status_code == 400
    errors = response.json()
    assert "spec.source.config.topics" in errors
    assert "spec.transforms[0].config.pattern" in errors
    assert all(isinstance(messages, list) and messages for messages in errors.values())
    assert not Channel.objects.exists()
    assert not Revision.objects.exists()
    assert not LifecycleEvent.objects.exists()


def test_bad_name_and_bad_spec_are_reported_together(api, spec):
    spec["sink"]["type"] = "no-such-sink"

    response = create(api, spec, name="Not A Slug")

    assert response.status_code == 400
    errors = response.json()
    assert "name" in errors
    assert any(key.startswith("spec.sink") for key in errors)


def test_duplicate_name_is_a_field_error(api, spec):
    create(api, spec)

    response = create(api, spec)

    assert response.status_code == 400
    assert "name" in response.json()


def test_spec_must_be_an_object(api):
    response = create(api, ["not", "a", "spec"])

    assert response.status_code == 400
    assert list(response.json()) == ["spec"]
    assert not Channel.objects.exists()


def test_list_and_retrieve(api, spec):
    create(api, spec, name="a")
    create(api, spec, name="b")

    listing = api.get(CHANNELS).json()
    detail = api.get(f"{CHANNELS}b/").json()

    assert listing["count"] == 2
    assert [item["name"] for item in listing["results"]] == ["a", "b"]
    assert detail["name"] == "b"
    assert detail["revision"] == 1
    assert api.get(f"{CHANNELS}missing/").status_code == 404


def test_put_with_a_changed_spec_saves_a_new_revision(api, spec):
    create(api, spec)
    spec["sink"]["config"]["topic"] = "other"

    response = api.put(
        f"{CHANNELS}orders/", {"name": "orders", "description": "new", "spec": spec}, format="json"
    )

    assert response.status_code == 200, response.data
    assert response.json()["revision"] == 2
    assert response.json()["description"] == "new"
    assert response.json()["spec"]["sink"]["config"]["topic"] == "other"


def test_saving_the_same_spec_again_creates_no_revision(api, spec):
    create(api, spec)

    response = api.patch(f"{CHANNELS}orders/", {"spec": spec}, format="json")

    assert response.status_code == 200
    assert response.json()["revision"] == 1
    assert Revision.objects.count() == 1


def test_spelling_out_a_default_is_not_a_change(api, spec):
    create(api, spec)
    spec["source"]["config"]["starting_offsets"] = "latest"

    response = api.patch(f"{CHANNELS}orders/", {"spec": spec}, format="json")

    assert response.json()["revision"] == 1


def test_patch_description_only_keeps_the_spec(api, spec):
    create(api, spec)

    response = api.patch(f"{CHANNELS}orders/", {"description": "changed"}, format="json")

    assert response.status_code == 200
    assert response.json()["description"] == "changed"
    assert response.json()["revision"] == 1


def test_invalid_spec_on_update_changes_nothing(api, spec):
    create(api, spec)
    bad = {**spec, "transforms": [{"type": "filter", "config": {}}]}

    response = api.patch(
        f"{CHANNELS}orders/", {"description": "changed", "spec": bad}, format="json"
    )

    assert response.status_code == 400
    assert "spec.transforms[0].config.pattern" in response.json()
    channel = Channel.objects.get(name="orders")
    assert channel.description == "big orders"
    assert channel.revisions.count() == 1


def test_a_channel_cannot_be_renamed(api, spec):
    create(api, spec)

    response = api.put(f"{CHANNELS}orders/", {"name": "renamed", "spec": spec}, format="json")

    assert response.status_code == 400
    assert "name" in response.json()
    assert Channel.objects.filter(name="orders").exists()


def test_delete_removes_the_channel_and_tells_the_runtime(api, spec, runtime):
    create(api, spec)
    api.post(f"{CHANNELS}orders/start")

    response = api.delete(f"{CHANNELS}orders/")

    assert response.status_code == 204
    assert not Channel.objects.exists()
    assert not Connector.objects.exists()
    assert runtime.calls_named("delete") == [("orders",)]
    deleted = LifecycleEvent.objects.get(reason="deleted")
    assert (deleted.subject_id, deleted.actor, deleted.channel) == ("orders", "user:alice", None)


def test_delete_of_a_never_started_channel_forgets_pending_offsets_best_effort(api, spec, runtime):
    create(api, spec)
    create(api, spec, name="other")

    assert api.delete(f"{CHANNELS}orders/").status_code == 204
    assert runtime.calls_named("delete") == [("orders",)]

    runtime.unavailable = ConnectionError("redis is down")
    assert api.delete(f"{CHANNELS}other/").status_code == 204  # nothing else to clean up


def test_start_returns_202_and_deploys_the_latest_revision(api, spec, runtime):
    create(api, spec)

    response = api.post(f"{CHANNELS}orders/start")

    assert response.status_code == 202
    assert response.json() == {"name": "orders", "target_state": "RUNNING"}
    (deployment,) = runtime.calls_named("deploy")
    deployment = deployment[0]
    assert deployment.connector_id == "orders"
    assert deployment.channel == "orders"
    assert deployment.revision == 1
    assert deployment.target_state == RuntimeTargetState.RUNNING
    assert deployment.worker_id is None
    assert deployment.spec == Revision.objects.get().spec
    connector = Connector.objects.get()
    assert (connector.runtime_id, connector.state) == ("orders", ConnectorState.UNASSIGNED)
    assert Channel.objects.get().target_state == TargetState.RUNNING
    event = LifecycleEvent.objects.get(subject_type=SubjectType.CHANNEL, to_state="RUNNING")
    assert (event.from_state, event.actor) == ("STOPPED", "user:alice")


def test_start_keeps_a_live_current_worker(api, spec, runtime):
    create(api, spec)
    api.post(f"{CHANNELS}orders/start")
    Worker.objects.create(worker_id="w1", state="ALIVE")
    Connector.objects.update(worker="w1")

    api.post(f"{CHANNELS}orders/stop")
    api.post(f"{CHANNELS}orders/start")

    assert runtime.calls_named("deploy")[-1][0].worker_id == "w1"


def test_start_twice_records_one_target_change(api, spec):
    create(api, spec)

    api.post(f"{CHANNELS}orders/start")
    api.post(f"{CHANNELS}orders/start")

    assert LifecycleEvent.objects.filter(to_state="RUNNING").count() == 1


def test_starting_again_after_an_edit_deploys_the_new_revision(api, spec, runtime):
    create(api, spec)
    api.post(f"{CHANNELS}orders/start")
    spec["sink"]["config"]["topic"] = "other"
    api.patch(f"{CHANNELS}orders/", {"spec": spec}, format="json")

    api.post(f"{CHANNELS}orders/start")

    assert runtime.calls_named("deploy")[-1][0].revision == 2
    channel = api.get(f"{CHANNELS}orders/").json()
    assert (channel["revision"], channel["deployed_revision"]) == (2, 2)


def test_start_after_a_failure_restarts_the_connector(api, spec, runtime):
    create(api, spec)
    api.post(f"{CHANNELS}orders/start")
    Connector.objects.update(state=ConnectorState.FAILED)

    response = api.post(f"{CHANNELS}orders/start")

    assert response.status_code == 202
    assert runtime.calls_named("restart") == [("orders",)]
    assert Connector.objects.get().generation == 1
    assert LifecycleEvent.objects.filter(reason__startswith="restarting the failed").exists()


def test_start_of_a_healthy_connector_does_not_restart_it(api, spec, runtime):
    create(api, spec)
    api.post(f"{CHANNELS}orders/start")
    api.post(f"{CHANNELS}orders/start")

    assert runtime.calls_named("restart") == []


def test_stop_returns_202_and_sets_the_target(api, spec, runtime):
    create(api, spec)
    api.post(f"{CHANNELS}orders/start")

    response = api.post(f"{CHANNELS}orders/stop")

    assert response.status_code == 202
    assert response.json() == {"name": "orders", "target_state": "STOPPED"}
    assert runtime.calls_named("set_target_state") == [("orders", RuntimeTargetState.STOPPED)]
    assert Channel.objects.get().target_state == TargetState.STOPPED


def test_start_when_the_runtime_is_down_is_503_and_changes_nothing(api, spec, runtime):
    create(api, spec)
    runtime.unavailable = ConnectionError("redis is down")

    response = api.post(f"{CHANNELS}orders/start")

    assert response.status_code == 503
    assert Channel.objects.get().target_state == TargetState.STOPPED
    assert not Connector.objects.exists()


def test_start_and_stop_of_a_missing_channel_are_404(api):
    assert api.post(f"{CHANNELS}missing/start").status_code == 404
    assert api.post(f"{CHANNELS}missing/stop").status_code == 404


def test_status_of_a_never_started_channel(api, spec):
    create(api, spec)

    body = api.get(f"{CHANNELS}orders/status").json()

    assert body["name"] == "orders"
    assert body["state"] == "STOPPED"
    assert body["target_state"] == "STOPPED"
    assert body["worker_id"] is None
    assert body["revision"] is None
    assert body["tasks"] == []


def test_status_shows_connector_and_tasks(api, spec):
    create(api, spec)
    api.post(f"{CHANNELS}orders/start")
    Worker.objects.create(worker_id="w1", state="ALIVE")
    connector = Connector.objects.get()
    Connector.objects.filter(pk=connector.pk).update(
        worker="w1", state=ConnectorState.RUNNING, trace=""
    )
    Task.objects.create(
        connector=connector,
        task_id=0,
        state="RUNNING",
        worker_id="w1",
        topic="orders",
        partition=0,
        offset=42,
    )

    response = api.get(f"{CHANNELS}orders/status")

    assert response.status_code == 200
    body = response.json()
    assert {
        "name",
        "state",
        "target_state",
        "worker_id",
        "trace",
        "revision",
        "tasks",
    } <= body.keys()
    assert (body["state"], body["target_state"], body["worker_id"], body["revision"]) == (
        "RUNNING",
        "RUNNING",
        "w1",
        1,
    )
    (task,) = body["tasks"]
    assert {k: task[k] for k in ("id", "state", "worker_id", "topic", "partition", "offset")} == {
        "id": 0,
        "state": "RUNNING",
        "worker_id": "w1",
        "topic": "orders",
        "partition": 0,
        "offset": 42,
    }


def test_lifecycle_lists_the_channels_events_newest_first(api, spec):
    create(api, spec)
    api.post(f"{CHANNELS}orders/start")
    api.post(f"{CHANNELS}orders/stop")

    response = api.get(f"{CHANNELS}orders/lifecycle/")

    assert response.status_code == 200
    body = response.json()
    assert body["count"] == 3
    transitions = [(e["from_state"], e["to_state"]) for e in body["results"]]
    assert transitions == [("RUNNING", "STOPPED"), ("STOPPED", "RUNNING"), ("", "STOPPED")]
    assert {e["actor"] for e in body["results"]} == {"user:alice"}
    assert api.get(f"{CHANNELS}missing/lifecycle/").status_code == 404


def test_workers_list_shows_hosted_connectors(api, spec):
    create(api, spec, name="a")
    create(api, spec, name="b")
    api.post(f"{CHANNELS}a/start")
    api.post(f"{CHANNELS}b/start")
    Worker.objects.create(worker_id="w1", host="h1", pid=7, state="ALIVE")
    Worker.objects.create(worker_id="w2.example.com", host="h2", pid=8, state="DEAD")
    Connector.objects.update(worker="w1")

    body = api.get("/api/v1/workers/").json()
    detail = api.get("/api/v1/workers/w2.example.com/")

    assert [(w["worker_id"], w["state"], w["connectors"]) for w in body["results"]] == [
        ("w1", "ALIVE", ["a", "b"]),
        ("w2.example.com", "DEAD", []),
    ]
    assert {"host", "pid", "last_heartbeat", "started_at"} <= body["results"][0].keys()
    assert detail.status_code == 200
    assert detail.json()["capacity"] == {}  # until it says (its own record in the status topic)


def test_a_workers_capacity_is_shown_as_it_said(api) -> None:
    said = {"cores": 4, "cores_held": 3, "connectors": 2, "memory_available_mb": 900}
    Worker.objects.create(
        worker_id="w1", host="h1", state="ALIVE", capacity={**said, "slots": [2, 5]}
    )
    shown = api.get("/api/v1/workers/w1/").json()["capacity"]
    assert shown == {**said, "slots": [2, 5]}


def test_listing_costs_the_same_queries_for_any_number_of_channels(
    api, spec, django_assert_max_num_queries
):
    for i in range(20):
        create(api, spec, name=f"c{i}")
        api.post(f"{CHANNELS}c{i}/start")

    # token, the user's roles in teams (the role check and the teams they see), count, page
    with django_assert_max_num_queries(6):
        response = api.get(CHANNELS)

    assert response.json()["count"] == 20
    assert {item["deployed_revision"] for item in response.json()["results"]} == {1}


def test_preview_returns_the_runtime_tail(api, spec, runtime):
    create(api, spec)
    assert api.get(f"{CHANNELS}orders/preview").json() == {"name": "orders", "events": []}
    api.post(f"{CHANNELS}orders/start")
    runtime.previews["orders"] = [{"id": "3"}, {"id": "2"}, {"id": "1"}]

    response = api.get(f"{CHANNELS}orders/preview?limit=2")

    assert response.status_code == 200
    assert response.json() == {"name": "orders", "events": [{"id": "3"}, {"id": "2"}]}
    assert runtime.calls_named("preview")[-1] == ("orders", 2)


def test_preview_rejects_a_bad_limit_and_needs_auth(api, anon, spec):
    create(api, spec)
    assert api.get(f"{CHANNELS}orders/preview?limit=0").status_code == 400
    assert api.get(f"{CHANNELS}orders/preview?limit=x").json() == {
        "limit": ["Must be a whole number from 1 to 500."]
    }
    assert api.get(f"{CHANNELS}missing/preview").status_code == 404
    assert anon.get(f"{CHANNELS}orders/preview").status_code == 401


def test_preview_when_the_runtime_is_down_is_503(api, spec, runtime):
    create(api, spec)
    api.post(f"{CHANNELS}orders/start")
    runtime.unavailable = ConnectionError("redis is down")

    assert api.get(f"{CHANNELS}orders/preview").status_code == 503


def test_the_error_policy_is_validated_with_paths_and_its_secrets_are_write_only(api, spec):
    spec["errors"] = {"tolerance": "all", "dead_letter": {"type": "kafka", "config": {}}}
    response = create(api, spec)
    assert response.status_code == 400
    assert "spec.errors.dead_letter.config.bootstrap_servers" in response.json()

    spec["errors"]["dead_letter"] = {
        "type": "http",
        "config": {"url": "https://dlq.example.com/", "auth": {"type": "bearer", "token": "t0k"}},
    }
    assert create(api, spec).status_code == 201
    shown = api.get(f"{CHANNELS}orders/").json()["spec"]["errors"]
    assert shown["tolerance"] == "all"
    assert shown["dead_letter"]["config"]["auth"]["token"] != "t0k"
    assert "t0k" not in api.get(f"{CHANNELS}orders/").content.decode()
