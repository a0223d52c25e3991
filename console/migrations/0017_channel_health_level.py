from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [
        ("console", "0016_channel_discovery"),
    ]

    operations = [
        migrations.AddField(
            model_name="channel",
            name="health_level",
            field=models.CharField(
                default="idle",
                editable=False,
                help_text=(
                    "The health level (console.services.health.LEVELS) as of the control "
                    "loop's last pass or the channel's last target change: what the fleet "
                    "list filters and sorts by."
                ),
                max_length=8,
            ),
        ),
        migrations.AddIndex(
            model_name="channel",
            index=models.Index(fields=["health_level", "name"], name="console_channel_health"),
        ),
    ]
