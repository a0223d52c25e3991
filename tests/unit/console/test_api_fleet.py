"""Fleets: ``GET /api/v1/channels/`` paged, searched, filtered and sorted on the server;
channel labels; ``POST /api/v1/channels/bulk`` (one request, a result per channel)."""

from __future__ import annotations

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from rest_framework.test import APIClient

from console import services
from console.choices import ConnectorState
from console.models import AuditEvent, Channel, Connector, LifecycleEvent, Task, Worker
from console.permissions import EDITOR, OPERATOR, VIEWER, grant_role
from console.services import channel_health

pytestmark = pytest.mark.django_db

CHANNELS = "/api/v1/channels/"
BULK = "/api/v1/channels/bulk"


def names(response) -> list[str]:
    assert response.status_code == 200, response.content
    return [item["name"] for item in response.json()["results"]]


@pytest.fixture
def fleet(spec):
    """alpha RUNNING on w1 (team=payments), bravo FAILED on w2 (team=search), charlie
    never started (team=payments, tier=gold), delta PAUSED on w1 (no labels)."""
    Worker.objects.create(worker_id="w1", state="ALIVE")
    Worker.objects.create(worker_id="w2", state="ALIVE")
    made = {
        "alpha": ({"team": "payments"}, "orders by amount"),
        "bravo": ({"team": "search"}, "search index feed"),
        "charlie": ({"team": "payments", "tier": "gold"}, "refunds"),
        "delta": ({}, "clickstream"),
    }
    for name, (labels, description) in made.items():
        services.create_channel(name=name, spec=spec, labels=labels, description=description)
    for name, state, worker in (
        ("alpha", "RUNNING", "w1"),
        ("bravo", "FAILED", "w2"),
        ("delta", "PAUSED", "w1"),
    ):
        channel = Channel.objects.get(name=name)
        services.start_channel(channel)
        Connector.objects.filter(channel=channel).update(state=state, worker=worker)
    services.pause_channel(Channel.objects.get(name="delta"))
    channel_health.refresh()  # as the control loop's pass that saw those states


def test_paging_keeps_its_shape_count_and_next(api, fleet):
    first = api.get(f"{CHANNELS}?limit=2").json()
    second = api.get(f"{CHANNELS}?limit=2&offset=2").json()

    assert first["count"] == 4
    assert [c["name"] for c in first["results"]] == ["alpha", "bravo"]
    assert first["next"].endswith("limit=2&offset=2")
    assert [c["name"] for c in second["results"]] == ["charlie", "delta"]
    assert second["next"] is None
    # the console's old request still gets everything
    assert api.get(f"{CHANNELS}?expand=status&limit=500").json()["count"] == 4


def test_search_matches_name_or_description_in_any_case(api, fleet):
    assert names(api.get(f"{CHANNELS}?search=ALP")) == ["alpha"]
    assert names(api.get(f"{CHANNELS}?search=index")) == ["bravo"]
    assert names(api.get(f"{CHANNELS}?search=zzz")) == []


def test_state_filters_are_any_of_and_stopped_includes_never_started(api, fleet):
    assert names(api.get(f"{CHANNELS}?state=FAILED")) == ["bravo"]
    assert names(api.get(f"{CHANNELS}?state=STOPPED")) == ["charlie"]
    assert names(api.get(f"{CHANNELS}?state=RUNNING&state=PAUSED")) == ["alpha", "delta"]
    assert names(api.get(f"{CHANNELS}?target_state=PAUSED")) == ["delta"]


def test_health_worker_and_label_filters(api, fleet):
    assert names(api.get(f"{CHANNELS}?health=critical")) == ["bravo"]
    assert names(api.get(f"{CHANNELS}?health=idle")) == ["charlie"]
    assert names(api.get(f"{CHANNELS}?worker=w1")) == ["alpha", "delta"]
    assert names(api.get(f"{CHANNELS}?label=team=payments")) == ["alpha", "charlie"]
    assert names(api.get(f"{CHANNELS}?label=team=payments&label=tier=gold")) == ["charlie"]
    assert names(api.get(f"{CHANNELS}?label=tier")) == ["charlie"]
    both = api.get(f"{CHANNELS}?expand=status&label=team=payments&state=RUNNING").json()
    assert [c["name"] for c in both["results"]] == ["alpha"]
    assert both["results"][0]["status"]["state"] == "RUNNING"


