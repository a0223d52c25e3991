"""Teams: another team's channel is a 404 on every route under a channel, lists and counts
never include it, bulk actions never reach it; roles hold per team; a new channel goes to
the caller's team. ``test_roles`` checks each role's part within a team."""

from __future__ import annotations

import pytest
from django.urls import reverse
from rest_framework.test import APIClient

from console import permissions, services
from console.models import (
    CHANNEL_NAME_TAKEN,
    Channel,
    Connector,
    Membership,
    SignInGroupRule,
    Team,
    Worker,
)
from console.permissions import EDITOR, OPERATOR, ROLES, VIEWER
from console.services.teams import apply_sign_in_groups
from runtime_adapter.base import ConnectorOffsets, SourceOffset
from tests.unit.console.members import member
from tests.unit.console.test_roles import KWARGS, ROUTES, body_for

pytestmark = pytest.mark.django_db

#: The routes that name a channel in their path.
CHANNEL_ROUTES = [route for route in ROUTES if "name" in route[2]]


@pytest.fixture
def teams(spec, runtime) -> dict[str, Team]:
    """Team ``a`` with its channel ``mine``; team ``b`` with ``orders`` and ``old`` (the
    names the role matrix's paths and bodies use); a runtime worker ``w1``."""
    a = Team.objects.create(name="a")
    b = Team.objects.create(name="b")
    services.create_channel(name="mine", spec=spec, team=a)
    services.create_channel(name="orders", spec=spec, team=b)
    services.create_channel(name="old", spec=spec, team=b)
    Worker.objects.create(worker_id="w1", host="host-1")
    return {"a": a, "b": b}


@pytest.mark.parametrize(
    ("name", "method", "args"), CHANNEL_ROUTES, ids=[f"{n}-{m}" for n, m, _ in CHANNEL_ROUTES]
)
def test_another_team_s_channel_is_a_404_on_every_route(
    teams, spec, django_user_model, runtime, name, method, args
):
    client = member(django_user_model, "alice", {"a": ROLES})  # every role, in team a only
    url = reverse(f"api:{name}", kwargs={arg: KWARGS[arg] for arg in args})

    response = getattr(client, method)(url, body_for(name, method, spec), format="json")

    assert response.status_code == 404, response.content
    assert Channel.objects.get(name="orders").target_state == "STOPPED"
    assert runtime.calls_named("deploy") == []


def test_the_list_counts_and_shows_only_the_caller_s_teams(teams, django_user_model):
    client = member(django_user_model, "alice", {"a": (VIEWER,)})

    listed = client.get("/api/v1/channels/?expand=status").json()

    assert listed["count"] == 1
    assert [item["name"] for item in listed["results"]] == ["mine"]
    assert listed["results"][0]["team"] == "a"
    assert client.get("/api/v1/channels/?team=b").json()["count"] == 0
    assert client.get("/api/v1/channels/?search=orders").json()["count"] == 0


def test_a_user_in_two_teams_sees_both_and_filters_by_team(teams, django_user_model):
    client = member(django_user_model, "alice", {"a": (VIEWER,), "b": (VIEWER,)})

    assert client.get("/api/v1/channels/").json()["count"] == 3
    only_b = client.get("/api/v1/channels/?team=b").json()
    assert [item["name"] for item in only_b["results"]] == ["old", "orders"]


def test_roles_hold_in_their_own_team_only(teams, django_user_model, runtime):
    client = member(django_user_model, "alice", {"a": (OPERATOR,), "b": (VIEWER,)})

    assert client.post("/api/v1/channels/mine/start").status_code == 202
    refused = client.post("/api/v1/channels/orders/start")
    assert refused.status_code == 403
    assert refused.json() == {
        "detail": "You need the operator role (console.operate_channel) to start channels "
        "in the team b."
    }
    assert Channel.objects.get(name="orders").target_state == "STOPPED"


