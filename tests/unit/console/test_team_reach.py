"""Each team's reach (issue 33): site admins set it (API and admin, audited), members read it,
a team admin cannot widen their own, and every way a channel's spec is saved checks it: a
team-B editor cannot point a channel at team A's topics."""

from __future__ import annotations

import copy
import json

import pytest
from rest_framework.test import APIClient

from console import services
from console.models import AuditEvent, Channel, Team
from console.permissions import ADMIN, EDITOR, OPERATOR, VIEWER
from console.services import team_policy
from tests.unit.console.members import member

pytestmark = pytest.mark.django_db

REACH = "/api/v1/teams/{team}/reach/"
KAFKA = "localhost:9092"


def kafka_spec(read: str, write: str) -> dict:
    return {
        "source": {"type": "kafka", "config": {"bootstrap_servers": KAFKA, "topics": [read]}},
        "sink": {"type": "kafka", "config": {"bootstrap_servers": KAFKA, "topic": write}},
    }


@pytest.fixture
def teams() -> dict[str, Team]:
    return {
        "a": Team.objects.create(name="a", reach={"topic_prefixes": ["a."]}),
        "b": Team.objects.create(name="b", reach={"topic_prefixes": ["b."]}),
    }


@pytest.fixture
def site_admin(django_user_model) -> APIClient:
    client = APIClient()
    client.force_authenticate(django_user_model.objects.create_superuser("root", password="x"))
    return client


# -- setting it ------------------------------------------------------------------------------


def test_a_site_admin_sets_a_teams_reach_audited(teams, site_admin):
    reach = {"topic_prefixes": ["b.", "shared.b-"], "http_sink": ["api.internal", "10.1.0.0/16"]}

    response = site_admin.put(REACH.format(team="b"), reach, format="json")

    assert response.status_code == 200, response.content
    assert response.json() == reach
    assert Team.objects.get(name="b").reach == reach
    event = AuditEvent.objects.get(action="team.reach.change")
    assert (event.actor, event.object_type, event.object_id) == ("root", "team", "b")
    assert event.team == teams["b"]
    assert event.changes == {"reach": {"from": {"topic_prefixes": ["b."]}, "to": reach}}
    again = site_admin.put(REACH.format(team="b"), reach, format="json")
    assert again.status_code == 200
    assert AuditEvent.objects.filter(action="team.reach.change").count() == 1  # no change


def test_patch_changes_the_keys_sent_and_null_is_the_default_again(teams, site_admin):
    url = REACH.format(team="b")
    patched = site_admin.patch(url, {"files_roots": ["/srv/data/b"]}, format="json")
    assert patched.json() == {"topic_prefixes": ["b."], "files_roots": ["/srv/data/b"]}
    unknown = site_admin.patch(url, {"topics": None}, format="json")
    assert unknown.status_code == 400 and "is not a key of a reach" in unknown.json()["topics"][0]
    cleared = site_admin.patch(url, {"topic_prefixes": None}, format="json")
    assert cleared.json() == {"files_roots": ["/srv/data/b"]}
    assert site_admin.put(url, {}, format="json").json() == {}
    assert Team.objects.get(name="b").reach == {}


def test_bad_entries_are_a_400_with_field_paths(teams, site_admin):
    url = REACH.format(team="b")
    response = site_admin.put(
        url,
        {"topic_prefixes": ["b.", "no spaces"], "files_roots": ["rel"], "http_sink": [7], "x": []},
        format="json",
    )

    assert response.status_code == 400
    errors = response.json()
    assert set(errors) == {"topic_prefixes", "files_roots", "http_sink[0]", "x"}
    assert "'no spaces' is not the start of a Kafka topic name" in errors["topic_prefixes"][0]
    assert "'rel' is not an absolute path" in errors["files_roots"][0]
    assert "is not a key of a reach" in errors["x"][0]
    not_an_object = site_admin.put(url, ["b."], format="json")
    assert not_an_object.status_code == 400 and "body" in not_an_object.json()
    too_many = site_admin.put(url, {"http_sink": [f"h{n}.x" for n in range(257)]}, format="json")
    assert too_many.status_code == 400 and "at most 256" in too_many.json()["http_sink"][0]
    assert Team.objects.get(name="b").reach == {"topic_prefixes": ["b."]}  # nothing saved


