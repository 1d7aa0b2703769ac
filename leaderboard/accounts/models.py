"""Invitations to sign up, for a server whose sign-up is by invitation only
(EVALSERVER_SIGNUP_MODE=invitation; docs/operators/settings.md, "Accounts")."""

from __future__ import annotations

import secrets

from django.conf import settings
from django.db import models


def invitation_code_new() -> str:
    # 128 bits from the OS's generator: a code cannot be guessed
    return secrets.token_urlsafe(16)


class SignupInvitation(models.Model):
    """One sign-up, once: `manage.py invite` or the admin makes it; the sign-up that gives its
    code takes it (`used_by`, `used_at`) by a conditional update, so that two sign-ups racing
    with one code cannot both have it (leaderboard/accounts/services.py). `email`, when set,
    is the only address it signs up."""

    code = models.CharField(max_length=64, unique=True, default=invitation_code_new)
    email = models.EmailField(blank=True, help_text="when set, only this address may use it")
    created_by = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, blank=True,
                                   on_delete=models.SET_NULL, related_name="+")
    created = models.DateTimeField(auto_now_add=True)
    used_by = models.OneToOneField(settings.AUTH_USER_MODEL, null=True, blank=True,
                                   on_delete=models.SET_NULL, related_name="signup_invitation")
    used_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-created"]

    def __str__(self) -> str:
        state = f"used by {self.used_by}" if self.used_by_id else "unused"
        return f"invitation {self.code[:6]}… ({self.email or 'any address'}, {state})"