def test_bulk_actions_reach_only_the_caller_s_teams(teams, django_user_model):
    client = member(django_user_model, "alice", {"a": (OPERATOR,), "b": (VIEWER,)})

    by_names = client.post(
        "/api/v1/channels/bulk",
        {"action": "start", "names": ["mine", "orders", "nope"]},
        format="json",
    ).json()
    assert [(r["name"], r["status"]) for r in by_names["results"]] == [
        ("mine", 202),
        ("orders", 403),
        ("nope", 404),
    ]
    assert "in the team b" in by_names["results"][1]["error"]

    stranger = member(django_user_model, "bob", {"a": (OPERATOR,)})
    by_filter = stranger.post(
        "/api/v1/channels/bulk", {"action": "stop", "filter": {"all": True}}, format="json"
    ).json()
    assert [r["name"] for r in by_filter["results"]] == ["mine"]
    other_team = stranger.post(
        "/api/v1/channels/bulk", {"action": "stop", "filter": {"team": ["b"]}}, format="json"
    ).json()
    assert other_team["count"] == 0
    guessed = stranger.post(
        "/api/v1/channels/bulk", {"action": "stop", "names": ["orders"]}, format="json"
    ).json()
    assert guessed["results"][0]["status"] == 404  # as if it did not exist
    assert guessed["results"][0]["error"] == "No channel has this name."


def test_a_new_channel_goes_to_the_caller_s_team(teams, spec, django_user_model):
    client = member(django_user_model, "alice", {"a": (EDITOR,), "b": (VIEWER,)})

    created = client.post("/api/v1/channels/", {"name": "fresh", "spec": spec}, format="json")

    assert created.status_code == 201, created.content
    assert created.json()["team"] == "a"
    assert Channel.objects.get(name="fresh").team.name == "a"


def test_creating_names_the_team_when_there_is_a_choice(teams, spec, django_user_model):
    client = member(django_user_model, "alice", {"a": (EDITOR,), "b": (EDITOR,)})
    body = {"name": "fresh", "spec": spec}

    unnamed = client.post("/api/v1/channels/", body, format="json")
    assert unnamed.status_code == 400
    assert unnamed.json() == {"team": ["Name the team: you may create channels in a, b."]}

    named = client.post("/api/v1/channels/", {**body, "team": "b"}, format="json")
    assert named.status_code == 201
    assert Channel.objects.get(name="fresh").team.name == "b"


def test_creating_in_a_team_not_one_s_own_is_refused_and_saves_nothing(
    teams, spec, django_user_model
):
    Team.objects.create(name="c")
    client = member(django_user_model, "alice", {"a": (EDITOR,), "b": (VIEWER,)})
    body = {"name": "fresh", "spec": spec}

    hidden = client.post("/api/v1/channels/", {**body, "team": "c"}, format="json")
    missing = client.post("/api/v1/channels/", {**body, "team": "zzz"}, format="json")
    viewer_only = client.post("/api/v1/channels/", {**body, "team": "b"}, format="json")

    assert hidden.status_code == missing.status_code == 400
    assert hidden.json() == {"team": ["No team is named 'c'."]}  # as one that does not exist
    assert viewer_only.status_code == 403
    assert (
        "editor role (console.add_channel) to create channels in the team b"
        in (viewer_only.json()["detail"])
    )
    assert not Channel.objects.filter(name="fresh").exists()


def test_a_name_another_team_holds_is_refused_as_one_s_own_would_be(teams, spec, django_user_model):
    client = member(django_user_model, "alice", {"a": (EDITOR,)})

    theirs = client.post("/api/v1/channels/", {"name": "orders", "spec": spec}, format="json")
    own = client.post("/api/v1/channels/", {"name": "mine", "spec": spec}, format="json")

    assert theirs.status_code == own.status_code == 400
    assert theirs.json() == own.json() == {"name": [CHANNEL_NAME_TAKEN]}
    assert Channel.objects.get(name="orders").team.name == "b"


def test_a_channel_cannot_move_to_another_team(teams, spec, django_user_model):
    client = member(django_user_model, "alice", {"a": (EDITOR,), "b": (EDITOR,)})

    response = client.patch("/api/v1/channels/mine/", {"team": "b"}, format="json")

    assert response.status_code == 400
    assert response.json() == {"team": ["A channel cannot move to another team."]}


