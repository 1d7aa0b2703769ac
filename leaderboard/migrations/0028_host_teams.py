# Host teams own benchmarks (docs/hosts/teams.md). Every loaded benchmark and bundle upload
# goes to the site team, and the accounts that held a role keep it there: staff become the
# site team's admins (and keep is_staff), members of the `reviewers` group its reviewers (and
# stay in the group). Nothing is removed.

import django.db.models.deletion
from django.conf import settings
from django.db import migrations, models

import leaderboard.catalog.teams.models

SITE_TEAM_SLUG = "site"  # leaderboard.catalog.teams.models.SITE_TEAM_SLUG, as it was here
REVIEWERS_GROUP = "reviewers"


def site_team_fill(apps, schema_editor):
    HostTeam = apps.get_model("leaderboard", "HostTeam")
    Membership = apps.get_model("leaderboard", "HostTeamMembership")
    User = apps.get_model(*settings.AUTH_USER_MODEL.split("."))
    team, _ = HostTeam.objects.get_or_create(
        is_site=True, defaults={"slug": SITE_TEAM_SLUG, "name": "Site team"})
    apps.get_model("leaderboard", "Benchmark").objects.update(team=team)
    apps.get_model("leaderboard", "BundleUpload").objects.update(team=team)
    staff = set(User.objects.filter(is_staff=True).values_list("pk", flat=True))
    reviewers = set(User.objects.filter(groups__name=REVIEWERS_GROUP)
                    .values_list("pk", flat=True)) - staff
    Membership.objects.bulk_create(
        [Membership(team=team, user_id=pk, role="admin") for pk in sorted(staff)]
        + [Membership(team=team, user_id=pk, role="reviewer") for pk in sorted(reviewers)])


class Migration(migrations.Migration):

    dependencies = [
        ('leaderboard', '0027_example_set_texts'),
        migrations.swappable_dependency(settings.AUTH_USER_MODEL),
    ]

    operations = [
        migrations.CreateModel(
            name='HostTeam',
            fields=[
                ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                ('slug', models.SlugField(max_length=64, unique=True)),
                ('name', models.CharField(max_length=200)),
                ('is_site', models.BooleanField(default=False, editable=False)),
                ('created', models.DateTimeField(auto_now_add=True)),
            ],
            options={
                'ordering': ('slug',),
                'constraints': [models.UniqueConstraint(condition=models.Q(('is_site', True)), fields=('is_site',), name='hostteam_one_site_team')],
            },
        ),
        migrations.CreateModel(
            name='HostRequest',
            fields=[
                ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                ('team_slug', models.SlugField(max_length=64)),
                ('team_name', models.CharField(max_length=200)),
                ('reason', models.TextField(blank=True)),
                ('status', models.CharField(choices=[('pending', 'Pending'), ('approved', 'Approved'), ('refused', 'Refused')], default='pending', max_length=16)),
                ('created', models.DateTimeField(auto_now_add=True)),
                ('decided_at', models.DateTimeField(blank=True, null=True)),
                ('decision_note', models.TextField(blank=True)),
                ('decided_by', models.ForeignKey(blank=True, null=True, on_delete=django.db.models.deletion.SET_NULL, related_name='+', to=settings.AUTH_USER_MODEL)),
                ('requested_by', models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name='host_requests', to=settings.AUTH_USER_MODEL)),
                ('team', models.ForeignKey(blank=True, null=True, on_delete=django.db.models.deletion.SET_NULL, related_name='+', to='leaderboard.hostteam')),
            ],
            options={
                'ordering': ('-created', '-id'),
            },
        ),
        migrations.CreateModel(
            name='HostTeamMembership',
            fields=[
                ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                ('role', models.CharField(choices=[('admin', 'Admin'), ('host', 'Host'), ('reviewer', 'Reviewer')], max_length=16)),
                ('created', models.DateTimeField(auto_now_add=True)),
                ('team', models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name='memberships', to='leaderboard.hostteam')),
                ('user', models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name='host_team_memberships', to=settings.AUTH_USER_MODEL)),
            ],
            options={
                'ordering': ('team', 'user'),
                'constraints': [models.UniqueConstraint(fields=('team', 'user'), name='hostteammembership_one_per_user')],
            },
        ),
        migrations.AddField(
            model_name='benchmark',
            name='team',
            field=models.ForeignKey(null=True, on_delete=django.db.models.deletion.PROTECT, related_name='benchmarks', to='leaderboard.hostteam'),
        ),
        migrations.AddField(
            model_name='bundleupload',
            name='team',
            field=models.ForeignKey(null=True, on_delete=django.db.models.deletion.PROTECT, related_name='bundle_uploads', to='leaderboard.hostteam'),
        ),
        migrations.RunPython(site_team_fill, migrations.RunPython.noop),
        migrations.AlterField(
            model_name='benchmark',
            name='team',
            field=models.ForeignKey(default=leaderboard.catalog.teams.models.site_team_id, on_delete=django.db.models.deletion.PROTECT, related_name='benchmarks', to='leaderboard.hostteam'),
        ),
        migrations.AlterField(
            model_name='bundleupload',
            name='team',
            field=models.ForeignKey(default=leaderboard.catalog.teams.models.site_team_id, on_delete=django.db.models.deletion.PROTECT, related_name='bundle_uploads', to='leaderboard.hostteam'),
        ),
    ]
