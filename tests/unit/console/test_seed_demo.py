from __future__ import annotations

from django.core.management import call_command

from console.demo import DEMO_CHANNEL
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