def test_sorting(api, fleet):
    assert names(api.get(f"{CHANNELS}?ordering=-name")) == ["delta", "charlie", "bravo", "alpha"]
    # by need of attention: FAILED, PAUSED, RUNNING, STOPPED
    assert names(api.get(f"{CHANNELS}?ordering=state")) == ["bravo", "delta", "alpha", "charlie"]
    assert names(api.get(f"{CHANNELS}?ordering=health&limit=1")) == ["bravo"]
    health_desc = api.get(f"{CHANNELS}?ordering=-health&expand=status").json()
    assert health_desc["count"] == 4
    assert health_desc["results"][0]["name"] == "charlie"  # idle first
    assert health_desc["results"][0]["status"]["health"]["level"] == "idle"
    by_worker = ["charlie", "delta", "alpha", "bravo"]  # none, w1 (by -name), w2
    assert names(api.get(f"{CHANNELS}?ordering=worker,-name")) == by_worker
    Channel.objects.filter(name="bravo").update(updated="2000-01-01T00:00:00Z")
    assert names(api.get(f"{CHANNELS}?ordering=updated"))[0] == "bravo"
    assert names(api.get(f"{CHANNELS}?expand=status"))[0] == "bravo"  # FAILED first


@pytest.mark.parametrize(
    ("query", "parameter"),
    [
        ("state=SLEEPING", "state"),
        ("health=fine", "health"),
        ("target_state=running", "target_state"),
        ("ordering=colour", "ordering"),
        ("ordering=--name", "ordering"),
        ("label=bad key=x", "label"),
        ("label=team=not ok", "label"),
        ("label=-x", "label"),
        ("search=" + "x" * 201, "search"),
        ("expand=tasks", "expand"),
    ],
)
def test_a_bad_parameter_is_a_400_naming_it(api, fleet, query, parameter):
    response = api.get(f"{CHANNELS}?{query}")
    assert response.status_code == 400, response.content
    assert list(response.json()) == [parameter]


def test_the_first_page_with_status_costs_the_same_queries_for_more_channels(api, spec, fleet):
    url = f"{CHANNELS}?expand=status&limit=50&label=team=payments&ordering=-updated"
    with CaptureQueriesContext(connection) as few:
        assert len(api.get(url).json()["results"]) == 2
    for n in range(30):
        channel = services.create_channel(name=f"more-{n}", spec=spec, labels={"team": "payments"})
        services.start_channel(channel)
        connector = Connector.objects.get(channel=channel)
        Task.objects.create(connector=connector, task_id=0, state="RUNNING", lag=5)
    with CaptureQueriesContext(connection) as many:
        assert len(api.get(url).json()["results"]) == 32
    assert len(many.captured_queries) == len(few.captured_queries)


# -- labels -----------------------------------------------------------------------------------


def test_labels_are_saved_read_back_replaced_and_recorded(api, spec):
    created = api.post(
        CHANNELS,
        {"name": "orders", "spec": spec, "labels": {"team": "payments", "example.com/tier": ""}},
        format="json",
    )
    assert created.status_code == 201, created.content
    assert created.json()["labels"] == {"team": "payments", "example.com/tier": ""}

    changed = api.patch(f"{CHANNELS}orders/", {"labels": {"team": "search"}}, format="json")

    assert changed.status_code == 200, changed.content
    assert api.get(f"{CHANNELS}orders/").json()["labels"] == {"team": "search"}
    reasons = list(LifecycleEvent.objects.values_list("reason", flat=True))
    assert "labels changed from {example.com/tier=, team=payments} to {team=search}" in reasons
    audit = AuditEvent.objects.filter(action="channel.update").latest("id")
    assert audit.changes == {"labels": {"team": "search"}}
    assert api.post(CHANNELS, {"name": "bare", "spec": spec}, format="json").json()["labels"] == {}