def test_a_team_admin_cannot_widen_their_own_reach_but_members_read_it(teams, django_user_model):
    admin = member(django_user_model, "bea", {"b": (ADMIN,)})
    viewer = member(django_user_model, "vic", {"b": (VIEWER,)})

    refused = admin.put(REACH.format(team="b"), {"topic_prefixes": ["a."]}, format="json")
    assert refused.status_code == 403
    assert "console.change_team" in refused.json()["detail"]
    assert admin.patch(REACH.format(team="b"), {}, format="json").status_code == 403
    assert Team.objects.get(name="b").reach == {"topic_prefixes": ["b."]}
    assert viewer.get(REACH.format(team="b")).json() == {"topic_prefixes": ["b."]}
    assert viewer.get(REACH.format(team="a")).status_code == 404  # not a team of theirs
    listed = viewer.get("/api/v1/teams/").json()["results"]
    assert [(t["name"], t["reach"]) for t in listed] == [("b", {"topic_prefixes": ["b."]})]


def test_the_service_refuses_a_bad_reach_and_saves_nothing(teams):
    from pipelines.spec.reach import InvalidReach

    with pytest.raises(InvalidReach):
        team_policy.set_reach(teams["a"], {"jdbc_sink": ["bad host"]})
    assert Team.objects.get(name="a").reach == {"topic_prefixes": ["a."]}


# -- saving a channel within it --------------------------------------------------------------


def test_a_team_b_editor_cannot_save_a_channel_reading_team_as_topics(teams, django_user_model):
    editor = member(django_user_model, "bob", {"b": (EDITOR,)})

    response = editor.post(
        "/api/v1/channels/",
        {"name": "steal", "team": "b", "spec": kafka_spec("a.payments", "b.copy")},
        format="json",
    )

    assert response.status_code == 400, response.content
    assert response.json() == {
        "spec.source.config.topics": [
            "topic 'a.payments' is outside the team's reach: team b may reach only topics "
            "starting with 'b.'"
        ]
    }
    assert not Channel.objects.filter(name="steal").exists()
    made = editor.post(
        "/api/v1/channels/",
        {"name": "own", "team": "b", "spec": kafka_spec("b.payments", "b.copy")},
        format="json",
    )
    assert made.status_code == 201, made.content


def test_a_new_revision_and_the_connect_facade_are_checked_too(teams, django_user_model):
    editor = member(django_user_model, "bob", {"b": (EDITOR,)})
    services.create_channel(name="own", spec=kafka_spec("b.in", "b.out"), team=teams["b"])

    revised = editor.patch(
        "/api/v1/channels/own/", {"spec": kafka_spec("b.in", "a.out")}, format="json"
    )
    assert revised.status_code == 400
    assert list(revised.json()) == ["spec.sink.config.topic"]
    assert "team b may reach only" in revised.json()["spec.sink.config.topic"][0]

    config = {"sluice.spec": json.dumps(kafka_spec("a.in", "b.out"))}
    connect = editor.put("/connect/connectors/own/config", config, format="json")
    assert connect.status_code == 400
    assert "a.in" in connect.content.decode()
    assert Channel.objects.get(name="own").latest_revision_obj().number == 1


def test_the_builders_validation_checks_within_a_named_team(teams, django_user_model):
    editor = member(django_user_model, "bob", {"b": (EDITOR,)})
    url = "/api/v1/plugins/source/kafka/validate"
    body = {"config": {"bootstrap_servers": KAFKA, "topics": ["a.x"]}}

    assert editor.post(url, body, format="json").status_code == 200  # the site's defaults
    within_b = editor.post(f"{url}?team=b", body, format="json")
    assert within_b.status_code == 400
    assert "team b may reach only" in within_b.json()["errors"]["config.topics"][0]
    unseen = editor.post(f"{url}?team=a", body, format="json")
    assert unseen.status_code == 400 and list(unseen.json()["errors"]) == ["team"]


def test_a_spec_saved_before_the_reach_tightened_cannot_be_replayed(teams, site_admin):
    services.create_channel(name="old", spec=kafka_spec("b.in", "b.out"), team=teams["b"])
    team_policy.set_reach(teams["b"], {"topic_prefixes": ["b.new-"]})

    response = site_admin.post(
        "/api/v1/channels/old/replays/",
        {
            "start_offsets": [{"topic": "b.in", "partition": 0, "offset": 0}],
            "end_offsets": [{"topic": "b.in", "partition": 0, "offset": 5}],
            "confirm": True,
        },
        format="json",
    )

    assert response.status_code == 400, response.content
    assert "spec.source.config.topics" in response.json()


