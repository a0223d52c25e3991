"""``manage.py seed_demo``: create the demo channel once (never overwrites a user's channel)."""

from __future__ import annotations

from django.core.management.base import BaseCommand

from console import services
from console.demo import DEMO_CHANNEL, DEMO_DESCRIPTION, DEMO_SPEC
from console.models import Channel


class Command(BaseCommand):
    help = "Create the stopped demo channel unless it, or any channel, already exists."

    def handle(self, *args, **options) -> None:
        if Channel.objects.exists():
            return  # only a fresh installation gets the demo
        services.create_channel(
            name=DEMO_CHANNEL,
            spec=DEMO_SPEC,
            description=DEMO_DESCRIPTION,
            actor="system:seed",
        )
        self.stdout.write(f"Created the demo channel {DEMO_CHANNEL!r}: start it to see events.")