def test_labels_alone_make_no_revision_and_leave_the_deployed_one(api, spec, runtime):
    """The channel page saves labels on their own: not part of the spec, so no revision, no
    drift, the running connector untouched; only editors may."""
    api.post(CHANNELS, {"name": "orders", "spec": spec}, format="json")
    assert api.post(f"{CHANNELS}orders/start", format="json").status_code == 202
    before = api.get(f"{CHANNELS}orders/").json()

    changed = api.patch(
        f"{CHANNELS}orders/", {"labels": {"team": "payments", "tier": ""}}, format="json"
    )

    assert changed.status_code == 200, changed.content
    after = changed.json()
    assert after["labels"] == {"team": "payments", "tier": ""}
    assert (after["revision"], after["deployed_revision"], after["drift"]) == (
        before["revision"],
        before["deployed_revision"],
        False,
    )
    assert Channel.objects.get(name="orders").revisions.count() == 1
    assert after["target_state"] == before["target_state"] == "RUNNING"


@pytest.mark.parametrize(("role", "status"), [(VIEWER, 403), (OPERATOR, 403), (EDITOR, 200)])
def test_only_editors_change_labels(api, spec, django_user_model, role, status):
    api.post(CHANNELS, {"name": "orders", "spec": spec}, format="json")
    bob = django_user_model.objects.create_user("bob", password="s3cret-pass")
    grant_role(bob, role)
    client = APIClient()
    client.force_authenticate(bob)

    response = client.patch(f"{CHANNELS}orders/", {"labels": {"team": "x"}}, format="json")

    assert response.status_code == status, response.content
    expected = {"team": "x"} if status == 200 else {}
    assert Channel.objects.get(name="orders").labels == expected


def test_a_bad_label_in_a_patch_is_a_400_at_its_key(api, spec):
    api.post(CHANNELS, {"name": "orders", "spec": spec, "labels": {"a": "1"}}, format="json")

    response = api.patch(
        f"{CHANNELS}orders/", {"labels": {"team": "ok", "zone": "bad value"}}, format="json"
    )

    assert response.status_code == 400
    assert list(response.json()) == ["labels.zone"]
    assert Channel.objects.get(name="orders").labels == {"a": "1"}


@pytest.mark.parametrize(
    ("labels", "paths"),
    [
        ({"bad key": "x"}, ["labels.bad key"]),
        ({"team": "has space"}, ["labels.team"]),
        ({"team": "x" * 64}, ["labels.team"]),
        ({"Example.COM/team": "x"}, ["labels.Example.COM/team"]),
        ({"team": 5}, ["labels.team"]),
        ({"-team": "x", "ok": "fine", "team-": "x"}, ["labels.-team", "labels.team-"]),
        ({f"k{n}": "v" for n in range(65)}, ["labels"]),
        (["team"], ["labels"]),
    ],
)
def test_bad_labels_are_400s_with_field_paths(api, spec, labels, paths):
    response = api.post(CHANNELS, {"name": "orders", "spec": spec, "labels": labels}, format="json")
    assert response.status_code == 400, response.content
    assert sorted(response.json()) == sorted(paths)
    assert not Channel.objects.exists()


# -- bulk -------------------------------------------------------------------------------------


