import django.db.models.deletion
from django.db import migrations, models


class Migration(migrations.Migration):

    dependencies = [
        ("console", "0015_workers_service"),
    ]

    operations = [
        migrations.CreateModel(
            name="ChannelDiscovery",
            fields=[
                (
                    "id",
                    models.BigAutoField(
                        auto_created=True, primary_key=True, serialize=False, verbose_name="ID"
                    ),
                ),
                ("enabled", models.BooleanField(default=False)),
                ("schema", models.JSONField(blank=True, default=dict)),
                ("fields", models.JSONField(blank=True, default=dict)),
                (
                    "samples",
                    models.BigIntegerField(default=0, help_text="Events sampled so far."),
                ),
                ("version", models.PositiveIntegerField(default=0)),
                ("last_sample_at", models.DateTimeField(blank=True, null=True)),
                ("changed_at", models.DateTimeField(blank=True, null=True)),
                (
                    "channel",
                    models.OneToOneField(
                        on_delete=django.db.models.deletion.CASCADE,
                        related_name="discovery",
                        to="console.channel",
                    ),
                ),
            ],
        ),
    ]
