"""The admin's lifecycle controls: bulk actions, the change page's buttons, state badges."""

from __future__ import annotations

import json

import pytest

from console import services
from console.choices import ConnectorState, TargetState
from console.models import Channel, Connector, LifecycleEvent, Task, Worker
from console.permissions import VIEWER, grant_role
from runtime_adapter.states import TargetState as RuntimeTargetState

pytestmark = pytest.mark.django_db

CHANGELIST = "/admin/console/channel/"


@pytest.fixture
def admin_client(client, django_user_model):
    admin = django_user_model.objects.create_superuser("root", password="root-pass-123")
    client.force_login(admin)
    return client


@pytest.fixture
def channels(spec):
    """Channels a (running) and b (stopped)."""
    a = services.create_channel(name="a", spec=spec)
    services.start_channel(a)
    services.create_channel(name="b", spec=spec)
    return {c.name: c for c in Channel.objects.all()}


def bulk(client, action: str, *names: str):
    ids = [str(pk) for pk in Channel.objects.filter(name__in=names).values_list("pk", flat=True)]
    return client.post(CHANGELIST, {"action": action, "_selected_action": ids}, follow=True)


def messages_of(response) -> list[str]:
    return [str(m) for m in response.context["messages"]]


def targets() -> dict[str, str]:
    return dict(Channel.objects.values_list("name", "target_state"))


def test_bulk_pause_and_resume_call_the_services(admin_client, channels, runtime):
    response = bulk(admin_client, "pause_channels", "a")

    assert targets()["a"] == TargetState.PAUSED
    assert runtime.calls_named("set_target_state")[-1] == ("a", RuntimeTargetState.PAUSED)
    assert "Asked 1 channel(s) to pause: a." in messages_of(response)
    event = LifecycleEvent.objects.filter(to_state="PAUSED").get()
    assert (event.actor, event.reason) == ("user:root", "pause requested")

    bulk(admin_client, "resume_channels", "a")

    assert targets()["a"] == TargetState.RUNNING


def test_a_refused_channel_is_reported_and_the_others_done(admin_client, channels, runtime):
    response = bulk(admin_client, "pause_channels", "a", "b")

    assert targets() == {"a": TargetState.PAUSED, "b": TargetState.STOPPED}
    shown = messages_of(response)
    assert any(m.startswith("b: channel 'b' is STOPPED") for m in shown)
    assert "Asked 1 channel(s) to pause: a." in shown


def test_bulk_restart_replaces_the_driver(admin_client, channels, runtime):
    bulk(admin_client, "restart_channels", "a")

    assert runtime.calls_named("restart") == [("a",)]
    assert Connector.objects.get(runtime_id="a").state == ConnectorState.RESTARTING
    event = LifecycleEvent.objects.filter(to_state="RESTARTING").get()
    assert event.actor == "user:root"
    assert "include_tasks=true, only_failed=false" in event.reason


def test_bulk_start_and_stop_still_work(admin_client, channels, runtime):
    bulk(admin_client, "start_channels", "b")
    assert targets()["b"] == TargetState.RUNNING

    bulk(admin_client, "stop_channels", "a", "b")
    assert set(targets().values()) == {TargetState.STOPPED}


def test_a_runtime_outage_is_an_error_message(admin_client, channels, runtime):
    runtime.unavailable = ConnectionError("redis is down")

    response = bulk(admin_client, "pause_channels", "a")

    assert any("runtime is unavailable" in m for m in messages_of(response))
    assert targets()["a"] == TargetState.RUNNING


def test_the_change_page_has_the_five_buttons(admin_client, channels):
    page = admin_client.get(f"{CHANGELIST}{channels['a'].pk}/change/").content.decode()

    for operation in ("start", "stop", "pause", "resume", "restart"):
        assert f'action="/admin/console/channel/{channels["a"].pk}/lifecycle/{operation}/"' in page
    assert page.count('class="sluice-lifecycle"') == 5


def disabled_buttons(page: str) -> list[str]:
    import re

    found = re.findall(r'class="sluice-lifecycle"( disabled)? title="([^"]*)"[^>]*>(\w+)<', page)
    return [label for off, _title, label in found if off]


def test_a_stopped_channels_page_greys_out_what_it_cannot_do(admin_client, channels):
    page = admin_client.get(f"{CHANGELIST}{channels['b'].pk}/change/").content.decode()

    assert disabled_buttons(page) == ["Stop", "Pause", "Resume", "Restart"]
    assert 'title="It is stopped already"' in page