def test_a_site_admin_sees_and_acts_on_every_team(teams, django_user_model):
    root = django_user_model.objects.create_superuser("root", password="root-pass-123")
    client = APIClient()
    client.force_authenticate(root)

    assert client.get("/api/v1/channels/").json()["count"] == 3
    assert client.post("/api/v1/channels/orders/start").status_code == 202


def test_a_user_without_a_team_sees_nothing(teams, django_user_model):
    client = member(django_user_model, "nobody", {})

    assert client.get("/api/v1/channels/").status_code == 403
    # the same answer for another team's channel as for none: it says nothing of either
    there = client.get("/api/v1/channels/orders/")
    nowhere = client.get("/api/v1/channels/nope/")
    assert there.status_code == nowhere.status_code == 403
    assert there.json() == nowhere.json()


def test_offsets_are_not_copied_from_another_team_s_channel(teams, django_user_model, runtime):
    runtime.checkpoints["orders"] = ConnectorOffsets([SourceOffset("orders", 0, 60)], batch_id=9)
    client = member(django_user_model, "alice", {"a": (OPERATOR,)})

    response = client.post(
        "/api/v1/channels/mine/offsets/copy", {"from_channel": "orders"}, format="json"
    )

    assert response.status_code == 400
    assert response.json() == {"from_channel": ["No channel is named 'orders'."]}
    assert "mine" not in runtime.offset_changes


def test_the_connect_facade_shows_and_touches_only_the_caller_s_teams(
    teams, spec, django_user_model
):
    client = member(django_user_model, "alice", {"a": ROLES})
    connectors = "/connect/connectors"

    assert client.get(connectors).json() == ["mine"]
    assert set(client.get(f"{connectors}?expand=status").json()) == {"mine"}
    for path in ("orders", "orders/config", "orders/status", "orders/tasks", "orders/offsets"):
        assert client.get(f"{connectors}/{path}").status_code == 404, path
    assert client.put(f"{connectors}/orders/pause").status_code == 404
    assert client.delete(f"{connectors}/orders").status_code == 404
    assert client.get(f"{connectors}/mine/config").json()["sluice.team"] == "a"

    config = {"sluice.spec": spec, "sluice.description": "taken over"}
    taken = client.put(f"{connectors}/orders/config", config, format="json")
    assert taken.status_code >= 400
    assert Channel.objects.get(name="orders").description == ""
    assert Channel.objects.get(name="orders").team.name == "b"


def test_the_health_list_holds_only_the_caller_s_teams(teams, django_user_model):
    client = member(django_user_model, "alice", {"a": (VIEWER,)})

    assert [row["name"] for row in client.get("/api/v1/health/").json()] == ["mine"]


@pytest.mark.django_db(transaction=True)
def test_an_installation_from_before_teams_moves_into_the_default_team():
    """Migration 0027: channels go to the ``default`` team, and each member of a role group
    holds that role there (operator and editor both kept); the role groups are gone."""
    from django.db import connection
    from django.db.migrations.executor import MigrationExecutor

    before = [("console", "0026_health_level_help_text")]
    after = [("console", "0027_teams")]
    executor = MigrationExecutor(connection)
    executor.migrate(before)
    old = executor.loader.project_state(before).apps
    Group = old.get_model("auth", "Group")
    User = old.get_model("auth", "User")
    old.get_model("console", "Channel").objects.create(name="orders", checkpoint_key="orders")
    alice = User.objects.create(username="alice")
    bob = User.objects.create(username="bob")
    for role, users in (("viewer", [bob]), ("operator", [alice]), ("editor", [alice])):
        Group.objects.get_or_create(name=role)[0].user_set.add(*users)
    Group.objects.create(name="site-own").user_set.add(bob)

    executor = MigrationExecutor(connection)
    executor.loader.build_graph()
    executor.migrate(after)
    new = executor.loader.project_state(after).apps

    channel = new.get_model("console", "Channel").objects.get(name="orders")
    assert channel.team.name == "default"
    held = set(
        new.get_model("console", "Membership").objects.values_list(
            "user__username", "team__name", "role", "source"
        )
    )
    assert held == {
        ("alice", "default", "operator", "local"),
        ("alice", "default", "editor", "local"),
        ("bob", "default", "viewer", "local"),
    }
    groups = set(new.get_model("auth", "Group").objects.values_list("name", flat=True))
    assert groups == {"site-own"}  # a site's own group stays
    executor.loader.build_graph()
    executor.migrate(executor.loader.graph.leaf_nodes())


