"""`python manage.py add_ground_truth_candidate BENCHMARK LABEL_SET EXAMPLE GUESSED
[--source SOURCE]`: open a ground-truth review candidate on a corrected label set (until label
audits make them). The work is
`leaderboard.review.ground_truth.services.ground_truth_candidate_create`.
"""

from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from leaderboard.catalog.models import LabelSet
from leaderboard.review.ground_truth.services import ground_truth_candidate_create
from leaderboard.review.panel.services import ReviewError


class Command(BaseCommand):
    help = "Open a ground-truth review candidate: EXAMPLE of a corrected set may be GUESSED."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("benchmark")
        parser.add_argument("label_set")
        parser.add_argument("example", type=int)
        parser.add_argument("guessed", type=int, help="the candidate label (a class id)")
        parser.add_argument("--source", default="manual", help='e.g. "audit:12" (default manual)')

    def handle(self, *args: Any, **options: Any) -> None:
        label_set = LabelSet.objects.filter(benchmark__slug=options["benchmark"],
                                            slug=options["label_set"]).first()
        if label_set is None:
            raise CommandError(f"no label set {options['label_set']!r} in benchmark "
                               f"{options['benchmark']!r}")
        try:
            candidate = ground_truth_candidate_create(
                label_set=label_set, example_index=options["example"],
                guessed=options["guessed"], source=options["source"], evidence={})
        except ReviewError as exc:
            raise CommandError(exc.message) from exc
        self.stdout.write(f"candidate {candidate.pk}: {label_set.benchmark.slug}/{label_set.slug} "
                          f"example {candidate.example_index}, given {candidate.given}, "
                          f"guessed {candidate.guessed}")
