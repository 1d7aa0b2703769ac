"""Reads of host teams (docs/hosts/teams.md)."""

from __future__ import annotations

from django.contrib.auth.models import User
from django.db.models import QuerySet

from leaderboard.catalog.teams.models import (
    HostRequest,
    HostTeam,
    HostTeamMembership,
    site_team_id,
)


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
