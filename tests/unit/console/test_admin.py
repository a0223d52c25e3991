from __future__ import annotations

import json

import pytest

from console import services
from console.choices import TargetState
from console.models import Channel, Connector, LifecycleEvent, Team

pytestmark = pytest.mark.django_db


@pytest.fixture
def admin_client(client, django_user_model):
    admin = django_user_model.objects.create_superuser("root", password="root-pass-123")
    client.force_login(admin)
    return client


def test_adding_a_channel_in_the_admin_goes_through_the_services(admin_client, spec):
    team = Team.objects.create(name="pay")
    response = admin_client.post(
        "/admin/console/channel/add/",
        {"name": "orders", "team": team.pk, "description": "", "spec": json.dumps(spec)},
    )

    assert response.status_code == 302, response.content
    channel = Channel.objects.get(name="orders")
    assert channel.team == team
    assert channel.revisions.count() == 1
    assert LifecycleEvent.objects.get().actor == "user:root"


def test_an_invalid_spec_is_shown_on_the_form(admin_client, spec):
    spec["source"]["config"].pop("topics")

    response = admin_client.post(
        "/admin/console/channel/add/",
        {"name": "orders", "description": "", "spec": json.dumps(spec)},
    )

    assert response.status_code == 200
    assert b"source.config.topics" in response.content
    assert not Channel.objects.exists()


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("[" * 1000 + "]" * 1000, b"nest deeper than"),
        ('{"source": {}, "source": {}}', b"source"),
    ],
    ids=["1000 levels deep", "duplicate key"],
)
def test_deep_or_ambiguous_json_in_the_spec_field_is_a_form_error(admin_client, text, message):
    response = admin_client.post(
        "/admin/console/channel/add/", {"name": "orders", "description": "", "spec": text}
    )

    assert response.status_code == 200
    assert message in response.content
    assert not Channel.objects.exists()


def test_editing_saves_a_new_revision(admin_client, spec):
    channel = services.create_channel(name="orders", spec=spec)
    spec["sink"]["config"]["topic"] = "elsewhere"

    response = admin_client.post(
        f"/admin/console/channel/{channel.pk}/change/",
        {
            "description": "edited",
            "spec": json.dumps(spec),
            "revisions-TOTAL_FORMS": "1",
            "revisions-INITIAL_FORMS": "1",
            "revisions-MIN_NUM_FORMS": "0",
            "revisions-MAX_NUM_FORMS": "1000",
            "revisions-0-id": str(channel.revisions.get().pk),
            "revisions-0-channel": str(channel.pk),
        },
    )

    assert response.status_code == 302, response.content
    assert channel.revisions.count() == 2
    assert Channel.objects.get().description == "edited"


def test_start_and_stop_actions_call_the_services(admin_client, spec, runtime):
    for name in ("a", "b"):
        services.create_channel(name=name, spec=spec)
    ids = [str(pk) for pk in Channel.objects.values_list("pk", flat=True)]

    admin_client.post(
        "/admin/console/channel/", {"action": "start_channels", "_selected_action": ids}
    )
    assert {d[0].connector_id for d in runtime.calls_named("deploy")} == {"a", "b"}
    assert set(Channel.objects.values_list("target_state", flat=True)) == {TargetState.RUNNING}

    admin_client.post(
        "/admin/console/channel/", {"action": "stop_channels", "_selected_action": ids}
    )
    assert set(Channel.objects.values_list("target_state", flat=True)) == {TargetState.STOPPED}
    assert len(runtime.calls_named("set_target_state")) == 2


def test_deleting_in_the_admin_tells_the_runtime(admin_client, spec, runtime):
    channel = services.create_channel(name="orders", spec=spec)
    services.start_channel(channel)

    response = admin_client.post(f"/admin/console/channel/{channel.pk}/delete/", {"post": "yes"})

    assert response.status_code == 302
    assert not Channel.objects.exists()
    assert runtime.calls_named("delete") == [("orders",)]


@pytest.mark.parametrize("model", ["channel", "connector", "task", "worker", "lifecycleevent"])
def test_changelists_render(admin_client, spec, model):
    services.start_channel(services.create_channel(name="orders", spec=spec))
    assert Connector.objects.exists()

    assert admin_client.get(f"/admin/console/{model}/").status_code == 200


def test_the_connector_admin_shows_its_driver_and_reason_read_only(admin_client, spec):
    services.start_channel(services.create_channel(name="orders", spec=spec))
    connector = Connector.objects.get()
    Connector.objects.filter(pk=connector.pk).update(
        driver_id="w1-shared-1", status_reason="waiting for source topic 'orders'"
    )

    listing = admin_client.get("/admin/console/connector/").content.decode()
    page = admin_client.get(f"/admin/console/connector/{connector.pk}/change/").content.decode()

    assert "w1-shared-1" in listing
    for text in ("w1-shared-1", "waiting for source topic &#x27;orders&#x27;"):
        assert text in page
    assert 'name="driver_id"' not in page and 'name="status_reason"' not in page
