# An example set may declare where its texts are (docs/bundles.md §4.2), for the review pages
# to show an example of a text benchmark; {} (the default) for every existing row.

from django.db import migrations, models


class Migration(migrations.Migration):

    dependencies = [
        ('leaderboard', '0026_example_set_names'),
    ]

    operations = [
        migrations.AddField(
            model_name='exampleset',
            name='texts',
            field=models.JSONField(blank=True, default=dict),
        ),
    ]