def test_the_admin_sets_the_reach_for_site_admins_only(teams, django_user_model):
    from django.test import Client

    root = Client()
    root.force_login(django_user_model.objects.create_superuser("root", password="x"))
    url = f"/admin/console/team/{teams['b'].pk}/change/"
    page = root.get(url).content.decode()
    assert "Reach" in page and 'name="reach"' in page
    form = {
        "name": "b",
        "description": "",
        "reach": json.dumps({"topic_prefixes": ["b.", "bb."]}),
        "memberships-TOTAL_FORMS": "0",
        "memberships-INITIAL_FORMS": "0",
        "sign_in_rules-TOTAL_FORMS": "0",
        "sign_in_rules-INITIAL_FORMS": "0",
    }
    bad = root.post(url, {**form, "reach": json.dumps({"topic_prefixes": ["b c"]})})
    assert (
        bad.status_code == 200 and "is not the start of a Kafka topic name" in bad.content.decode()
    )
    saved = root.post(url, form)
    assert saved.status_code == 302, saved.content.decode()[:3000]
    assert Team.objects.get(name="b").reach == {"topic_prefixes": ["b.", "bb."]}
    assert AuditEvent.objects.filter(action="team.reach.change", object_id="b").count() == 1

    team_admin = Client()
    admin_user = django_user_model.objects.create_user("bea", password="x", is_staff=True)
    from console import permissions

    permissions.grant_role(admin_user, ADMIN, "b")
    team_admin.force_login(admin_user)
    shown = team_admin.get(url).content.decode()
    assert 'name="reach"' not in shown  # read-only for a team admin


def test_an_operators_roles_do_not_include_setting_reach(teams, django_user_model):
    operator = member(django_user_model, "ops", {"b": (OPERATOR, EDITOR)})
    assert operator.put(REACH.format(team="b"), {}, format="json").status_code == 403


def test_the_default_spec_of_other_tests_is_unaffected_without_a_reach(spec):
    """A team with no reach (the default) saves any topic: the site's defaults."""
    team = Team.objects.create(name="c")
    services.create_channel(name="any", spec=copy.deepcopy(spec), team=team)
    assert Channel.objects.get(name="any").team == team


def test_a_channel_added_in_the_admin_is_checked_within_its_teams_reach(teams, admin_client):
    outside = {"name": "steal", "team": teams["b"].pk, "description": ""}
    response = admin_client.post(
        "/admin/console/channel/add/",
        {**outside, "spec": json.dumps(kafka_spec("a.payments", "b.out"))},
    )
    assert response.status_code == 200
    assert "team b may reach only topics starting with" in response.content.decode()
    assert not Channel.objects.filter(name="steal").exists()
    within = admin_client.post(
        "/admin/console/channel/add/",
        {**outside, "name": "own", "spec": json.dumps(kafka_spec("b.payments", "b.out"))},
    )
    assert within.status_code == 302, within.content.decode()[:2000]


def test_dead_letters_are_read_back_within_the_teams_reach(tmp_path, monkeypatch):
    """A team whose own root holds its files dead letters has them read back; the site's
    roots alone would refuse that directory."""
    from console.selectors.dead_letters import dead_letter_target
    from pipelines.spec.paths import FILES_ROOTS_ENV

    (tmp_path / "site").mkdir()
    (tmp_path / "team-c" / "dlq").mkdir(parents=True)
    monkeypatch.setenv(FILES_ROOTS_ENV, str(tmp_path / "site"))
    team = Team.objects.create(name="c", reach={"files_roots": [str(tmp_path / "team-c")]})
    spec = {
        **kafka_spec("c.in", "c.out"),
        "errors": {
            "tolerance": "all",
            "dead_letter": {"type": "files", "config": {"path": str(tmp_path / "team-c" / "dlq")}},
        },
    }
    channel = services.create_channel(name="kept", spec=spec, team=team)

    assert dead_letter_target(channel).readable, dead_letter_target(channel).note
    team_policy.set_reach(team, {})  # back to the site's roots: no longer readable
    channel.team.refresh_from_db()
    target = dead_letter_target(channel)
    assert not target.readable and "outside the files roots" in target.note
