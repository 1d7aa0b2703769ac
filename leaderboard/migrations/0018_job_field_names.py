# Every job model (leaderboard/jobs/lifecycle.py ClaimedJob) names the same idea the same way:
# when it finished is `finished_at` (Submission.scored, Audit.finished, BundleUpload.finished
# before), why it failed `failure_code` (BundleUpload.error_code before) and `failure_reason`.
# Renames keep every row's values; the new codes are empty on what failed before.

from django.db import migrations, models


class Migration(migrations.Migration):

    dependencies = [
        ("leaderboard", "0017_image_set_names"),
    ]

    operations = [
        migrations.RenameField(model_name="submission", old_name="scored",
                               new_name="finished_at"),
        migrations.RenameField(model_name="audit", old_name="finished", new_name="finished_at"),
        migrations.RenameField(model_name="bundleupload", old_name="finished",
                               new_name="finished_at"),
        migrations.RenameField(model_name="bundleupload", old_name="error_code",
                               new_name="failure_code"),
        migrations.AlterField(
            model_name="bundleupload",
            name="failure_code",
            field=models.CharField(blank=True, max_length=64),
        ),
        migrations.AddField(
            model_name="audit",
            name="failure_code",
            field=models.CharField(blank=True, max_length=64),
        ),
        migrations.AddField(
            model_name="versionrescore",
            name="failure_code",
            field=models.CharField(blank=True, max_length=64),
        ),
    ]
