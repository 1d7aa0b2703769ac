"""Reads of uploaded bundles: the list and one upload, each only for the hosts of its team
(docs/hosts/teams.md), and the teams a user may upload for."""

from __future__ import annotations

from typing import Any

from django.db.models import QuerySet

from leaderboard.catalog.models import BundleUpload
from leaderboard.catalog.teams.models import HostTeam
from leaderboard.catalog.teams.permissions import HOSTING_ROLES, is_superuser, user_team_roles


def host_team_list_hosted_by(*, user: Any) -> QuerySet[HostTeam]:
    """The teams the user hosts for (admin or host), by slug; a superuser's: every team."""
    if is_superuser(user):
        return HostTeam.objects.order_by("slug")
    teams = [team for team, role in user_team_roles(user).items() if role in HOSTING_ROLES]
    return HostTeam.objects.filter(pk__in=teams).order_by("slug")


def user_hosts_any_team(*, user: Any) -> bool:
    """Whether the bundle pages are for this user (a host or admin of some team)."""
    return bool(is_superuser(user)) or any(
        role in HOSTING_ROLES for role in user_team_roles(user).values())


def bundle_upload_list(*, user: Any) -> QuerySet[BundleUpload]:
    """The uploads for the teams the user hosts for, newest first, with uploader and team."""
    return (BundleUpload.objects.filter(team__in=host_team_list_hosted_by(user=user))
            .select_related("uploaded_by", "team").order_by("-created", "-id"))


def bundle_upload_get(*, upload_id: int, user: Any) -> BundleUpload:
    """One upload of a team the user hosts for; raises BundleUpload.DoesNotExist (also for
    another team's: its existence is that team's business)."""
    return bundle_upload_list(user=user).get(id=upload_id)
