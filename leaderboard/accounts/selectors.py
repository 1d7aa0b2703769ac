"""Reads for the profile page: the user's API token, if any."""

from __future__ import annotations

from django.contrib.auth.models import User
from rest_framework.authtoken.models import Token


def token_get(*, user: User) -> Token | None:
    """The user's token; None when they have none (or revoked it)."""
    return Token.objects.filter(user=user).first()
