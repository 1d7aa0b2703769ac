"""A label-set version is published (becomes current: boards and the API show it by default)
once every scored submission has its score on it (docs/metrics.md §14). Every version that
exists already was current when it was made, re-scored or not: it is published as of its
creation, so the boards show what they showed before."""

from django.db import migrations, models
from django.db.models import F


def publish_existing(apps, schema_editor):
    LabelSetVersion = apps.get_model("leaderboard", "LabelSetVersion")
    # the historical model has the plain manager: no immutability guard here
    LabelSetVersion.objects.filter(published__isnull=True).update(published=F("created"))


class Migration(migrations.Migration):

    dependencies = [
        ("leaderboard", "0012_submission_files_removed"),
    ]

    operations = [
        migrations.AddField(
            model_name="labelsetversion",
            name="published",
            field=models.DateTimeField(blank=True, null=True),
        ),
        migrations.RunPython(publish_existing, migrations.RunPython.noop),
    ]