def test_the_admin_shows_and_operates_only_the_caller_s_teams(teams, client, django_user_model):
    alice = django_user_model.objects.create_user("alice", password="x", is_staff=True)
    for role in ROLES:
        permissions.grant_role(alice, role, "a")
    client.force_login(alice)
    orders = Channel.objects.get(name="orders").pk

    listed = client.get("/admin/console/channel/").content.decode()
    assert "/admin/console/channel/" in listed and ">mine<" in listed
    assert ">orders<" not in listed and ">old<" not in listed
    missing = client.get(f"/admin/console/channel/{orders}/change/")
    assert missing.status_code == 302 and missing.url == "/admin/"  # Django: "doesn't exist"
    assert client.post(f"/admin/console/channel/{orders}/lifecycle/start/").status_code == 404
    assert Channel.objects.get(pk=orders).target_state == "STOPPED"
    teams_page = client.get("/admin/console/team/").content.decode()
    assert ">a<" in teams_page and ">b<" not in teams_page
    for name in ("mine", "orders"):
        services.start_channel(Channel.objects.get(name=name))
    for model in ("connector", "task", "lifecycleevent"):  # audit: her own rows show (API test)
        page = client.get(f"/admin/console/{model}/")
        assert page.status_code == 200, model
        assert "orders" not in page.content.decode(), model


def test_sign_in_groups_give_and_take_roles_by_the_site_s_rules(teams, django_user_model):
    SignInGroupRule.objects.create(group="/payments-editors", team=teams["a"], role=EDITOR)
    SignInGroupRule.objects.create(group="/payments-editors", team=teams["a"], role=VIEWER)
    SignInGroupRule.objects.create(group="/ops", team=teams["b"], role=OPERATOR)
    alice = django_user_model.objects.create_user("alice", password="x")
    permissions.grant_role(alice, VIEWER, "b")  # given by an admin: kept whatever the groups

    added, removed = apply_sign_in_groups(alice, ["/payments-editors", "/unknown"])
    assert added == {("a", EDITOR), ("a", VIEWER)} and removed == set()
    assert permissions.roles_of(alice, "a") == [VIEWER, EDITOR]

    added, removed = apply_sign_in_groups(alice, ["/ops"])  # left payments, joined ops
    assert added == {("b", OPERATOR)} and removed == {("a", EDITOR), ("a", VIEWER)}
    assert permissions.roles_of(alice, "a") == []
    assert permissions.roles_of(alice, "b") == [VIEWER, OPERATOR]

    apply_sign_in_groups(alice, [])
    assert set(Membership.objects.filter(user=alice).values_list("role", "source")) == {
        (VIEWER, "local")
    }


@pytest.mark.parametrize(
    ("groups", "message"),
    [
        ("admins", "must be a list of strings"),
        ([1], r"groups\[0\] is not a string"),
        (["x" * 256], r"groups\[0\] is longer than 255 characters"),
        (["g"] * 1001, "at most 1000"),
    ],
)
def test_sign_in_groups_of_a_bad_shape_are_refused_and_change_nothing(
    teams, django_user_model, groups, message
):
    alice = django_user_model.objects.create_user("alice", password="x")
    permissions.grant_role(alice, VIEWER, "a")

    with pytest.raises(ValueError, match=message):
        apply_sign_in_groups(alice, groups)
    assert permissions.roles_of(alice) == [VIEWER]


def test_the_audit_trail_shows_a_team_its_own_rows_only(teams, django_user_model):
    alice = member(django_user_model, "alice", {"a": ROLES})
    bob = member(django_user_model, "bob", {"b": ROLES})
    alice.post("/api/v1/channels/mine/start")
    bob.post("/api/v1/channels/orders/start")
    alice.post("/api/v1/channels/orders/stop")  # a 404: recorded, and shown to team b
    bob.delete("/api/v1/channels/old/")  # deleted: its rows keep their team

    def seen(client) -> set[tuple[str, str, int]]:
        rows = client.get("/api/v1/audit/?limit=100").json()["results"]
        return {(row["actor"], row["object_id"], row["outcome"]) for row in rows}

    # her own rows and her team's; the refused one is hers (she knows what she asked)
    assert seen(alice) == {("alice", "mine", 202), ("alice", "orders", 404)}
    assert seen(bob) == {
        ("bob", "orders", 202),
        ("alice", "orders", 404),
        ("bob", "old", 204),
    }


