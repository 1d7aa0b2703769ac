"""Label-set families take generic names (workers/scoring/families): `cifar10h` -> `soft`,
`imagenet_m` -> `subset`, in LabelSet.family and in every stored score record's `family`.
Content hashes do not change (label_set_builders.FAMILY_RENAMES). `bundle_kind` loses its
fixed choices: the families' registry says which kinds exist."""

from django.db import migrations, models

RENAMES = {"cifar10h": "soft", "imagenet_m": "subset"}


def _rename(apps, mapping):
    LabelSet = apps.get_model("leaderboard", "LabelSet")
    Score = apps.get_model("leaderboard", "Score")
    for old, new in mapping.items():
        LabelSet.objects.filter(family=old).update(family=new)
        # The records are JSON: rewritten one by one, in batches (a score row is small).
        scores = Score.objects.filter(label_set__family=new).only("id", "record")
        for score in scores.iterator(chunk_size=2000):
            if isinstance(score.record, dict) and score.record.get("family") == old:
                score.record["family"] = new
                Score.objects.filter(pk=score.pk).update(record=score.record)


def forwards(apps, schema_editor):
    _rename(apps, RENAMES)


def backwards(apps, schema_editor):
    _rename(apps, {new: old for old, new in RENAMES.items()})


class Migration(migrations.Migration):

    dependencies = [
        ("leaderboard", "0018_job_field_names"),
    ]

    operations = [
        migrations.AlterField(
            model_name="labelset",
            name="bundle_kind",
            field=models.CharField(blank=True, max_length=16),
        ),
        migrations.RunPython(forwards, backwards),
    ]
