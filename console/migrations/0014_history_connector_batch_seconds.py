from django.db import migrations, models


class Migration(migrations.Migration):

    dependencies = [
        ("console", "0013_schema_registry"),
    ]

    operations = [
        migrations.AddField(
            model_name="connector",
            name="batch_seconds",
            field=models.FloatField(
                blank=True,
                null=True,
                help_text="How long the connector's latest micro-batch took (seconds), as the "
                "runtime last reported; null until a batch ran.",
            ),
        ),
    ]
