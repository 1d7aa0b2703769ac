"""The user's API token: one service for the profile page and `/api/auth/token/`.

DRF's `Token` is one key per user (its primary key is the key, `user` is one-to-one), so
"create" means "get or create" and revoking deletes the row; a request with the old key is
refused from then on (docs/api.md §2).
"""

from __future__ import annotations

from django.contrib.auth.models import User
from rest_framework.authtoken.models import Token


def token_get_or_create(*, user: User) -> tuple[Token, bool]:
    """The user's token, made when they have none; `created` says which."""
    token, created = Token.objects.get_or_create(user=user)
    return token, created


def token_revoke(*, user: User) -> bool:
    """Deletes the user's token; False when they had none."""
    deleted, _ = Token.objects.filter(user=user).delete()
    return deleted > 0
