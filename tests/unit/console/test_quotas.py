"""A team's quotas (console.services.quotas): channels, running channels and real-time cores
refused with 429 naming the quota, nothing half-created; the teams API shows each quota
against the team's use and lets site admins set them."""

from __future__ import annotations

import copy
import json
import os
import subprocess
import sys
import threading
import uuid

import pytest
from django.db import connection
from rest_framework.test import APIClient

from console import services
from console.choices import TargetState
from console.errors import QuotaExceeded
from console.models import AuditEvent, Channel, Connector, LifecycleEvent, Revision, Team
from runtime_adapter.kafka import TopicReplication, create_topic
from tests.unit.console.members import member

pytestmark = pytest.mark.django_db

CHANNELS = "/api/v1/channels/"
BULK = "/api/v1/channels/bulk"
CONNECT = "/connect/connectors"
TEAM = "/api/v1/teams/pay/"


@pytest.fixture
def pay() -> Team:
    return Team.objects.create(name="pay")


@pytest.fixture
def editor(django_user_model) -> APIClient:
    """An editor and operator of the team pay."""
    return member(django_user_model, "erin", {"pay": ("editor", "operator")})


@pytest.fixture
def site_admin(django_user_model) -> APIClient:
    admin = django_user_model.objects.create_superuser("root", password="s3cret-pass")
    client = APIClient()
    client.force_authenticate(admin)
    return client


def made(pay: Team, spec: dict, *names: str) -> list[Channel]:
    return [services.create_channel(name=name, spec=spec, team=pay) for name in names]


def counts() -> dict[str, int]:
    """What a refused request must leave as it was."""
    return {
        "channels": Channel.objects.count(),
        "revisions": Revision.objects.count(),
        "connectors": Connector.objects.count(),
        "lifecycle": LifecycleEvent.objects.count(),
        "audit_ok": AuditEvent.objects.filter(outcome__lt=300).count(),
        "running": Channel.objects.exclude(target_state=TargetState.STOPPED).count(),
    }


# -- max_channels -----------------------------------------------------------------------------


def test_a_create_past_max_channels_is_refused_with_the_quota_named(pay, editor, spec, runtime):
    pay.max_channels = 2
    pay.save()
    made(pay, spec, "a", "b")
    before = counts()

    response = editor.post(
        CHANNELS, {"name": "c", "team": "pay", "spec": spec, "target_state": "RUNNING"}, "json"
    )

    assert response.status_code == 429, response.content
    assert response.json() == {
        "detail": "Team pay has reached its quota of 2 channels (max_channels).",
        "quota": "max_channels",
        "limit": 2,
        "used": 2,
        "team": "pay",
    }
    assert counts() == before
    assert runtime.calls_named("deploy") == []
    refused = AuditEvent.objects.get(action="channel.create", object_id="c")
    assert refused.outcome == 429  # the refusal is recorded as one, never as a create


def test_a_refused_http_channel_leaves_no_ingest_topic(pay, editor, spec, ingest_kafka):
    pay.max_channels = 0
    pay.save()
    spec["source"] = {"type": "http", "config": {}}

    response = editor.post(CHANNELS, {"name": "hooks", "team": "pay", "spec": spec}, "json")

    assert response.status_code == 429, response.content
    assert ingest_kafka.topics == set()
    assert not Channel.objects.exists()


def test_other_teams_and_no_limit_are_not_counted(pay, editor, spec, django_user_model):
    other = Team.objects.create(name="other", max_channels=0)
    pay.max_channels = 1
    pay.save()
    services.create_channel(name="theirs", spec=spec, team=Team.objects.get(name="pay"))
    Channel.objects.filter(name="theirs").update(team=other)  # another team's channel

    assert editor.post(
        CHANNELS, {"name": "a", "team": "pay", "spec": spec}, "json"
    ).status_code == (201)
    pay.max_channels = None
    pay.save()
    assert editor.post(
        CHANNELS, {"name": "b", "team": "pay", "spec": spec}, "json"
    ).status_code == (201)


def test_the_connect_facade_refuses_in_connect_s_shape(pay, spec, django_user_model):
    pay.max_channels = 1
    pay.save()
    made(pay, spec, "a")
    client = member(django_user_model, "cy", {"pay": ("editor",)})
    before = counts()
    config = {"sluice.spec": json.dumps(spec), "sluice.team": "pay"}

    put_new = client.put(f"{CONNECT}/fresh/config", config, format="json")
    posted = client.post(CONNECT, {"name": "fresh", "config": config}, format="json")

    message = "Team pay has reached its quota of 1 channels (max_channels)."
    assert put_new.status_code == 429, put_new.content
    assert put_new.json() == {"error_code": 429, "message": message}
    assert posted.status_code == 429
    assert posted.json() == {"error_code": 429, "message": message}
    assert counts() == before
    # Changing an existing channel's config takes no new place.
    spec["sink"]["config"]["topic"] = "other"
    updated = client.put(f"{CONNECT}/a/config", {"sluice.spec": json.dumps(spec)}, format="json")
    assert updated.status_code == 200


