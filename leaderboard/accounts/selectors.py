"""Reads of accounts: the user's API token (profile page), a user by name and the holders of
each role (commands), whether a user has a second factor or only unverified addresses (the
token endpoint)."""

from __future__ import annotations

from allauth.account.models import EmailAddress
from allauth.mfa.models import Authenticator
from django.contrib.auth.models import User
from django.db.models import Exists, OuterRef, Q
from rest_framework.authtoken.models import Token

from leaderboard.common.roles import REVIEWER, REVIEWERS_GROUP, ROLES, STAFF


def token_get(*, user: User) -> Token | None:
    """The user's token; None when they have none (or revoked it)."""
    return Token.objects.filter(user=user).first()


def user_find(*, username: str) -> User | None:
    """The user with this username; None when there is none."""
    return User.objects.filter(username=username).first()


def user_roles_list(*, role: str | None = None) -> list[tuple[str, list[str]]]:
    """(username, the roles they hold, as ROLES orders them) of every user who holds one, by
    username; only the holders of `role` when it is given. Roles as granted: staff act as
    reviewers without being in the group, and are listed as `staff` only."""
    if role is not None and role not in ROLES:
        raise ValueError(f"unknown role {role!r}: one of {', '.join(ROLES)}")
    in_group = User.groups.through.objects.filter(user_id=OuterRef("pk"),
                                                  group__name=REVIEWERS_GROUP)
    users = User.objects.annotate(reviewer=Exists(in_group))
    if role == STAFF:
        users = users.filter(is_staff=True)
    elif role == REVIEWER:
        users = users.filter(reviewer=True)
    else:
        users = users.filter(Q(is_staff=True) | Q(reviewer=True))
    return [(username, [name for name, held in ((REVIEWER, reviewer), (STAFF, is_staff)) if held])
            for username, reviewer, is_staff
            in users.order_by("username").values_list("username", "reviewer", "is_staff")]


def user_mfa_active(*, user: User) -> bool:
    """Whether the user has a second factor (an allauth.mfa authenticator: TOTP, recovery
    codes) that logging in asks for."""
    return Authenticator.objects.filter(user=user).exists()


def user_address_unverified(*, user: User) -> bool:
    """Whether the user has email addresses and none of them verified (an account made before
    sign-up asked for one, with none yet, is not: it is asked for one on the web)."""
    addresses = EmailAddress.objects.filter(user=user)
    return addresses.exists() and not addresses.filter(verified=True).exists()
