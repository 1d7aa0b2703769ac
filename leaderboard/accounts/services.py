"""Writes of accounts: the user's API token (the profile page and `/api/auth/token/`), and
the roles an operator grants and revokes (`manage.py role`).

DRF's `Token` is one key per user (its primary key is the key, `user` is one-to-one), so
"create" means "get or create" and revoking deletes the row; a request with the old key is
refused from then on (docs/api.md §2).

A role is a role in a host team (admin, host, reviewer: leaderboard/catalog/teams, which
decides what each may do, docs/hosts/teams.md) or `staff`, Django's `User.is_staff` flag alone,
which gives no right over any benchmark. Granting one already held, or revoking one not held,
changes nothing and says so (False).
"""

from __future__ import annotations

from django.contrib.auth.models import User
from rest_framework.authtoken.models import Token

from leaderboard.catalog.teams.models import HostTeam, HostTeamMembership, TeamRole
from leaderboard.catalog.teams.services import host_team_member_remove, host_team_member_set

STAFF = "staff"
# The roles `manage.py role` grants: each team role, and Django's staff flag.
ROLES = (*TeamRole.values, STAFF)


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


def user_role_grant(*, user: User, role: str, team: HostTeam) -> bool:
    """Gives `user` the role (in `team`, for a team role: replacing the role they held there);
    False (and nothing written) when they already hold it."""
    _role_check(role)
    if role == STAFF:
        # a conditional UPDATE: two grants at once write once, and the answer is the row's
        return User.objects.filter(pk=user.pk, is_staff=False).update(is_staff=True) > 0
    return host_team_member_set(actor=None, team=team, user=user, role=role)


def user_role_revoke(*, user: User, role: str, team: HostTeam) -> bool:
    """Takes the role from `user` (out of `team`, for a team role); False (and nothing
    written) when they do not hold it. A team keeps at least one admin (HostTeamError)."""
    _role_check(role)
    if role == STAFF:
        return User.objects.filter(pk=user.pk, is_staff=True).update(is_staff=False) > 0
    if not HostTeamMembership.objects.filter(team=team, user=user, role=role).exists():
        return False
    return host_team_member_remove(actor=None, team=team, user=user)
