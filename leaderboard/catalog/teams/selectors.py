"""Reads of host teams (docs/hosts/teams.md)."""

from __future__ import annotations

from typing import Any

from django.contrib.auth.models import User
from django.db.models import QuerySet

from leaderboard.catalog.teams.models import (
    HostRequest,
    HostTeam,
    HostTeamMembership,
    TeamRole,
    site_team_id,
)
from leaderboard.catalog.teams.permissions import user_team_roles


def host_team_get(*, slug: str) -> HostTeam | None:
    return HostTeam.objects.filter(slug=slug).first()


def host_team_site_get() -> HostTeam:
    """The site team (made on first use)."""
    return HostTeam.objects.get(pk=site_team_id())


def host_team_memberships_of_user(*, user: User) -> QuerySet[HostTeamMembership]:
    """The user's teams and roles (the profile, the client's `whoami`)."""
    return HostTeamMembership.objects.filter(user=user).select_related("team").order_by(
        "team__slug")


def host_team_members_list(*, team: HostTeam) -> QuerySet[HostTeamMembership]:
    return team.memberships.select_related("user").order_by("user__username")


def host_requests_list(*, status: str | None = None) -> QuerySet[HostRequest]:
    requests = HostRequest.objects.select_related("requested_by", "decided_by", "team")
    return requests if status is None else requests.filter(status=status)


def host_requests_of_user(*, user: User) -> QuerySet[HostRequest]:
    """The user's own requests to host, newest first (their /host/ page)."""
    return host_requests_list().filter(requested_by=user)


def host_request_get(*, request_id: int) -> HostRequest | None:
    return host_requests_list().filter(pk=request_id).first()


def host_team_benchmarks_list(*, team: HostTeam) -> QuerySet[Any]:
    """The team's benchmarks, hidden ones too (its page shows them to its members only).
    Read through the reverse relation: this package sits below leaderboard.catalog.models."""
    return team.benchmarks.order_by("slug")


def host_team_of_member(*, slug: str, user: Any) -> HostTeam | None:
    """The team of this slug when the user is a member of it (or a superuser): to anyone
    else a team does not exist (docs/hosts/teams.md)."""
    team = host_team_get(slug=slug)
    if team is None or not user.is_authenticated or not user.is_active:
        return None
    if user.is_superuser or team.pk in user_team_roles(user):
        return team
    return None


def user_by_username(*, username: str) -> User | None:
    return User.objects.filter(username=username, is_active=True).first()


def team_member_ids(*, team_id: int | None, roles: tuple[str, ...]) -> set[int]:
    """The active members of the team holding one of `roles`: who is told of what happens on
    its benchmarks (notifications), as permissions.py decides who may act on them."""
    return set(HostTeamMembership.objects.filter(
        team_id=team_id, role__in=roles, user__is_active=True).values_list("user_id", flat=True))


def host_request_decider_ids() -> set[int]:
    """Who decides requests to host (permissions.host_requests_user_can_decide, as a query):
    the site team's active admins, and active superusers."""
    deciders = team_member_ids(team_id=site_team_id(), roles=(TeamRole.ADMIN,))
    return deciders | set(User.objects.filter(is_active=True, is_superuser=True)
                          .values_list("pk", flat=True))
