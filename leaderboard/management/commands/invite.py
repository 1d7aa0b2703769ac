"""`python manage.py invite [--email ADDRESS] [--count N] [--by USERNAME]`: make sign-up
invitations for a server whose sign-up is by invitation (EVALSERVER_SIGNUP_MODE=invitation),
printing each code and the sign-up page to give it on. Each code signs up one account, once
(leaderboard/accounts/invitations.py); with --email, only that address."""

from __future__ import annotations

from typing import Any

from django.contrib.auth.models import User
from django.core.exceptions import ValidationError
from django.core.management.base import BaseCommand, CommandError, CommandParser
from django.core.validators import validate_email

from leaderboard.accounts.invitations import invitation_create


class Command(BaseCommand):
    help = "Make sign-up invitations (codes), for EVALSERVER_SIGNUP_MODE=invitation."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--email", default="", help="the only address the invitation "
                                                        "signs up (default: any)")
        parser.add_argument("--count", type=int, default=1, help="how many (default 1)")
        parser.add_argument("--by", default=None, help="the username recorded as its maker")

    def handle(self, *args: Any, **options: Any) -> None:
        email = options["email"].strip()
        if email:
            try:
                validate_email(email)
            except ValidationError as exc:
                raise CommandError(f"--email {email!r} is not an email address") from exc
        if options["count"] < 1:
            raise CommandError("--count must be at least 1")
        maker = None
        if options["by"]:
            maker = User.objects.filter(username=options["by"]).first()
            if maker is None:
                raise CommandError(f"no user {options['by']!r}")
        for _ in range(options["count"]):
            invitation = invitation_create(created_by=maker, email=email)
            self.stdout.write(invitation.code)
