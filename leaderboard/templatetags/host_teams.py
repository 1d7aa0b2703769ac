"""`{% profile_teams user %}`: the profile's section on host teams (the user's teams and roles,
and the way to ask to host), without the profile's view knowing of teams."""

from __future__ import annotations

from typing import Any

from django import template

from leaderboard.catalog.teams.permissions import host_requests_user_can_decide
from leaderboard.catalog.teams.selectors import host_team_memberships_of_user

register = template.Library()


@register.inclusion_tag("leaderboard/_profile_teams.html")
def profile_teams(user: Any) -> dict[str, Any]:
    return {"memberships": list(host_team_memberships_of_user(user=user)),
            "can_decide": host_requests_user_can_decide(user=user)}