def test_a_running_channels_page_greys_out_start_and_resume(admin_client, channels, spec):
    page = admin_client.get(f"{CHANGELIST}{channels['a'].pk}/change/").content.decode()
    assert disabled_buttons(page) == ["Start", "Resume"]
    assert 'title="It runs its latest revision already"' in page

    services.pause_channel(channels["a"])
    page = admin_client.get(f"{CHANGELIST}{channels['a'].pk}/change/").content.decode()
    assert disabled_buttons(page) == ["Pause"]  # start deploys and runs it; resume runs it

    services.resume_channel(channels["a"])
    spec["sink"]["config"]["topic"] = "other"  # a saved revision: start deploys it
    services.update_channel(Channel.objects.get(name="a"), spec=spec)
    page = admin_client.get(f"{CHANGELIST}{channels['a'].pk}/change/").content.decode()
    assert disabled_buttons(page) == ["Resume"]


@pytest.mark.parametrize(
    ("operation", "target", "message"),
    [
        ("pause", TargetState.PAUSED, "Asked channel a to pause."),
        ("stop", TargetState.STOPPED, "Asked channel a to stop."),
        ("restart", TargetState.RUNNING, "Asked channel a to restart."),
    ],
)
def test_a_button_calls_the_service_and_comes_back(
    admin_client, channels, operation, target, message
):
    pk = channels["a"].pk

    response = admin_client.post(f"{CHANGELIST}{pk}/lifecycle/{operation}/")

    assert response.status_code == 302
    assert response["Location"] == f"{CHANGELIST}{pk}/change/"
    assert targets()["a"] == target
    assert message in messages_of(admin_client.get(response["Location"]))


def test_a_refused_button_shows_the_reason(admin_client, channels, runtime):
    response = admin_client.post(f"{CHANGELIST}{channels['b'].pk}/lifecycle/resume/", follow=True)

    assert any("is STOPPED, not PAUSED: start it instead" in m for m in messages_of(response))
    assert runtime.calls_named("set_target_state") == []


def test_buttons_want_post_a_known_operation_and_change_permission(
    admin_client, client, channels, django_user_model
):
    pk = channels["a"].pk
    assert admin_client.get(f"{CHANGELIST}{pk}/lifecycle/pause/").status_code == 405
    assert admin_client.post(f"{CHANGELIST}{pk}/lifecycle/explode/").status_code == 403
    assert admin_client.post(f"{CHANGELIST}999/lifecycle/pause/").status_code == 404

    viewer = django_user_model.objects.create_user("viewer", password="x", is_staff=True)
    grant_role(viewer, VIEWER)  # in the default team, the channels'
    client.force_login(viewer)
    page = client.get(f"{CHANGELIST}{pk}/change/").content.decode()

    assert "sluice-lifecycle" not in page
    assert client.post(f"{CHANGELIST}{pk}/lifecycle/pause/").status_code == 403
    assert targets()["a"] == TargetState.RUNNING
    assert "pause_channels" not in client.get(CHANGELIST).content.decode()


def test_state_badges_are_coloured(admin_client, channels):
    Worker.objects.create(worker_id="w1", state="DEAD")
    connector = Connector.objects.get(runtime_id="a")
    Connector.objects.filter(pk=connector.pk).update(state=ConnectorState.FAILED, worker="w1")
    Task.objects.create(connector=connector, task_id=0, state=ConnectorState.RUNNING)

    pages = {
        model: admin_client.get(f"/admin/console/{model}/").content.decode()
        for model in ("channel", "connector", "task", "worker")
    }

    assert 'style="background:#c62828' in pages["channel"]  # a is FAILED
    assert ">FAILED</span>" in pages["connector"]
    assert 'style="background:#2e7d32' in pages["task"]  # RUNNING
    assert ">DEAD</span>" in pages["worker"]
    assert all('class="sluice-state"' in page for page in pages.values())


def test_the_changelist_shows_drift(admin_client, channels, spec):
    spec["sink"]["config"]["topic"] = "elsewhere"
    services.update_channel(channels["a"], spec=spec)

    page = admin_client.get(CHANGELIST).content.decode()

    assert page.count('class="sluice-drift"') == 1  # a runs revision 1 of 2
    assert "drift: runs 1 of 2" in page
    # No drift is healthy: no red cross (Django's boolean icons) for it, nor any True/False.
    assert 'alt="False"' not in page and 'alt="True"' not in page


def test_the_restart_policy_is_edited_on_the_change_page(admin_client, channels, spec):
    channel = channels["b"]

    response = admin_client.post(
        f"{CHANGELIST}{channel.pk}/change/",
        {
            "description": "",
            "spec": json.dumps(spec),
            "restart_policy": "never",
            "restart_max_attempts": "3",
            "restart_backoff_initial_seconds": "",
            "restart_backoff_max_seconds": "",
            "revisions-TOTAL_FORMS": "0",
            "revisions-INITIAL_FORMS": "0",
            "revisions-MIN_NUM_FORMS": "0",
            "revisions-MAX_NUM_FORMS": "1000",
        },
    )

    assert response.status_code == 302, response.content
    channel.refresh_from_db()
    assert (channel.restart_policy, channel.restart_max_attempts) == ("never", 3)
    assert channel.restart_backoff_initial_seconds == 1.0  # left empty: kept
    assert LifecycleEvent.objects.filter(reason__startswith="restart policy changed").exists()
