"""The benchmark a request names, for the user asking, and what they may do with it: the one
door by which the API, the pages and the commands reach a benchmark for a host or reviewer
action (docs/hosts/teams.md). The decisions are permissions.py's; this module only turns them
into the two refusals:

- a benchmark the user may not see (none with that slug, or a hidden one outside its team) is
  `Benchmark.DoesNotExist`: 404, the same answer as for a slug never loaded;
- one they see but may not act on is `BenchmarkAccessRefused` (Django's PermissionDenied):
  403, `permission_denied` in the API's error shape, leaderboard/templates/403.html on a page.
"""

from __future__ import annotations

from enum import Enum

from django.core.exceptions import PermissionDenied

from leaderboard.catalog.models import Benchmark
from leaderboard.catalog.teams.permissions import (
    AnyUser,
    benchmark_user_can_host,
    benchmark_user_can_review,
    benchmark_user_can_see,
)


class Action(Enum):
    SEE = "see"
    REVIEW = "review"
    HOST = "host"


class BenchmarkAccessRefused(PermissionDenied):
    """403: the user sees the benchmark but holds no role in its team that allows this."""


REFUSALS = {
    Action.REVIEW: "only the reviewers, hosts and admins of {team} may review {slug}",
    Action.HOST: "only the hosts and admins of {team} may do this on {slug}",
}


def benchmark_user_may(*, user: AnyUser, benchmark: Benchmark, action: Action) -> bool:
    if action is Action.HOST:
        return benchmark_user_can_host(user=user, benchmark=benchmark)
    if action is Action.REVIEW:
        return benchmark_user_can_review(user=user, benchmark=benchmark)
    return benchmark_user_can_see(user=user, benchmark=benchmark)


def benchmark_check(*, user: AnyUser, benchmark: Benchmark, action: Action) -> Benchmark:
    """`benchmark` if the user may do `action` on it; raises Benchmark.DoesNotExist when they
    may not even see it (hidden, outside its team), BenchmarkAccessRefused otherwise."""
    if not benchmark_user_can_see(user=user, benchmark=benchmark):
        raise Benchmark.DoesNotExist(f"no benchmark {benchmark.slug!r}")
    if not benchmark_user_may(user=user, benchmark=benchmark, action=action):
        raise BenchmarkAccessRefused(REFUSALS[action].format(
            team=f"the team {benchmark.team.slug!r}", slug=repr(benchmark.slug)))
    return benchmark


def benchmark_get_for(*, user: AnyUser, slug: str, action: Action = Action.SEE) -> Benchmark:
    """The benchmark `slug` as `user` may reach it for `action` (see benchmark_check)."""
    benchmark = Benchmark.objects.select_related("team").get(slug=slug)
    return benchmark_check(user=user, benchmark=benchmark, action=action)
