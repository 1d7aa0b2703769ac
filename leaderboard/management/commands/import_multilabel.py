"""`python manage.py import_multilabel PATH`: a multi-label file (human_accuracy_v3.0.0.json
layout) becomes new versions of imagenet/multilabel and imagenet/imagenet-m.

The work is `leaderboard.review.label_exchange.multilabel_import`.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from leaderboard.management.author_option import author_from_option, author_option_add
from leaderboard.review.label_exchange import LabelIOError, multilabel_import


class Command(BaseCommand):
    help = ("Import a multi-label file (human_accuracy_v3.0.0.json layout) as new versions of "
            "imagenet/multilabel and imagenet/imagenet-m (skipped when unchanged); the new "
            "versions are re-scored by a worker.")

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("path", type=Path)
        author_option_add(parser)
        parser.add_argument("--note", default="", help="the versions' note")

    def handle(self, *args: Any, **options: Any) -> None:
        author = author_from_option(options["author"])
        try:
            results = multilabel_import(path=options["path"], author=author,
                                        note=options["note"])
        except LabelIOError as exc:
            raise CommandError(str(exc)) from exc
        for result in results:
            what = "created" if result.created else "unchanged, latest is"
            self.stdout.write(f"imagenet/{result.label_set}: version {result.version} {what} "
                              f"(sha256 {result.content_hash[:12]})")
