from __future__ import annotations

from django.core.management import call_command

from console.demo import DEMO_CHANNEL, DEMO_DESCRIPTION, OLD_DEMO_DESCRIPTIONS
from console.models import Channel, LifecycleEvent


def test_seed_demo_creates_a_stopped_demo_once(db, capsys):
    call_command("seed_demo")
    call_command("seed_demo")

    channel = Channel.objects.get()
    assert channel.name == DEMO_CHANNEL
    assert channel.target_state == "STOPPED"
    assert channel.revisions.count() == 1
    assert LifecycleEvent.objects.filter(actor="system:seed").count() == 1
    assert capsys.readouterr().out.count("Created the demo channel") == 1


def test_seed_demo_leaves_an_installation_with_channels_alone(db, api, spec):
    api.post("/api/v1/channels/", {"name": "mine", "spec": spec}, format="json")

    call_command("seed_demo")

    assert list(Channel.objects.values_list("name", flat=True)) == ["mine"]


def test_seed_demo_always_adds_the_demo_beside_other_channels_once(db, api, spec):
    api.post("/api/v1/channels/", {"name": "mine", "spec": spec}, format="json")

    call_command("seed_demo", "--always")
    call_command("seed_demo", "--always")

    assert sorted(Channel.objects.values_list("name", flat=True)) == [DEMO_CHANNEL, "mine"]


def test_the_demo_description_is_true_while_it_runs(db):
    """It is shown in every state: it tells what the channel does, never to press Start."""
    call_command("seed_demo")

    description = Channel.objects.get(name=DEMO_CHANNEL).description
    assert "Press" not in description and "Start" not in description
    assert "5 per second" in description


def test_seed_demo_updates_an_old_seeded_description_but_not_a_users(db):
    call_command("seed_demo")
    Channel.objects.filter(name=DEMO_CHANNEL).update(description=OLD_DEMO_DESCRIPTIONS[0])
    call_command("seed_demo")
    assert Channel.objects.get(name=DEMO_CHANNEL).description == DEMO_DESCRIPTION

    Channel.objects.filter(name=DEMO_CHANNEL).update(description="My own words.")
    call_command("seed_demo")
    assert Channel.objects.get(name=DEMO_CHANNEL).description == "My own words."


def test_the_api_marks_the_demo_channel_so_the_console_need_not_know_its_name(db, api, spec):
    """The channels page offers to start the channel marked ``demo``, whatever its name."""
    api.post("/api/v1/channels/", {"name": "mine", "spec": spec}, format="json")
    call_command("seed_demo", "--always")

    listed = api.get("/api/v1/channels/", {"expand": "status"}).json()["results"]
    one = api.get(f"/api/v1/channels/{DEMO_CHANNEL}/").json()

    assert {channel["name"]: channel["demo"] for channel in listed} == {
        DEMO_CHANNEL: True,
        "mine": False,
    }
    assert one["demo"] is True
