"""``manage.py seed_demo``: create the demo channel once (never overwrites a user's channel;
an earlier release's seeded description, untouched since, is brought up to date)."""

from __future__ import annotations

from django.core.management.base import BaseCommand

from console import services
from console.demo import DEMO_CHANNEL, DEMO_DESCRIPTION, DEMO_SPEC, OLD_DEMO_DESCRIPTIONS
from console.models import Channel


class Command(BaseCommand):
    help = "Create the stopped demo channel unless it, or any channel, already exists."

    def add_arguments(self, parser) -> None:
        parser.add_argument(
            "--always",
            action="store_true",
            help="Create it even when other channels exist (never when it exists already).",
        )

    def handle(self, *args, **options) -> None:
        # Only the field: a description is no part of the spec, so no revision is made.
        Channel.objects.filter(name=DEMO_CHANNEL, description__in=OLD_DEMO_DESCRIPTIONS).update(
            description=DEMO_DESCRIPTION
        )
        channels = Channel.objects.all()
        if not options["always"] and channels.exists():
            return  # only a fresh installation gets the demo
        if channels.filter(name=DEMO_CHANNEL).exists():
            return
        services.create_channel(
            name=DEMO_CHANNEL,
            spec=DEMO_SPEC,
            description=DEMO_DESCRIPTION,
            actor="system:seed",
        )
        self.stdout.write(f"Created the demo channel {DEMO_CHANNEL!r}: start it to see events.")
