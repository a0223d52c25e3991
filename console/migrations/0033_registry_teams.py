import django.db.models.deletion
from django.db import migrations, models


def into_the_default_team(apps, schema_editor):
    """Subjects from before teams in the registry go to the ``default`` team (created as
    migration 0027 does when missing)."""
    Team = apps.get_model("console", "Team")
    Subject = apps.get_model("console", "Subject")
    if not Subject.objects.filter(team__isnull=True).exists():
        return
    default, _ = Team.objects.get_or_create(
        name="default", defaults={"description": "The installation's objects before teams."}
    )
    Subject.objects.filter(team__isnull=True).update(team=default)


def schemas_to_their_teams(apps, schema_editor):
    """Each schema id is its subjects' teams' (the default team's when no version uses it
    any more: the installation's from before teams)."""
    Team = apps.get_model("console", "Team")
    RegistrySchema = apps.get_model("console", "RegistrySchema")
    SubjectVersion = apps.get_model("console", "SubjectVersion")
    Through = RegistrySchema.teams.through
    pairs = set(SubjectVersion.objects.values_list("schema_id", "subject__team_id"))
    orphans = RegistrySchema.objects.exclude(pk__in={schema for schema, _ in pairs})
    if orphans.exists():
        default, _ = Team.objects.get_or_create(
            name="default", defaults={"description": "The installation's objects before teams."}
        )
        pairs |= {(pk, default.pk) for pk in orphans.values_list("pk", flat=True)}
    Through.objects.bulk_create(
        [Through(registryschema_id=schema, team_id=team) for schema, team in pairs],
        ignore_conflicts=True,
    )


class Migration(migrations.Migration):

    dependencies = [
        ("console", "0032_quotas_channel_realtime_cores"),
    ]

    operations = [
        migrations.AddField(
            model_name="subject",
            name="team",
            field=models.ForeignKey(
                null=True,
                on_delete=django.db.models.deletion.PROTECT,
                related_name="subjects",
                to="console.team",
            ),
        ),
        migrations.RunPython(into_the_default_team, migrations.RunPython.noop),
        migrations.AddField(
            model_name="registryschema",
            name="teams",
            field=models.ManyToManyField(
                blank=True,
                help_text=(
                    "The teams that registered it: its id is found in their registries only, "
                    "for good (as its text: old messages carry the id)."
                ),
                related_name="+",
                to="console.team",
            ),
        ),
        migrations.RunPython(schemas_to_their_teams, migrations.RunPython.noop),
        migrations.AlterField(
            model_name="subject",
            name="team",
            field=models.ForeignKey(
                on_delete=django.db.models.deletion.PROTECT,
                related_name="subjects",
                to="console.team",
            ),
        ),
        migrations.AlterField(
            model_name="subject",
            name="name",
            field=models.CharField(max_length=255),
        ),
        migrations.AlterModelOptions(
            name="subject",
            options={
                "ordering": ["team__name", "name"],
                "permissions": [("change_registry_config", "Can set schema compatibility levels")],
            },
        ),
        migrations.AddConstraint(
            model_name="subject",
            constraint=models.UniqueConstraint(
                fields=("team", "name"), name="console_subject_team_name"
            ),
        ),
    ]
