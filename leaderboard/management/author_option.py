"""The `--author USERNAME` option of the commands that make label-set versions."""

from __future__ import annotations

from django.contrib.auth.models import User
from django.core.management.base import CommandError, CommandParser

from leaderboard.accounts.selectors import user_find


def author_option_add(parser: CommandParser) -> None:
    parser.add_argument("--author", metavar="USERNAME", default=None,
                        help="the user the new versions are credited to")


def author_from_option(username: str | None) -> User | None:
    """The user `--author` names (None without the option); CommandError if there is none."""
    if not username:
        return None
    author = user_find(username=username)
    if author is None:
        raise CommandError(f"no user {username!r}")
    return author
