"""Reads of accounts: the user's API token (profile page), a user by name and the holders of
each role (commands), whether a user has a second factor or only unverified addresses (the
token endpoint)."""

from __future__ import annotations

from allauth.account.models import EmailAddress
from allauth.mfa.models import Authenticator
from django.contrib.auth.models import User
from rest_framework.authtoken.models import Token

from leaderboard.catalog.teams.models import HostTeam, HostTeamMembership, TeamRole

STAFF = "staff"
ROLES = (*TeamRole.values, STAFF)


def token_get(*, user: User) -> Token | None:
    """The user's token; None when they have none (or revoked it)."""
    return Token.objects.filter(user=user).first()


def user_find(*, username: str) -> User | None:
    """The user with this username; None when there is none."""
    return User.objects.filter(username=username).first()


def user_roles_list(*, role: str | None = None,
                    team: HostTeam | None = None) -> list[tuple[str, list[str]]]:
    """(username, the roles they hold) of every user who holds one, by username: each team
    role as `team:role` (by team slug), then `staff` (Django's flag: no benchmark right).
    Only the holders of `role` when given; only `team`'s roles (and staff) when given."""
    if role is not None and role not in ROLES:
        raise ValueError(f"unknown role {role!r}: one of {', '.join(ROLES)}")
    memberships = HostTeamMembership.objects.select_related("team", "user")
    if team is not None:
        memberships = memberships.filter(team=team)
    held: dict[str, list[tuple[str, str]]] = {}
    for membership in memberships.order_by("team__slug"):
        held.setdefault(membership.user.username, []).append(
            (membership.role, f"{membership.team.slug}:{membership.role}"))
    for username in User.objects.filter(is_staff=True).values_list("username", flat=True):
        held.setdefault(username, []).append((STAFF, STAFF))
    return [(username, [name for _, name in roles]) for username, roles in sorted(held.items())
            if role is None or any(kind == role for kind, _ in roles)]


def user_mfa_active(*, user: User) -> bool:
    """Whether the user has a second factor (an allauth.mfa authenticator: TOTP, recovery
    codes) that logging in asks for."""
    return Authenticator.objects.filter(user=user).exists()


def user_address_unverified(*, user: User) -> bool:
    """Whether the user has email addresses and none of them verified (an account made before
    sign-up asked for one, with none yet, is not: it is asked for one on the web)."""
    addresses = EmailAddress.objects.filter(user=user)
    return addresses.exists() and not addresses.filter(verified=True).exists()
