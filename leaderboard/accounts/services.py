"""Writes of accounts: the user's API token (the profile page and `/api/auth/token/`), and
the roles an operator grants and revokes (`manage.py role`).

DRF's `Token` is one key per user (its primary key is the key, `user` is one-to-one), so
"create" means "get or create" and revoking deletes the row; a request with the old key is
refused from then on (docs/api.md §2).

A role (leaderboard/common/roles.py) is `User.is_staff` or membership of the `reviewers` group;
granting one already held, or revoking one not held, changes nothing and says so (False).
"""

from __future__ import annotations

from django.contrib.auth.models import Group, User
from django.db import transaction
from rest_framework.authtoken.models import Token

from leaderboard.common.roles import REVIEWER, REVIEWERS_GROUP, ROLES, STAFF


def token_get_or_create(*, user: User) -> tuple[Token, bool]:
    """The user's token, made when they have none; `created` says which."""
    token, created = Token.objects.get_or_create(user=user)
    return token, created


def token_revoke(*, user: User) -> bool:
    """Deletes the user's token; False when they had none."""
    deleted, _ = Token.objects.filter(user=user).delete()
    return deleted > 0


def _role_check(role: str) -> None:
    if role not in ROLES:
        raise ValueError(f"unknown role {role!r}: one of {', '.join(ROLES)}")


def user_role_grant(*, user: User, role: str) -> bool:
    """Gives `user` the role; False (and nothing written) when they already hold it."""
    _role_check(role)
    with transaction.atomic():
        if role == STAFF:
            # a conditional UPDATE: two grants at once write once, and the answer is the row's
            return User.objects.filter(pk=user.pk, is_staff=False).update(is_staff=True) > 0
        group, _ = Group.objects.get_or_create(name=REVIEWERS_GROUP)
        if user.groups.filter(pk=group.pk).exists():
            return False
        user.groups.add(group)
        return True


def user_role_revoke(*, user: User, role: str) -> bool:
    """Takes the role from `user`; False (and nothing written) when they do not hold it."""
    _role_check(role)
    if role == STAFF:
        return User.objects.filter(pk=user.pk, is_staff=True).update(is_staff=False) > 0
    assert role == REVIEWER
    removed, _ = User.groups.through.objects.filter(
        user_id=user.pk, group__name=REVIEWERS_GROUP).delete()
    return removed > 0