def test_the_service_refuses_past_max_channels(pay, spec):
    pay.max_channels = 1
    pay.save()
    made(pay, spec, "a")

    with pytest.raises(QuotaExceeded) as refused:
        services.create_channel(name="b", spec=spec, team=pay)

    assert (refused.value.quota, refused.value.limit, refused.value.used) == ("max_channels", 1, 1)


@pytest.mark.skipif(
    connection.vendor != "postgresql",
    reason="needs PostgreSQL (DATABASE_URL=postgresql://…): the unit tests' in-memory SQLite "
    "allows one writer and refuses the others outright",
)
@pytest.mark.django_db(transaction=True)
def test_two_creates_at_once_never_both_take_the_last_place(spec):
    """The team's row is locked in the create's transaction: the creates that wait for it
    count the channels made meanwhile, so four at once for two places make two (run on
    PostgreSQL by the test below; without the lock it fails there)."""
    team = Team.objects.create(name="race", max_channels=3)
    services.create_channel(name="first", spec=spec, team=team)
    barrier = threading.Barrier(4)
    outcomes: list[str] = []

    def create(name: str) -> None:
        try:
            barrier.wait()
            services.create_channel(name=name, spec=copy.deepcopy(spec), team=team)
            outcomes.append("created")
        except QuotaExceeded:
            outcomes.append("refused")
        finally:
            connection.close()  # this thread's own

    threads = [threading.Thread(target=create, args=(f"c{index}",)) for index in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(30)

    assert sorted(outcomes) == ["created", "created", "refused", "refused"]
    assert Channel.objects.filter(team=team).count() == 3
    assert Revision.objects.filter(channel__team=team).count() == 3


def test_two_creates_at_once_on_postgresql(postgres_url):
    """The test above on a real PostgreSQL (the suite's own database is SQLite): pytest again,
    in a process of its own whose Django uses ``postgres_url``."""
    test = f"{__file__}::test_two_creates_at_once_never_both_take_the_last_place"
    result = subprocess.run(
        [sys.executable, "-m", "pytest", test, "-q", "-n", "0", "-p", "no:cacheprovider"],
        env={**os.environ, "DATABASE_URL": postgres_url},
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )

    assert result.returncode == 0, result.stdout[-4000:] + result.stderr[-2000:]
    assert "1 passed" in result.stdout  # run, not skipped


# -- max_running_channels ---------------------------------------------------------------------


def test_a_start_past_max_running_channels_is_refused(pay, editor, spec, runtime):
    pay.max_running_channels = 1
    pay.save()
    made(pay, spec, "a", "b")
    assert editor.post(f"{CHANNELS}a/start").status_code == 202
    before = counts()

    refused = editor.post(f"{CHANNELS}b/start")

    assert refused.status_code == 429, refused.content
    assert refused.json() == {
        "detail": "Team pay has reached its quota of 1 running channels (max_running_channels).",
        "quota": "max_running_channels",
        "limit": 1,
        "used": 1,
        "team": "pay",
    }
    assert counts() == before
    assert [call[0].channel for call in runtime.calls_named("deploy")] == ["a"]
    assert AuditEvent.objects.get(action="channel.start", object_id="b").outcome == 429


def test_restarts_resumes_and_redeploys_keep_their_place(pay, editor, spec):
    pay.max_running_channels = 1
    pay.save()
    made(pay, spec, "a", "b")
    assert editor.post(f"{CHANNELS}a/start").status_code == 202

    assert editor.post(f"{CHANNELS}a/start").status_code == 202  # already running
    assert editor.post(f"{CHANNELS}a/restart").status_code == 202
    assert editor.post(f"{CHANNELS}a/pause").status_code == 202
    # A paused channel keeps its warm driver: it holds its place.
    assert editor.post(f"{CHANNELS}b/start").status_code == 429
    assert editor.post(f"{CHANNELS}a/resume").status_code == 202
    spec["sink"]["config"]["topic"] = "changed"
    assert editor.patch(f"{CHANNELS}a/", {"spec": spec}, "json").status_code == 200
    assert editor.post(f"{CHANNELS}a/deploy").status_code in (200, 202)
    # Stopped, it gives its place back.
    assert editor.post(f"{CHANNELS}a/stop").status_code == 202
    assert editor.post(f"{CHANNELS}b/start").status_code == 202
    assert Channel.objects.get(name="b").target_state == TargetState.RUNNING


def test_a_create_that_is_to_run_counts_against_running_channels(pay, spec, runtime):
    pay.max_running_channels = 0
    pay.save()
    before = counts()

    with pytest.raises(QuotaExceeded):
        services.create_channel(name="a", spec=spec, team=pay, target_state=TargetState.RUNNING)

    assert counts() == before
    assert runtime.calls_named("deploy") == []
    services.create_channel(name="a", spec=spec, team=pay)  # saved only: no place taken


def test_a_bulk_start_starts_those_within_the_quota_in_order(pay, editor, spec, runtime):
    pay.max_running_channels = 2
    pay.save()
    made(pay, spec, "a", "b", "c", "d")
    assert editor.post(f"{CHANNELS}a/start").status_code == 202

    body = editor.post(BULK, {"action": "start", "names": ["a", "b", "c", "d"]}, "json").json()

    by_name = {result["name"]: result for result in body["results"]}
    assert [by_name[name]["status"] for name in "abcd"] == [202, 202, 429, 429]
    assert by_name["c"]["error"] == (
        "Team pay has reached its quota of 2 running channels (max_running_channels)."
    )
    assert (body["ok"], body["failed"]) == (2, 2)
    running = Channel.objects.filter(target_state=TargetState.RUNNING)
    assert sorted(running.values_list("name", flat=True)) == ["a", "b"]
    audited = AuditEvent.objects.filter(action="channel.start", via="bulk")
    assert dict(audited.values_list("object_id", "outcome")) == {
        "a": 202,
        "b": 202,
        "c": 429,
        "d": 429,
    }


def test_a_bulk_start_by_filter_is_refused_past_the_quota_per_channel(pay, editor, spec):
    pay.max_running_channels = 1
    pay.save()
    for name in ("a", "b"):
        services.create_channel(name=name, spec=spec, team=pay, labels={"tier": "gold"})

    body = editor.post(BULK, {"action": "start", "filter": {"label": ["tier=gold"]}}, "json").json()

    assert [(r["name"], r["status"]) for r in body["results"]] == [("a", 202), ("b", 429)]


def test_the_connect_facade_s_resume_of_a_stopped_channel_is_refused(pay, spec, django_user_model):
    pay.max_running_channels = 0
    pay.save()
    made(pay, spec, "a")
    client = member(django_user_model, "cy", {"pay": ("operator",)})

    response = client.put(f"{CONNECT}/a/resume")

    assert response.status_code == 429
    assert response.json() == {
        "error_code": 429,
        "message": "Team pay has reached its quota of 0 running channels (max_running_channels).",
    }
    assert Channel.objects.get(name="a").target_state == TargetState.STOPPED


# -- max_realtime_cores (a real Kafka) --------------------------------------------------------


def real_time_spec(spec: dict, bootstrap: str, topic: str) -> dict:
    spec = copy.deepcopy(spec)
    spec["source"]["config"] = {"bootstrap_servers": bootstrap, "topics": [topic]}
    spec["sink"]["config"]["bootstrap_servers"] = bootstrap
    spec["transforms"] = []
    spec["runtime"] = {"mode": "real-time"}
    return spec


def test_real_time_cores_are_counted_per_partition_against_the_quota(
    pay, editor, spec, kafka_bootstrap
):
    topic = f"quota-{uuid.uuid4().hex[:8]}"
    create_topic(kafka_bootstrap, topic, partitions=3, replication=TopicReplication(1, 1))
    real_time = real_time_spec(spec, kafka_bootstrap, topic)
    pay.max_realtime_cores = 5
    pay.save()
    made(pay, real_time, "rt1", "rt2")
    made(pay, spec, "batch")

    assert editor.post(f"{CHANNELS}rt1/start").status_code == 202
    assert Channel.objects.get(name="rt1").realtime_cores == 3
    refused = editor.post(f"{CHANNELS}rt2/start")
    assert refused.status_code == 429, refused.content
    assert refused.json() == {
        "detail": "Team pay has reached its quota of 5 real-time cores (max_realtime_cores): it "
        "holds 3 and this channel needs 3 (one per source partition).",
        "quota": "max_realtime_cores",
        "limit": 5,
        "used": 3,
        "team": "pay",
    }
    assert Channel.objects.get(name="rt2").target_state == TargetState.STOPPED
    assert editor.post(f"{CHANNELS}batch/start").status_code == 202  # micro-batch: no cores
    assert editor.post(f"{CHANNELS}rt1/restart").status_code == 202  # counted once
    quotas = editor.get(TEAM).json()["quotas"]
    assert quotas["max_realtime_cores"] == {"limit": 5, "used": 3}
    assert quotas["max_running_channels"] == {"limit": None, "used": 2}

    assert editor.post(f"{CHANNELS}rt1/stop").status_code == 202
    assert editor.post(f"{CHANNELS}rt2/start").status_code == 202


def test_real_time_channels_started_before_the_quota_are_counted_at_the_next_start(
    pay, editor, spec, kafka_bootstrap
):
    topic = f"quota-{uuid.uuid4().hex[:8]}"
    create_topic(kafka_bootstrap, topic, partitions=2, replication=TopicReplication(1, 1))
    made(pay, real_time_spec(spec, kafka_bootstrap, topic), "rt1", "rt2")
    assert editor.post(f"{CHANNELS}rt1/start").status_code == 202  # no quota: not counted
    assert Channel.objects.get(name="rt1").realtime_cores is None
    pay.max_realtime_cores = 3
    pay.save()

    refused = editor.post(f"{CHANNELS}rt2/start")

    assert refused.status_code == 429
    assert refused.json()["used"] == 2
    assert Channel.objects.get(name="rt1").realtime_cores == 2


def test_real_time_cores_are_not_guessed_when_kafka_is_away(pay, editor, spec):
    pay.max_realtime_cores = 8
    pay.save()
    made(pay, real_time_spec(spec, "127.0.0.1:9", "orders"), "rt")

    response = editor.post(f"{CHANNELS}rt/start")

    assert response.status_code == 503, response.content
    assert "unreachable" in response.json()["detail"]
    assert Channel.objects.get(name="rt").target_state == TargetState.STOPPED


# -- the teams API ----------------------------------------------------------------------------


def test_the_teams_api_shows_each_quota_against_its_use(pay, editor, spec):
    pay.max_channels = 20
    pay.max_running_channels = 5
    pay.max_driver_cores = 4
    pay.save()
    made(pay, spec, "a", "b", "c")
    services.start_channel(Channel.objects.get(name="a"))

    detail = editor.get(TEAM)
    listed = editor.get("/api/v1/teams/").json()["results"]

    assert detail.status_code == 200
    assert detail.json()["quotas"] == {
        "max_channels": {"limit": 20, "used": 3},
        "max_running_channels": {"limit": 5, "used": 1},
        "max_realtime_cores": {"limit": None, "used": 0},
        "max_driver_cores": {"limit": 4, "used": None},
        "max_driver_memory_mib": {"limit": None, "used": None},
    }
    assert listed == [detail.json()]


def test_another_team_is_a_404(pay, django_user_model):
    Team.objects.create(name="other")
    client = member(django_user_model, "cy", {"other": ("viewer",)})

    assert client.get(TEAM).status_code == 404


def test_site_admins_set_quotas_and_only_they(pay, site_admin, django_user_model):
    team_admin = member(django_user_model, "tia", {"pay": ("admin",)})

    refused = team_admin.patch(TEAM, {"max_channels": 100}, format="json")
    changed = site_admin.patch(
        TEAM, {"max_channels": 10, "max_realtime_cores": 4, "max_driver_memory_mib": None}, "json"
    )

    assert refused.status_code == 403
    assert refused.json() == {"detail": "Only a site admin sets a team's quotas."}
    assert changed.status_code == 200, changed.content
    assert changed.json()["quotas"]["max_channels"] == {"limit": 10, "used": 0}
    pay.refresh_from_db()
    assert (pay.max_channels, pay.max_realtime_cores) == (10, 4)
    cleared = site_admin.patch(TEAM, {"max_channels": None}, format="json")
    assert cleared.json()["quotas"]["max_channels"]["limit"] is None
    rows = AuditEvent.objects.filter(action="team.quotas", object_id="pay")
    assert sorted(rows.values_list("actor", "outcome")) == [
        ("root", 200),
        ("root", 200),
        ("tia", 403),
    ]
    assert site_admin.patch("/api/v1/teams/nope/", {"max_channels": 1}, "json").status_code == 404


@pytest.mark.parametrize(
    ("body", "errors"),
    [
        (
            {"max_channels": -1},
            {"max_channels": ["Ensure this value is greater than or equal to 0."]},
        ),
        ({"max_channels": "many"}, {"max_channels": ["A valid integer is required."]}),
        (
            {"max_running_channels": 10**7},
            {"max_running_channels": ["Ensure this value is less than or equal to 1000000."]},
        ),
        ({"max_topics": 3}, {"max_topics": ["Unknown field."]}),
    ],
)
def test_bad_quotas_are_a_400_with_field_paths(pay, site_admin, body, errors):
    response = site_admin.patch(TEAM, body, format="json")

    assert response.status_code == 400
    assert response.json() == errors
    pay.refresh_from_db()
    assert pay.max_channels is None and pay.max_running_channels is None


def test_a_quota_lowered_below_the_use_stops_nothing_held(pay, editor, site_admin, spec):
    made(pay, spec, "a", "b")
    services.start_channel(Channel.objects.get(name="a"))
    services.start_channel(Channel.objects.get(name="b"))

    site_admin.patch(TEAM, {"max_channels": 1, "max_running_channels": 1}, format="json")

    assert Channel.objects.filter(target_state=TargetState.RUNNING).count() == 2
    assert editor.post(f"{CHANNELS}a/restart").status_code == 202
    assert editor.post(f"{CHANNELS}a/stop").status_code == 202
    assert editor.post(f"{CHANNELS}a/start").status_code == 429  # b holds the one place
    assert editor.post(
        CHANNELS, {"name": "c", "team": "pay", "spec": spec}, "json"
    ).status_code == (429)


# -- the admin --------------------------------------------------------------------------------


def test_the_admin_sets_quotas_for_site_admins_only(pay, client, django_user_model):
    root = django_user_model.objects.create_superuser("root", password="root-pass-123")
    client.force_login(root)
    form = client.get(f"/admin/console/team/{pay.pk}/change/")
    assert b"<h2>Quotas</h2>" in form.content or b">Quotas<" in form.content
    saved = client.post(
        f"/admin/console/team/{pay.pk}/change/",
        {
            "description": "",
            "reach": "{}",
            "max_channels": "7",
            "max_running_channels": "",
            "max_realtime_cores": "",
            "max_driver_cores": "",
            "max_driver_memory_mib": "",
            **_empty_inlines(form.content.decode()),
        },
    )
    assert saved.status_code == 302, saved.content.decode()[-3000:]
    pay.refresh_from_db()
    assert pay.max_channels == 7

    team_admin = django_user_model.objects.create_user("tia", password="x", is_staff=True)
    from console.permissions import grant_role

    grant_role(team_admin, "admin", "pay")
    client.force_login(team_admin)
    shown = client.get(f"/admin/console/team/{pay.pk}/change/").content.decode()
    assert 'name="max_channels"' not in shown  # read only for a team's own admin


def _empty_inlines(page: str) -> dict[str, str]:
    """The management forms of the team page's inlines, with no rows changed."""
    import re

    data = {}
    for prefix in sorted(set(re.findall(r'name="([\w-]+)-TOTAL_FORMS"', page))):
        initial = re.search(rf'name="{prefix}-INITIAL_FORMS" value="(\d+)"', page)
        data[f"{prefix}-TOTAL_FORMS"] = "0"
        data[f"{prefix}-INITIAL_FORMS"] = initial.group(1) if initial else "0"
    return data


def test_the_admin_refuses_a_channel_past_the_quota_on_the_form(
    pay, client, django_user_model, spec
):
    root = django_user_model.objects.create_superuser("root", password="root-pass-123")
    client.force_login(root)
    pay.max_channels = 1
    pay.save()
    made(pay, spec, "a")

    response = client.post(
        "/admin/console/channel/add/",
        {"name": "b", "team": pay.pk, "description": "", "spec": json.dumps(spec)},
    )

    assert response.status_code == 200
    assert (
        "Team pay has reached its quota of 1 channels (max_channels)." in response.content.decode()
    )
    assert not Channel.objects.filter(name="b").exists()


def test_the_admin_s_start_action_says_the_quota(pay, client, django_user_model, spec):
    root = django_user_model.objects.create_superuser("root", password="root-pass-123")
    client.force_login(root)
    pay.max_running_channels = 0
    pay.save()
    (channel,) = made(pay, spec, "a")

    page = client.post(
        "/admin/console/channel/",
        {"action": "start_channels", "_selected_action": [str(channel.pk)]},
        follow=True,
    )

    shown = [str(message) for message in page.context["messages"]]
    assert shown == [
        "a: Team pay has reached its quota of 0 running channels (max_running_channels)."
    ]
    assert Channel.objects.get(name="a").target_state == TargetState.STOPPED
