"""When a failed submission's stored files were removed, after
EVALSERVER_FAILED_FILES_RETENTION_DAYS (leaderboard/submissions/retention.py)."""

from django.db import migrations, models


class Migration(migrations.Migration):

    dependencies = [
        ("leaderboard", "0011_panel_mistakes"),
    ]

    operations = [
        migrations.AddField(
            model_name="submission",
            name="files_removed",
            field=models.DateTimeField(blank=True, null=True),
        ),
    ]
