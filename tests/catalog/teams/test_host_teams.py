"""Host teams own benchmarks: who may host, review and see a benchmark, the team's members,
labs' requests to host, and the migration that moved staff and reviewers into the site team."""

from __future__ import annotations

from typing import Any

import pytest
from django.contrib.auth.models import Group, User
from django.db import connection
from django.db.migrations.executor import MigrationExecutor
from rest_framework.authtoken.models import Token

from leaderboard.catalog.models import Benchmark
from leaderboard.catalog.selectors import benchmark_list_with_role
from leaderboard.catalog.teams.models import HostRequest, HostTeam, HostTeamMembership
from leaderboard.catalog.teams.permissions import (
    benchmark_user_can_host,
    benchmark_user_can_review,
    benchmark_user_can_see,
    host_requests_user_can_decide,
    user_is_maintainer,
)
from leaderboard.catalog.teams.selectors import host_team_site_get
from leaderboard.catalog.teams.services import (
    HostTeamError,
    host_request_create,
    host_request_decide,
    host_team_create,
    host_team_member_remove,
    host_team_member_set,
)
from tests.factories import user_create

pytestmark = pytest.mark.django_db


def _benchmark(slug: str, team: HostTeam | None = None, *, hidden: bool = False) -> Benchmark:
    extra = {} if team is None else {"team": team}
    return Benchmark.objects.create(slug=slug, name=slug, num_classes=2,
                                    main_example_set="test", hidden=hidden, **extra)


def _fresh(user: User) -> User:
    return User.objects.get(pk=user.pk)  # a new request's user: roles read again


@pytest.fixture
def two_labs() -> dict[str, Any]:
    """Lab A and lab B, each with an admin, a host and a reviewer, and a benchmark each
    (B's hidden)."""
    world: dict[str, Any] = {}
    for lab in ("a", "b"):
        admin = user_create(f"{lab}-admin")
        team = host_team_create(slug=f"lab-{lab}", name=f"Lab {lab.upper()}", admin=admin)
        host, reviewer = user_create(f"{lab}-host"), user_create(f"{lab}-reviewer")
        assert host_team_member_set(actor=admin, team=team, user=host, role="host")
        assert host_team_member_set(actor=admin, team=team, user=reviewer, role="reviewer")
        world[lab] = {"team": team, "admin": admin, "host": host, "reviewer": reviewer,
                      "benchmark": _benchmark(f"bench-{lab}", team, hidden=lab == "b")}
    return world


def test_it_lets_each_role_act_on_its_own_teams_benchmarks_only(two_labs: dict[str, Any]
                                                                ) -> None:
    a, b = two_labs["a"], two_labs["b"]
    rights = {}
    for role in ("admin", "host", "reviewer"):
        for lab, target in (("a", a["benchmark"]), ("b", b["benchmark"])):
            user = _fresh(a[role])
            rights[(role, lab)] = (benchmark_user_can_host(user=user, benchmark=target),
                                   benchmark_user_can_review(user=user, benchmark=target),
                                   benchmark_user_can_see(user=user, benchmark=target))
    assert rights == {
        ("admin", "a"): (True, True, True), ("admin", "b"): (False, False, False),
        ("host", "a"): (True, True, True), ("host", "b"): (False, False, False),
        ("reviewer", "a"): (False, True, True), ("reviewer", "b"): (False, False, False),
    }
    # B's own reviewer sees B while it is hidden; a stranger and staff without a role do not
    assert benchmark_user_can_see(user=_fresh(b["reviewer"]), benchmark=b["benchmark"])
    staff = user_create("staff-only", staff=True)
    assert not benchmark_user_can_see(user=staff, benchmark=b["benchmark"])
    assert not benchmark_user_can_host(user=staff, benchmark=a["benchmark"])
    assert benchmark_user_can_see(user=staff, benchmark=a["benchmark"])  # public


def test_it_gives_superusers_every_right_and_site_admins_the_host_requests(
    two_labs: dict[str, Any],
) -> None:
    root = User.objects.create_superuser("root", "root@example.org", "a-long-password-1")
    assert benchmark_user_can_host(user=root, benchmark=two_labs["b"]["benchmark"])
    assert host_requests_user_can_decide(user=root)
    assert not host_requests_user_can_decide(user=_fresh(two_labs["a"]["admin"]))
    site_admin = user_create("site-admin")
    host_team_member_set(actor=None, team=host_team_site_get(), user=site_admin, role="admin")
    assert host_requests_user_can_decide(user=_fresh(site_admin))
    # the site team's admin hosts the site team's benchmarks, not a lab's
    builtin = _benchmark("builtin")
    assert builtin.team.is_site
    assert benchmark_user_can_host(user=_fresh(site_admin), benchmark=builtin)
    assert not benchmark_user_can_host(user=_fresh(site_admin),
                                       benchmark=two_labs["a"]["benchmark"])


def test_it_lists_the_benchmarks_a_user_holds_a_role_on(two_labs: dict[str, Any]) -> None:
    _benchmark("builtin")
    reviewer = _fresh(two_labs["a"]["reviewer"])
    assert list(benchmark_list_with_role(user=reviewer).values_list("slug", flat=True)) == [
        "bench-a"]
    assert list(benchmark_list_with_role(user=reviewer, roles=("admin", "host"))) == []
    assert user_is_maintainer(user=reviewer)
    assert not user_is_maintainer(user=user_create("participant"))


