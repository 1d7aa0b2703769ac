"""`python manage.py import_multilabel PATH`: a multi-label file (human_accuracy_v3.0.0.json
layout) becomes new versions of imagenet/multilabel and imagenet/imagenet-m.

The work is `leaderboard.review.label_exchange.multilabel_import`.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from django.contrib.auth.models import User
from django.core.management.base import BaseCommand, CommandError, CommandParser

from leaderboard.review.label_exchange import LabelIOError, multilabel_import


class Command(BaseCommand):
    help = ("Import a multi-label file (human_accuracy_v3.0.0.json layout) as new versions of "
            "imagenet/multilabel and imagenet/imagenet-m (skipped when unchanged); the new "
            "versions are re-scored by a worker.")

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("path", type=Path)
        parser.add_argument("--author", metavar="USERNAME", default=None,
                            help="the user the new versions are credited to")
        parser.add_argument("--note", default="", help="the versions' note")

    def handle(self, *args: Any, **options: Any) -> None:
        author = None
        if options["author"]:
            author = User.objects.filter(username=options["author"]).first()
            if author is None:
                raise CommandError(f"no user {options['author']!r}")
        try:
            results = multilabel_import(path=options["path"], author=author,
                                        note=options["note"])
        except LabelIOError as exc:
            raise CommandError(str(exc)) from exc
        for result in results:
            what = "created" if result.created else "unchanged, latest is"
            self.stdout.write(f"imagenet/{result.label_set}: version {result.version} {what} "
                              f"(sha256 {result.content_hash[:12]})")
