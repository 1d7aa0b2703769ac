"""`python manage.py role grant|revoke --username U --role admin|host|reviewer|staff
[--team SLUG]` and `python manage.py role list [--role ROLE] [--team SLUG]`: the roles in host
teams (docs/hosts/teams.md; the site team, which owns the built-in benchmarks, unless `--team`
names another), and Django's staff flag, which by itself gives no right over any benchmark
(docs/hosts/roles.md).

Thin: the writes are `leaderboard.accounts.services.user_role_grant` / `user_role_revoke`, the
read `leaderboard.accounts.selectors.user_roles_list`. An unknown user or team stops the
command with an error naming it (exit status 1); an unknown role is refused by the argument
parser; a grant of a role already held (or a revoke of one not held) says so and changes
nothing. Granting a team role to a member of the team replaces the role they held there.
"""

from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from leaderboard.accounts.selectors import ROLES, STAFF, user_find, user_roles_list
from leaderboard.accounts.services import user_role_grant, user_role_revoke
from leaderboard.catalog.teams.models import HostTeam
from leaderboard.catalog.teams.selectors import host_team_get, host_team_site_get
from leaderboard.catalog.teams.services import HostTeamError


class Command(BaseCommand):
    help = ("Grant, revoke or list the roles in host teams (admin, host, reviewer; the site "
            "team unless --team) and the staff flag (which gives no benchmark right).")

    def add_arguments(self, parser: CommandParser) -> None:
        actions = parser.add_subparsers(dest="action", required=True, metavar="grant|revoke|list")
        for action, text in (("grant", "give a user a role"), ("revoke", "take a role away")):
            sub = actions.add_parser(action, help=text)
            sub.add_argument("--username", required=True)
            sub.add_argument("--role", required=True, choices=ROLES)
            sub.add_argument("--team", metavar="SLUG", default=None,
                             help="the host team (default: the site team)")
        listing = actions.add_parser("list", help="the users who hold a role")
        listing.add_argument("--role", choices=ROLES, help="only this role's holders")
        listing.add_argument("--team", metavar="SLUG", default=None,
                             help="only this team's roles (and staff)")

    def _team(self, slug: str | None) -> HostTeam:
        if slug is None:
            return host_team_site_get()
        team = host_team_get(slug=slug)
        if team is None:
            raise CommandError(f"no host team {slug!r}")
        return team

    def handle(self, *args: Any, **options: Any) -> None:
        action, role = options["action"], options["role"]
        if action == "list":
            team = None if options["team"] is None else self._team(options["team"])
            holders = user_roles_list(role=role, team=team)
            for username, roles in holders:
                self.stdout.write(f"{username}\t{','.join(roles)}")
            if not holders:
                self.stdout.write(f"no user holds {'the ' + role + ' role' if role else 'a role'}")
            return
        username = options["username"]
        user = user_find(username=username)
        if user is None:
            raise CommandError(f"no user {username!r}")
        team = self._team(options["team"])
        held = role if role == STAFF else f"{role} of {team.slug}"
        try:
            if action == "grant":
                changed = user_role_grant(user=user, role=role, team=team)
            else:
                changed = user_role_revoke(user=user, role=role, team=team)
        except HostTeamError as error:
            raise CommandError(error.message) from None
        if action == "grant":
            self.stdout.write(f"granted {held} to {username}" if changed
                              else f"{username} already holds {held}: nothing changed")
        else:
            self.stdout.write(f"revoked {held} from {username}" if changed
                              else f"{username} does not hold {held}: nothing changed")