def test_it_keeps_a_last_admin_and_lets_only_admins_change_members(two_labs: dict[str, Any]
                                                                   ) -> None:
    a = two_labs["a"]
    with pytest.raises(HostTeamError) as refused:
        host_team_member_set(actor=_fresh(a["host"]), team=a["team"], user=user_create("x"),
                             role="reviewer")
    assert (refused.value.code, refused.value.http_status) == ("permission_denied", 403)
    with pytest.raises(HostTeamError) as last:
        host_team_member_remove(actor=_fresh(a["admin"]), team=a["team"], user=a["admin"])
    assert last.value.code == "last_admin"
    assert host_team_member_remove(actor=_fresh(a["reviewer"]), team=a["team"],
                                   user=a["reviewer"])  # members may leave
    assert not benchmark_user_can_review(user=_fresh(a["reviewer"]), benchmark=a["benchmark"])
    assert sorted(HostTeamMembership.objects.filter(team=a["team"])
                  .values_list("user__username", "role")) == [("a-admin", "admin"),
                                                               ("a-host", "host")]


def test_it_decides_a_request_to_host_once_and_makes_the_requester_admin(
    settings: Any,
) -> None:
    settings.EVALSERVER_HOST_TEAMS_SELF_SERVICE = False
    lab, root = user_create("lab"), User.objects.create_superuser("root", "r@example.org",
                                                                  "a-long-password-1")
    request = host_request_create(user=lab, slug="vision-lab", name="Vision lab",
                                  reason="our relabelled test set")
    assert request.status == "pending" and not HostTeam.objects.filter(slug="vision-lab")
    with pytest.raises(HostTeamError) as pending:
        host_request_create(user=lab, slug="other", name="Other", reason="")
    assert pending.value.code == "request_pending"
    with pytest.raises(HostTeamError) as denied:
        host_request_decide(actor=user_create("nobody"), request=request, approve=True)
    assert denied.value.code == "permission_denied"
    decided = host_request_decide(actor=root, request=request, approve=True)
    assert decided.team is not None
    assert (decided.status, decided.decided_by, decided.team.slug) == (
        "approved", root, "vision-lab")
    with pytest.raises(HostTeamError) as again:
        host_request_decide(actor=root, request=request, approve=False)
    assert again.value.code == "already_decided"
    assert list(HostTeamMembership.objects.filter(team__slug="vision-lab")
                .values_list("user__username", "role")) == [("lab", "admin")]


def test_it_approves_at_once_where_hosting_is_self_service_only_a_verified_account(
    settings: Any,
) -> None:
    settings.EVALSERVER_HOST_TEAMS_SELF_SERVICE = True
    # an account whose email address is not verified waits for a site admin
    request = host_request_create(user=user_create("lab"), slug="lab", name="Lab", reason="")
    assert (request.status, request.team) == ("pending", None)


@pytest.mark.django_db(transaction=True)
def test_it_moves_staff_and_reviewers_into_the_site_team_in_the_migration() -> None:
    executor = MigrationExecutor(connection)
    before, after = [("leaderboard", "0027_example_set_texts")], [("leaderboard",
                                                                   "0028_host_teams")]
    executor.migrate(before)
    old = executor.loader.project_state(before).apps
    # (the auth and token tables are not touched by these migrations: their models as today)
    staff, reviewer = user_create("staff", staff=True), user_create("reviewer")
    both, plain = user_create("both", staff=True), user_create("plain")
    Group.objects.create(name="reviewers").user_set.add(reviewer, both)
    old.get_model("leaderboard", "Benchmark").objects.create(
        slug="old", name="Old", num_classes=2, main_example_set="test")
    tokens = {user.username: Token.objects.create(user=user).key
              for user in (staff, reviewer, plain)}

    executor = MigrationExecutor(connection)
    executor.migrate(after)
    new = executor.loader.project_state(after).apps
    site = new.get_model("leaderboard", "HostTeam").objects.get(is_site=True)
    assert site.slug == "site"
    assert sorted(new.get_model("leaderboard", "HostTeamMembership").objects.filter(team=site)
                  .values_list("user__username", "role")) == [
        ("both", "admin"), ("reviewer", "reviewer"), ("staff", "admin")]
    assert new.get_model("leaderboard", "Benchmark").objects.get(slug="old").team_id == site.pk
    # nothing lost: the users, their flags, the group and the tokens are as they were
    assert sorted(User.objects.values_list("username", "is_staff")) == [
        ("both", True), ("plain", False), ("reviewer", False), ("staff", True)]
    assert sorted(Group.objects.get(name="reviewers").user_set.values_list(
        "username", flat=True)) == ["both", "reviewer"]
    assert dict(Token.objects.values_list("user__username", "key")) == tokens
    executor = MigrationExecutor(connection)
    executor.migrate(executor.loader.graph.leaf_nodes())  # back to the latest for the others
    assert HostRequest.objects.count() == 0
