# Accounts through django-allauth (docs/participants/account.md): sign-up invitations
# (EVALSERVER_SIGNUP_MODE=invitation), and for each existing user whose `User.email` is set an
# allauth EmailAddress, primary and unverified, so that allauth knows the address (a password
# reset reaches it; with mandatory verification its owner verifies it at the next login).
# Users without an address get none here: they are asked for one at their next login
# (leaderboard/accounts/middleware.py). Nothing else of a user changes: groups, tokens and
# the staff flag stay as they are.

from typing import Any

import django.db.models.deletion
from django.conf import settings
from django.db import migrations, models

import leaderboard.accounts.models


def email_addresses_add(apps: Any, schema_editor: Any) -> None:
    User = apps.get_model(*settings.AUTH_USER_MODEL.split("."))
    EmailAddress = apps.get_model("account", "EmailAddress")
    known = set(EmailAddress.objects.values_list("user_id", flat=True))
    EmailAddress.objects.bulk_create(
        [EmailAddress(user_id=user_id, email=email.strip().lower(), primary=True,
                      verified=False)
         for user_id, email in User.objects.exclude(email="").values_list("id", "email")
         .order_by("id") if user_id not in known and email.strip()],
        batch_size=1000)


class Migration(migrations.Migration):

    dependencies = [
        ('leaderboard', '0030_participation_rules'),
        ('account', '0009_emailaddress_unique_primary_email'),
        migrations.swappable_dependency(settings.AUTH_USER_MODEL),
    ]

    operations = [
        migrations.CreateModel(
            name='SignupInvitation',
            fields=[
                ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                ('code', models.CharField(default=leaderboard.accounts.models.invitation_code_new, max_length=64, unique=True)),
                ('email', models.EmailField(blank=True, help_text='when set, only this address may use it', max_length=254)),
                ('created', models.DateTimeField(auto_now_add=True)),
                ('used_at', models.DateTimeField(blank=True, null=True)),
                ('created_by', models.ForeignKey(blank=True, null=True, on_delete=django.db.models.deletion.SET_NULL, related_name='+', to=settings.AUTH_USER_MODEL)),
                ('used_by', models.OneToOneField(blank=True, null=True, on_delete=django.db.models.deletion.SET_NULL, related_name='signup_invitation', to=settings.AUTH_USER_MODEL)),
            ],
            options={
                'ordering': ['-created'],
            },
        ),
        migrations.RunPython(email_addresses_add, migrations.RunPython.noop),
    ]