def test_bulk_stop_answers_per_channel_and_audits_each(api, fleet, runtime):
    response = api.post(
        BULK, {"action": "stop", "names": ["alpha", "nope", "charlie", "delta"]}, format="json"
    )

    assert response.status_code == 200, response.content
    body = response.json()
    assert (body["count"], body["ok"], body["failed"]) == (4, 3, 1)
    by_name = {result["name"]: result for result in body["results"]}
    assert by_name["nope"] == {
        "name": "nope",
        "ok": False,
        "status": 404,
        "error": "No channel has this name.",
        "target_state": None,
        "changed": False,
    }
    assert by_name["alpha"]["ok"] and by_name["alpha"]["target_state"] == "STOPPED"
    # charlie was stopped already: ok, and said to be unchanged (not counted as done).
    assert (by_name["alpha"]["changed"], by_name["charlie"]["changed"]) == (True, False)
    assert body["unchanged"] == 1
    assert set(Channel.objects.filter(target_state="STOPPED").values_list("name", flat=True)) == {
        "alpha",
        "charlie",
        "delta",
    }
    assert {call[0] for call in runtime.calls_named("set_target_state")} >= {"alpha", "delta"}
    per_channel = AuditEvent.objects.filter(action="channel.stop", via="bulk")
    assert sorted(per_channel.values_list("object_id", "outcome")) == [
        ("alpha", 202),
        ("charlie", 202),
        ("delta", 202),
        ("nope", 404),
    ]
    assert AuditEvent.objects.filter(action="channel.bulk", outcome=200).count() == 1
    stopped = LifecycleEvent.objects.filter(to_state="STOPPED", reason="stop requested")
    assert sorted(stopped.values_list("subject_id", flat=True)) == ["alpha", "delta"]


def test_bulk_reports_what_each_channel_could_not_do(api, fleet):
    body = api.post(BULK, {"action": "pause", "names": ["alpha", "charlie"]}, format="json").json()

    results = {result["name"]: result for result in body["results"]}
    assert results["alpha"]["ok"] is True
    assert results["charlie"]["status"] == 409
    assert "STOPPED" in results["charlie"]["error"]
    assert Channel.objects.get(name="alpha").target_state == "PAUSED"


def test_bulk_by_filter_and_delete(api, fleet, runtime):
    body = api.post(
        BULK, {"action": "delete", "filter": {"label": ["team=payments"]}}, format="json"
    ).json()

    assert [result["name"] for result in body["results"]] == ["alpha", "charlie"]
    assert all(result["status"] == 204 for result in body["results"])
    assert sorted(Channel.objects.values_list("name", flat=True)) == ["bravo", "delta"]


def test_bulk_restart_and_runtime_outage_are_per_channel(api, fleet, runtime):
    runtime.unavailable = ConnectionError("redis is down")
    body = api.post(BULK, {"action": "start", "names": ["charlie"]}, format="json").json()
    assert body["results"][0]["status"] == 503
    assert Channel.objects.get(name="charlie").target_state == "STOPPED"
    runtime.unavailable = None
    restarted = api.post(BULK, {"action": "restart", "names": ["bravo"]}, format="json").json()
    assert restarted["results"][0]["ok"] is True


def test_a_bulk_filter_that_says_all_acts_on_every_channel(api, fleet, runtime):
    response = api.post(BULK, {"action": "stop", "filter": {"all": True}}, format="json")
    assert response.status_code == 200, response.content
    assert response.json()["count"] == Channel.objects.count()
    assert not Channel.objects.exclude(target_state="STOPPED").exists()


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({"action": "explode", "names": ["alpha"]}, "action"),
        ({"action": "stop"}, "names"),
        ({"action": "stop", "names": ["alpha"], "filter": {}}, "names"),
        ({"action": "stop", "names": []}, "names"),
        ({"action": "stop", "filter": {"state": ["SLEEPING"]}}, "filter.state[0]"),
        ({"action": "stop", "filter": {"label": ["ok", 5, None]}}, "filter.label[2]"),
        ({"action": "stop", "filter": {"label": ["bad key"]}}, "filter.label"),
        ({"action": "stop", "names": ["a"] * 5001}, "names"),
        # A filter that narrows nothing selects the fleet: it must say so (issue 29, 11).
        ({"action": "delete", "filter": {}}, "filter.all"),
        ({"action": "stop", "filter": {"search": "  ", "label": []}}, "filter.all"),
        ({"action": "delete", "filter": {"all": False}}, "filter.all"),
        ({"action": "delete", "filter": {"all": "yes"}}, "filter.all"),
    ],
)
def test_bad_bulk_requests_are_400s(api, fleet, body, field):
    response = api.post(BULK, body, format="json")
    assert response.status_code == 400, response.content
    assert any(key.startswith(field) for key in response.json()), response.json()
    assert all(isinstance(messages, list) for messages in response.json().values())
    assert Channel.objects.filter(target_state="STOPPED").count() == 1


