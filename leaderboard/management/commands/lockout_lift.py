"""`python manage.py lockout_lift (--username U | --address A | --all)`: lift a failed-login
lockout before its window ends (leaderboard/accounts/login_throttle.py), e.g. for a user locked
out by someone guessing at their account, or an office behind one address. A username's counts
are its own and those of its pairs with every address; an address's, its own and those of its
pairs with every username. The work is `leaderboard.accounts.login_throttle.login_lockout_lift`.
"""

from __future__ import annotations

import ipaddress
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from evalserver.client_address import UNKNOWN
from leaderboard.accounts.login_throttle import login_lockout_lift


class Command(BaseCommand):
    help = "Clear the failed-login counts of a username, a client address, or everyone."

    def add_arguments(self, parser: CommandParser) -> None:
        which = parser.add_mutually_exclusive_group(required=True)
        which.add_argument("--username", help="the username's counts, alone and with each "
                                              "address (as typed at login)")
        which.add_argument("--address", help="a client address's counts, alone and with each "
                                             "username (IPv4 or IPv6, or `unknown`: the "
                                             "clients whose proxy wrote no usable address)")
        which.add_argument("--all", action="store_true", help="every count")

    def handle(self, *args: Any, **options: Any) -> None:
        address = options["address"]
        if address is not None:
            address = address.strip()
        if address not in (None, UNKNOWN):
            try:
                # written as evalserver/client_address.py writes REMOTE_ADDR
                address = str(ipaddress.ip_address(address))
            except ValueError as exc:
                raise CommandError(f"--address {address!r} is not an IP address "
                                   f"(nor {UNKNOWN!r})") from exc
        cleared = login_lockout_lift(username=options["username"], address=address,
                                     everyone=options["all"])
        self.stdout.write(f"cleared {cleared} failed-login count{'s' if cleared != 1 else ''}")
