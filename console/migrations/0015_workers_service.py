from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [
        ("console", "0014_history_connector_batch_seconds"),
    ]

    operations = [
        migrations.AlterModelOptions(
            name="worker",
            options={
                "ordering": ["worker_id"],
                "permissions": [
                    ("operate_worker", "Can drain, return to service and forget runtime workers")
                ],
            },
        ),
        migrations.AddField(
            model_name="worker",
            name="service",
            field=models.CharField(
                choices=[
                    ("IN_SERVICE", "In service"),
                    ("DRAINING", "Draining"),
                    ("DRAINED", "Drained"),
                ],
                default="IN_SERVICE",
                help_text=(
                    "IN_SERVICE takes new channels; DRAINING gets none and hands its channels "
                    "to other live workers; DRAINED has none left (console/services/workers.py)."
                ),
                max_length=16,
            ),
        ),
        migrations.AddField(
            model_name="worker",
            name="service_changed_at",
            field=models.DateTimeField(blank=True, null=True),
        ),
        migrations.AddField(
            model_name="worker",
            name="service_changed_by",
            field=models.CharField(
                blank=True, help_text="Who drained it or put it back in service.", max_length=150
            ),
        ),
    ]