@pytest.mark.parametrize(
    ("role", "action", "code"),
    [
        (VIEWER, "stop", 403),
        (OPERATOR, "stop", 200),
        (OPERATOR, "delete", 403),
        (EDITOR, "delete", 200),
        (EDITOR, "start", 403),
    ],
)
def test_bulk_needs_the_role_of_the_single_action(django_user_model, fleet, role, action, code):
    user = django_user_model.objects.create_user(f"u-{role}", password="pw-123456")
    grant_role(user, role)
    client = APIClient()
    client.force_authenticate(user)

    response = client.post(BULK, {"action": action, "names": ["alpha"]}, format="json")

    assert response.status_code == code, response.content
    if code == 403:
        assert "role" in response.json()["detail"]
        assert Channel.objects.filter(name="alpha", target_state="RUNNING").exists()


def test_bulk_stop_of_many_channels_is_quick_and_complete(api, spec, runtime):
    worker = Worker.objects.create(worker_id="w1", state="ALIVE")
    for n in range(60):
        channel = services.create_channel(name=f"c{n:03}", spec=spec)
        services.start_channel(channel)
    Connector.objects.update(state=ConnectorState.RUNNING, worker=worker)

    body = api.post(
        BULK, {"action": "stop", "filter": {"state": ["RUNNING"]}}, format="json"
    ).json()

    assert (body["count"], body["ok"]) == (60, 60)
    assert not Channel.objects.exclude(target_state="STOPPED").exists()


def test_bulk_stop_with_the_runtime_down_changes_nothing(api, fleet, runtime):
    runtime.unavailable = ConnectionError("redis is down")

    body = api.post(BULK, {"action": "stop", "names": ["alpha", "delta", "nope"]}, format="json")

    statuses = {result["name"]: result["status"] for result in body.json()["results"]}
    assert statuses == {"alpha": 503, "delta": 503, "nope": 404}
    assert Channel.objects.get(name="alpha").target_state == "RUNNING"
    assert not LifecycleEvent.objects.filter(reason="stop requested").exists()


def test_labels_in_the_admin_are_validated_and_saved(client, django_user_model, spec):
    import json

    root = django_user_model.objects.create_superuser("root", password="root-pass-123")
    client.force_login(root)
    form = {"name": "orders", "description": "", "spec": json.dumps(spec)}

    bad = client.post("/admin/console/channel/add/", {**form, "labels": '{"bad key": "x"}'})
    good = client.post("/admin/console/channel/add/", {**form, "labels": '{"team": "ads"}'})

    assert bad.status_code == 200 and b"labels.bad key" in bad.content
    assert good.status_code == 302, good.content[:500]
    assert Channel.objects.get(name="orders").labels == {"team": "ads"}
    assert b"team=ads" in client.get("/admin/console/channel/").content


def test_a_bulk_start_says_which_channels_already_ran(api, fleet, runtime, spec):
    # alpha runs its latest revision: nothing to do; bravo FAILED: started again; charlie
    # never started: started; delta PAUSED: started.
    body = api.post(
        BULK, {"action": "start", "names": ["alpha", "bravo", "charlie", "delta"]}, format="json"
    ).json()

    changed = {result["name"]: result["changed"] for result in body["results"]}
    assert changed == {"alpha": False, "bravo": True, "charlie": True, "delta": True}
    assert (body["ok"], body["unchanged"]) == (4, 1)

    # A saved revision not deployed yet: the next start deploys it, a change.
    spec["sink"]["config"]["topic"] = "other"
    assert api.patch(f"{CHANNELS}alpha/", {"spec": spec}, format="json").status_code == 200
    again = api.post(BULK, {"action": "start", "names": ["alpha"]}, format="json").json()
    assert (again["results"][0]["changed"], again["unchanged"]) == (True, 0)
