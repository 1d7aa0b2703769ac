"""`python manage.py import_mistake_reviews FILE --model NAME`: the expert panel's decisions on
one model's ImageNet mistakes (Vasudevan et al. 2022; `vit3b_mistakes.json`,
`greedy_soups_mistakes.json`) become settled "wrong" decisions in new versions of the ReaL and
multi-label sets, and review items where our labels accept a pair the panel judged wrong.

The work is `leaderboard.review.mistakes.services.mistake_reviews_import`.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from leaderboard.management.author_option import author_from_option, author_option_add
from leaderboard.review.mistakes.services import MistakeFileError, mistake_reviews_import


class Command(BaseCommand):
    help = ("Import an expert panel's review of one model's ImageNet mistakes (the layout of "
            "vit3b_mistakes.json) as settled wrong decisions with their category and severity; "
            "new versions of the ReaL and multi-label sets are re-scored by a worker. Running "
            "it again changes nothing.")

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("path", type=Path, metavar="FILE")
        parser.add_argument("--model", required=True,
                            help='the model whose mistakes the panel reviewed, e.g. "ViT-3B"')
        author_option_add(parser)

    def handle(self, *args: Any, **options: Any) -> None:
        author = author_from_option(options["author"])
        try:
            result = mistake_reviews_import(path=options["path"], model=options["model"],
                                            author=author)
        except MistakeFileError as exc:
            raise CommandError(str(exc)) from exc
        self.stdout.write(f"{result.source}: {result.decisions} decisions on {result.model}'s "
                          f"mistakes; {result.recorded} new, {result.updated} updated")
        for o in result.label_sets:
            what = "created" if o.created else "unchanged, latest is"
            line = (f"imagenet/{o.label_set}: version {o.version} {what}; {o.judged_wrong} "
                    f"newly judged wrong, {o.already_wrong} already wrong, {o.accepted} "
                    f"accepted here (review items: {o.items_created} new")
            line += f", {o.items_decided} already decided)" if o.items_decided else ")"
            if o.not_annotated:
                line += f", {o.not_annotated} on images outside the annotated set (left out)"
            self.stdout.write(line)
