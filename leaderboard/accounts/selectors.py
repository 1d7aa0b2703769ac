"""Reads of accounts: the user's API token (profile page), a user by name (commands)."""

from __future__ import annotations

from django.contrib.auth.models import User
from rest_framework.authtoken.models import Token


def token_get(*, user: User) -> Token | None:
    """The user's token; None when they have none (or revoked it)."""
    return Token.objects.filter(user=user).first()


def user_find(*, username: str) -> User | None:
    """The user with this username; None when there is none."""
    return User.objects.filter(username=username).first()
