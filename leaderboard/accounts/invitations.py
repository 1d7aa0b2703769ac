"""Sign-up invitations (EVALSERVER_SIGNUP_MODE=invitation): made by `manage.py invite` or the
admin, checked by the sign-up forms (leaderboard/accounts/forms.py) and taken, once, when the
account is saved (leaderboard/accounts/adapters.py)."""

from __future__ import annotations

from django.contrib.auth.models import User
from django.utils import timezone

from leaderboard.accounts.models import SignupInvitation


def invitation_create(*, created_by: User | None = None, email: str = "") -> SignupInvitation:
    """A new invitation with a fresh random code; `email`: the only address it signs up."""
    return SignupInvitation.objects.create(created_by=created_by, email=email.strip())


def invitation_usable_get(*, code: str, email: str) -> SignupInvitation | None:
    """The unused invitation of this code that admits `email` (any address when it names
    none, else that one, compared without case), or None."""
    invitation = SignupInvitation.objects.filter(code=code.strip(),
                                                 used_by__isnull=True).first()
    if invitation is None or (invitation.email and
                              invitation.email.lower() != email.strip().lower()):
        return None
    return invitation


def invitation_use(*, code: str, user: User) -> bool:
    """Take the invitation of this code for `user`: one conditional UPDATE, so that of two
    sign-ups racing with one code exactly one gets it; False when it was taken (or is no
    invitation)."""
    return SignupInvitation.objects.filter(code=code.strip(), used_by__isnull=True).update(
        used_by=user, used_at=timezone.now()) == 1
