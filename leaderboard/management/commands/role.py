"""`python manage.py role grant|revoke --username U --role reviewer|staff` and
`python manage.py role list [--role reviewer|staff]`: who may review and who is staff, without
the admin site (the roles: leaderboard/common/roles.py; docs/api.md §1, "Maintainers").

Thin: the writes are `leaderboard.accounts.services.user_role_grant` / `user_role_revoke`, the
read `leaderboard.accounts.selectors.user_roles_list`. An unknown user stops the command with
an error naming them (exit status 1); an unknown role is refused by the argument parser; a
grant of a role already held (or a revoke of one not held) says so and changes nothing.
"""

from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from leaderboard.accounts.selectors import user_find, user_roles_list
from leaderboard.accounts.services import user_role_grant, user_role_revoke
from leaderboard.common.roles import ROLES


class Command(BaseCommand):
    help = "Grant, revoke or list the reviewer and staff roles."

    def add_arguments(self, parser: CommandParser) -> None:
        actions = parser.add_subparsers(dest="action", required=True, metavar="grant|revoke|list")
        for action, text in (("grant", "give a user a role"), ("revoke", "take a role away")):
            sub = actions.add_parser(action, help=text)
            sub.add_argument("--username", required=True)
            sub.add_argument("--role", required=True, choices=ROLES)
        listing = actions.add_parser("list", help="the users who hold a role")
        listing.add_argument("--role", choices=ROLES, help="only this role's holders")

    def handle(self, *args: Any, **options: Any) -> None:
        action, role = options["action"], options["role"]
        if action == "list":
            holders = user_roles_list(role=role)
            for username, roles in holders:
                self.stdout.write(f"{username}\t{','.join(roles)}")
            if not holders:
                self.stdout.write(f"no user holds {'the ' + role + ' role' if role else 'a role'}")
            return
        username = options["username"]
        user = user_find(username=username)
        if user is None:
            raise CommandError(f"no user {username!r}")
        if action == "grant":
            if user_role_grant(user=user, role=role):
                self.stdout.write(f"granted {role} to {username}")
            else:
                self.stdout.write(f"{username} already holds {role}: nothing changed")
        elif user_role_revoke(user=user, role=role):
            self.stdout.write(f"revoked {role} from {username}")
        else:
            self.stdout.write(f"{username} does not hold {role}: nothing changed")
