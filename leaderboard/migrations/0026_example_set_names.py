# "Image set" becomes "example set" in the code (one word for the examples a benchmark is
# scored on, as the bundles already say): the models ImageSet and ImageSetNames, every field
# `image_set` and Benchmark.main_image_set are renamed in place; every row is kept (tables
# and columns renamed, not recreated). Only the constraints and the index that name the
# field are dropped and made again over the renamed column. The API keeps its names
# (`image_set`, `main_image_set`, ...): the serializers map them.

import django.db.models.deletion
from django.db import migrations, models


class Migration(migrations.Migration):

    dependencies = [
        ('leaderboard', '0025_declared_inputs'),
    ]

    operations = [
        migrations.RenameModel(old_name='ImageSet', new_name='ExampleSet'),
        migrations.RenameModel(old_name='ImageSetNames', new_name='ExampleSetNames'),
        migrations.AlterField(  # its related_name: benchmark.example_sets
            model_name='exampleset',
            name='benchmark',
            field=models.ForeignKey(on_delete=django.db.models.deletion.PROTECT,
                                    related_name='example_sets', to='leaderboard.benchmark'),
        ),
        migrations.RenameField(
            model_name='benchmark', old_name='main_image_set', new_name='main_example_set',
        ),
        migrations.RenameField(
            model_name='examplesetnames', old_name='image_set', new_name='example_set',
        ),
        migrations.RenameField(
            model_name='labelset', old_name='image_set', new_name='example_set',
        ),
        migrations.RemoveConstraint(
            model_name='submissionfile', name='submissionfile_one_per_image_set',
        ),
        migrations.RenameField(
            model_name='submissionfile', old_name='image_set', new_name='example_set',
        ),
        migrations.AddConstraint(
            model_name='submissionfile',
            constraint=models.UniqueConstraint(
                fields=('submission', 'example_set'), name='submissionfile_one_per_example_set'),
        ),
        migrations.RenameField(
            model_name='audit', old_name='image_set', new_name='example_set',
        ),
        migrations.RemoveConstraint(
            model_name='panelmistake', name='panelmistake_unique_per_model',
        ),
        migrations.RemoveIndex(
            model_name='panelmistake', name='leaderboard_image_s_0b06e3_idx',
        ),
        migrations.RenameField(
            model_name='panelmistake', old_name='image_set', new_name='example_set',
        ),
        migrations.AddConstraint(
            model_name='panelmistake',
            constraint=models.UniqueConstraint(
                fields=('example_set', 'model', 'example_index', 'class_id'),
                name='panelmistake_unique_per_model'),
        ),
        migrations.AddIndex(
            model_name='panelmistake',
            index=models.Index(fields=['example_set', 'severity', 'example_index'],
                               name='leaderboard_example_963a85_idx'),
        ),
    ]
