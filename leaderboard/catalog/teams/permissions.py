"""Who may do what to a benchmark, decided here and nowhere else (docs/hosts/teams.md).

The rules are `rules` predicates registered as Django permissions, so the API, the pages, the
admin and the management commands all ask `user.has_perm(PERMISSION, benchmark)` (through the
typed helpers below) and get the same answer:

- a team's **admins** manage its members and do everything its hosts do;
- its **hosts** add and update its benchmarks' bundles, hide and show them, open, schedule and
  reveal phases, withdraw submissions with a reason, run audits and see every submission of
  the team's benchmarks, and review them;
- its **reviewers** review its benchmarks' queues (and see them while hidden);
- superusers may do everything; a site admin (an admin of the site team) decides requests to
  host. Nobody holds a right over another team's benchmarks by being staff.

A benchmark that is hidden exists only for its team's members: to everyone else it is 404.
"""

from __future__ import annotations

from typing import Any

import rules
from django.contrib.auth.models import AnonymousUser, User

from leaderboard.catalog.teams.models import HostTeam, HostTeamMembership, TeamRole

# A benchmark (leaderboard.catalog.models.Benchmark, which this module sits below: it is
# read by its `team_id` and `hidden` only).
Benchmark = Any

HOST_BENCHMARK = "leaderboard.host_benchmark"
REVIEW_BENCHMARK = "leaderboard.review_benchmark"
SEE_BENCHMARK = "leaderboard.see_benchmark"
MANAGE_TEAM = "leaderboard.manage_host_team"
HOST_FOR_TEAM = "leaderboard.host_for_team"
DECIDE_HOST_REQUESTS = "leaderboard.decide_host_requests"

# Each role holds the rights of those after it.
HOSTING_ROLES = (TeamRole.ADMIN, TeamRole.HOST)
REVIEWING_ROLES = (TeamRole.ADMIN, TeamRole.HOST, TeamRole.REVIEWER)

AnyUser = User | AnonymousUser


def user_team_roles(user: Any) -> dict[int, str]:
    """The user's role in each team, by team id: read once per user object (a request's)."""
    if not user.is_authenticated or not user.is_active:
        return {}
    cached: dict[int, str] | None = getattr(user, "_host_team_roles", None)
    if cached is None:
        cached = dict(HostTeamMembership.objects.filter(user_id=user.pk)
                      .values_list("team_id", "role"))
        user._host_team_roles = cached
    return cached


def user_roles_forget(user: Any) -> None:
    """Drop the roles read for this user object (after its memberships changed)."""
    if hasattr(user, "_host_team_roles"):
        del user._host_team_roles


def _team_id(target: Benchmark | HostTeam | None) -> int | None:
    # (a benchmark by its `team_id`: this module sits below leaderboard.catalog.models)
    if isinstance(target, HostTeam):
        return target.pk
    return getattr(target, "team_id", None)


def _holds(roles: tuple[str, ...]) -> Any:
    @rules.predicate
    def holds(user: Any, target: Benchmark | HostTeam | None) -> bool:
        team_id = _team_id(target)
        return team_id is not None and user_team_roles(user).get(team_id) in roles
    return holds


@rules.predicate
def is_superuser(user: Any) -> bool:
    return bool(user.is_authenticated and user.is_active and user.is_superuser)


@rules.predicate
def is_site_admin(user: Any) -> bool:
    site = HostTeam.objects.filter(is_site=True).values_list("pk", flat=True).first()
    return site is not None and user_team_roles(user).get(site) == TeamRole.ADMIN


@rules.predicate
def is_public_benchmark(user: Any, benchmark: Benchmark | None) -> bool:
    return benchmark is not None and not benchmark.hidden


is_team_admin = _holds((TeamRole.ADMIN,))
is_team_host = _holds(HOSTING_ROLES)
is_team_reviewer = _holds(REVIEWING_ROLES)

rules.add_perm(HOST_BENCHMARK, is_superuser | is_team_host)
rules.add_perm(REVIEW_BENCHMARK, is_superuser | is_team_reviewer)
rules.add_perm(SEE_BENCHMARK, is_public_benchmark | is_superuser | is_team_reviewer)
rules.add_perm(MANAGE_TEAM, is_superuser | is_team_admin)
rules.add_perm(HOST_FOR_TEAM, is_superuser | is_team_host)
rules.add_perm(DECIDE_HOST_REQUESTS, is_superuser | is_site_admin)


def benchmark_user_can_host(*, user: AnyUser, benchmark: Benchmark) -> bool:
    """Host actions on this benchmark: bundles, visibility, phases, withdrawals, audits, every
    submission."""
    return bool(rules.has_perm(HOST_BENCHMARK, user, benchmark))


def benchmark_user_can_review(*, user: AnyUser, benchmark: Benchmark) -> bool:
    """Work this benchmark's review queue."""
    return bool(rules.has_perm(REVIEW_BENCHMARK, user, benchmark))


def benchmark_user_can_see(*, user: AnyUser, benchmark: Benchmark) -> bool:
    """Whether the benchmark exists for this user (a hidden one, only for its team)."""
    return bool(rules.has_perm(SEE_BENCHMARK, user, benchmark))


def team_user_can_manage(*, user: AnyUser, team: HostTeam) -> bool:
    """Add, change and remove the team's members."""
    return bool(rules.has_perm(MANAGE_TEAM, user, team))


def team_user_can_host(*, user: AnyUser, team: HostTeam) -> bool:
    """Add benchmarks for this team (upload a bundle in its name)."""
    return bool(rules.has_perm(HOST_FOR_TEAM, user, team))


def host_requests_user_can_decide(*, user: AnyUser) -> bool:
    """Approve or refuse labs' requests to host."""
    return bool(rules.has_perm(DECIDE_HOST_REQUESTS, user))


def user_is_maintainer(*, user: AnyUser) -> bool:
    """Holds any team role, or is a superuser: the review link in the navigation, the MFA
    requirement (docs/operators/settings.md)."""
    return bool(is_superuser(user)) or bool(user_team_roles(user))
