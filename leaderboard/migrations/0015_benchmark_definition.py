"""The loaded definition of a benchmark (docs/bundles.md): its description, modality, citations,
headline, classes, visibility and source; each image set's example naming; each label set's
bundle kind and whether it feeds the review queue.

`load_benchmarks` (run on every deploy) rewrites these from the bundles. Until it runs, rows
that existed before get what can be told from the rows themselves, so nothing changes: the
review queue's label sets stay those of families real and multilabel, the headline the
original labels, ImageNet's validation images keep their file names.
"""

from django.db import migrations, models

# The families a bundle kind compiles to (docs/bundles.md §6), as they were when this ran.
BUNDLE_KIND_OF_FAMILY = {
    "original": "single",
    "corrected": "validated",
    "real": "multi",
    "multilabel": "multi",
    "imagenet_m": "subset",
    "cifar10h": "soft",
    "new_test_set": "new_test_set",
}


def fill_existing(apps, schema_editor):
    Benchmark = apps.get_model("leaderboard", "Benchmark")
    ImageSet = apps.get_model("leaderboard", "ImageSet")
    LabelSet = apps.get_model("leaderboard", "LabelSet")
    LabelSet.objects.filter(family__in=("real", "multilabel")).update(reviewable=True)
    for family, bundle_kind in BUNDLE_KIND_OF_FAMILY.items():
        LabelSet.objects.filter(family=family).update(bundle_kind=bundle_kind)
    for benchmark in Benchmark.objects.all():
        if LabelSet.objects.filter(benchmark=benchmark, slug="original").exists():
            Benchmark.objects.filter(pk=benchmark.pk).update(headline="original")
    ImageSet.objects.filter(slug="imagenet-val").update(
        naming="pattern", name_pattern="ILSVRC2012_val_{number:08d}.JPEG", first_number=1
    )


class Migration(migrations.Migration):

    dependencies = [
        ('leaderboard', '0014_board_significance'),
    ]

    operations = [
        migrations.AddField(
            model_name='benchmark',
            name='citations',
            field=models.JSONField(blank=True, default=list),
        ),
        migrations.AddField(
            model_name='benchmark',
            name='class_keys',
            field=models.JSONField(blank=True, null=True),
        ),
        migrations.AddField(
            model_name='benchmark',
            name='class_names',
            field=models.JSONField(blank=True, default=list),
        ),
        migrations.AddField(
            model_name='benchmark',
            name='description',
            field=models.TextField(blank=True),
        ),
        migrations.AddField(
            model_name='benchmark',
            name='headline',
            field=models.CharField(blank=True, max_length=64),
        ),
        migrations.AddField(
            model_name='benchmark',
            name='hidden',
            field=models.BooleanField(default=False),
        ),
        migrations.AddField(
            model_name='benchmark',
            name='modality',
            field=models.CharField(choices=[('image', 'Image'), ('text', 'Text'), ('audio', 'Audio')], default='image', max_length=16),
        ),
        migrations.AddField(
            model_name='benchmark',
            name='source',
            field=models.CharField(blank=True, max_length=200),
        ),
        migrations.AddField(
            model_name='imageset',
            name='example_names',
            field=models.JSONField(blank=True, null=True),
        ),
        migrations.AddField(
            model_name='imageset',
            name='first_number',
            field=models.IntegerField(default=1),
        ),
        migrations.AddField(
            model_name='imageset',
            name='name_pattern',
            field=models.CharField(blank=True, max_length=200),
        ),
        migrations.AddField(
            model_name='imageset',
            name='naming',
            field=models.CharField(choices=[('index', 'Index'), ('pattern', 'File-number pattern'), ('file', 'Index-to-name file')], default='index', max_length=16),
        ),
        migrations.AddField(
            model_name='labelset',
            name='bundle_kind',
            field=models.CharField(blank=True, choices=[('single', 'Original labels'), ('validated', 'Corrected from a vote file'), ('multi', 'Accepted lists'), ('soft', 'Human label distributions'), ('subset', 'Subset of another label set'), ('new_test_set', 'New test set')], max_length=16),
        ),
        migrations.AddField(
            model_name='labelset',
            name='reviewable',
            field=models.BooleanField(default=False),
        ),
        migrations.RunPython(fill_existing, migrations.RunPython.noop),
    ]