def test_the_cluster_view_names_only_the_caller_s_teams_channels(teams, django_user_model, runtime):
    runtime.heartbeat("w1")
    for name in ("mine", "orders"):
        services.start_channel(Channel.objects.get(name=name))
    runtime.host_driver("w1-shared-1", "w1", ["mine", "orders"], capacity=50)
    client = member(django_user_model, "alice", {"a": (VIEWER,)})

    body = client.get("/api/v1/cluster/").json()

    [worker] = body["runtime_workers"]
    assert worker["drivers"][0]["channels"] == worker["drivers"][0]["connectors"] == ["mine"]
    assert "orders" not in str(body)


def test_the_cluster_view_shows_each_team_its_own_drivers_only(teams, django_user_model, runtime):
    runtime.heartbeat("w1")
    for name in ("mine", "orders"):
        services.start_channel(Channel.objects.get(name=name))
    runtime.host_driver("w1.d1", "w1", ["mine"], team="a")
    runtime.host_driver("w1.d2", "w1", ["orders"], team="b")
    runtime.host_driver("w1.d3", "w1", [], team="b")  # b's spare: no channel to give it away
    runtime.host_driver("w1.d4", "w1", [])  # the pre-teams drivers' warm one
    alice = member(django_user_model, "alice", {"a": (VIEWER,)})
    admin = django_user_model.objects.create_superuser("root", password="x")
    site = APIClient()
    site.force_authenticate(admin)

    def drivers(client) -> dict[str, str]:
        [worker] = client.get("/api/v1/cluster/").json()["runtime_workers"]
        return {d["driver_id"]: d["team"] for d in worker["drivers"]}

    assert drivers(alice) == {"w1.d1": "a"}
    assert "w1.d2" not in str(alice.get("/api/v1/cluster/").json())
    assert drivers(site) == {"w1.d1": "a", "w1.d2": "b", "w1.d3": "b", "w1.d4": ""}


def test_a_runtime_worker_lists_only_the_caller_s_teams_connectors(teams, django_user_model):
    worker = Worker.objects.get(worker_id="w1")
    for name in ("mine", "orders"):
        channel = Channel.objects.get(name=name)
        Connector.objects.create(channel=channel, runtime_id=name, worker=worker)
    client = member(django_user_model, "alice", {"a": (VIEWER,)})

    assert client.get("/api/v1/workers/w1/").json()["connectors"] == ["mine"]
    assert [w["connectors"] for w in client.get("/api/v1/workers/").json()["results"]] == [["mine"]]


def test_the_admin_asks_for_the_team_only_when_there_is_a_choice(
    teams, client, django_user_model, spec
):
    import json

    alice = django_user_model.objects.create_user("alice", password="x", is_staff=True)
    permissions.grant_role(alice, EDITOR, "a")
    permissions.grant_role(alice, VIEWER, "b")
    client.force_login(alice)
    form = {"name": "fresh", "description": "", "spec": json.dumps(spec)}

    assert client.post("/admin/console/channel/add/", form).status_code == 302
    assert Channel.objects.get(name="fresh").team.name == "a"  # her one team for editing

    permissions.grant_role(alice, EDITOR, "b")
    refused = client.post("/admin/console/channel/add/", {**form, "name": "other"})
    assert refused.status_code == 200 and b"This field is required." in refused.content
    nowhere = client.post("/admin/console/channel/add/", {**form, "name": "other", "team": 0})
    assert nowhere.status_code == 200  # not a team she may choose
    b = teams["b"].pk
    assert (
        client.post("/admin/console/channel/add/", {**form, "name": "other", "team": b}).status_code
        == 302
    )
    assert Channel.objects.get(name="other").team.name == "b"
