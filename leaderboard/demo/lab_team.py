"""The demo's lab: a host team of its own (docs/hosts/teams.md), `demo-lab`, which owns the
hidden demo benchmark while the site team keeps the built-in ones, so a fresh server shows
both kinds of owner. Its admin, host and reviewer accounts have no usable password, like the
demo's other accounts: an operator who wants to log in as one sets it
(`manage.py changepassword demo-lab-host`)."""

from __future__ import annotations

from django.contrib.auth.models import User

from leaderboard.catalog.models import Benchmark
from leaderboard.catalog.services import benchmark_team_set
from leaderboard.catalog.teams.models import HostTeam, TeamRole
from leaderboard.catalog.teams.selectors import host_team_get
from leaderboard.catalog.teams.services import host_team_create, host_team_member_set

DEMO_LAB_SLUG = "demo-lab"
DEMO_LAB_NAME = "Demo vision lab"
# username -> role in the demo lab
DEMO_LAB_MEMBERS = {"demo-lab-admin": TeamRole.ADMIN, "demo-lab-host": TeamRole.HOST,
                    "demo-lab-reviewer": TeamRole.REVIEWER}


def _account(username: str) -> User:
    user, created = User.objects.get_or_create(username=username)
    if created:
        user.set_unusable_password()
        user.save(update_fields=["password"])
    return user


def demo_lab_team_seed() -> HostTeam:
    """The demo lab with its three members, made once (its members' roles set again)."""
    team = host_team_get(slug=DEMO_LAB_SLUG)
    if team is None:
        team = host_team_create(slug=DEMO_LAB_SLUG, name=DEMO_LAB_NAME,
                                admin=_account("demo-lab-admin"))
    for username, role in DEMO_LAB_MEMBERS.items():
        # actor None: the operator's command line (the seed_demo command)
        host_team_member_set(actor=None, team=team, user=_account(username), role=role)
    return team


def demo_lab_benchmark_give(*, benchmark: Benchmark) -> HostTeam:
    """The demo lab (made when needed) now owns `benchmark`."""
    team = demo_lab_team_seed()
    benchmark_team_set(benchmark=benchmark, team=team)
    return team
