"""The demo's lab (leaderboard/demo/lab_team.py): a team of its own with an admin, a host and
a reviewer, given a benchmark by `benchmark_team_set`; seeding it again changes nothing."""

from __future__ import annotations

import pytest

from leaderboard.catalog.models import Benchmark
from leaderboard.catalog.services import benchmark_team_set
from leaderboard.catalog.teams.models import HostTeam, HostTeamMembership
from leaderboard.catalog.teams.permissions import benchmark_user_can_host
from leaderboard.catalog.teams.selectors import host_team_site_get
from leaderboard.demo.lab_team import demo_lab_benchmark_give

pytestmark = pytest.mark.django_db


def test_it_gives_the_demo_benchmark_to_the_demo_lab_once() -> None:
    benchmark = Benchmark.objects.create(slug="lab-bench", name="Lab bench", num_classes=2,
                                         main_example_set="test")
    assert benchmark.team_id == host_team_site_get().pk  # a new benchmark's default owner

    for _ in range(2):  # idempotent
        team = demo_lab_benchmark_give(benchmark=Benchmark.objects.get(pk=benchmark.pk))

    assert (team.slug, team.name, HostTeam.objects.filter(slug="demo-lab").count()) == (
        "demo-lab", "Demo vision lab", 1)
    assert list(HostTeamMembership.objects.filter(team=team).order_by("user__username")
                .values_list("user__username", "role")) == [
        ("demo-lab-admin", "admin"), ("demo-lab-host", "host"),
        ("demo-lab-reviewer", "reviewer")]
    owned = Benchmark.objects.select_related("team").get(pk=benchmark.pk)
    assert owned.team.slug == "demo-lab"
    host = HostTeamMembership.objects.get(team=team, role="host").user
    assert benchmark_user_can_host(user=host, benchmark=owned) is True
    assert not host.has_usable_password()
    assert benchmark_team_set(benchmark=owned, team=team) is False
