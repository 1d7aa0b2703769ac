"""Whether an account's email address is verified: one question, asked where a right needs it
(joining a benchmark that requires it, docs/hosts/participation.md; self-service hosting,
docs/hosts/teams.md). The answer is django-allauth's: a verified `EmailAddress` row."""

from __future__ import annotations

from typing import Any

from django.apps import apps


def user_email_verified(*, user: Any) -> bool:
    if not user.is_authenticated:
        return False
    if not apps.is_installed("allauth.account"):  # (no accounts app: nothing is verified)
        return False
    from allauth.account.models import EmailAddress

    return bool(EmailAddress.objects.filter(user_id=user.pk, verified=True).exists())
