"""`python manage.py scores_recompute [--benchmark SLUG] [--label-set SLUG] [--queue]`: the
stored scores computed again on each label set's newest version, after an upgrade changed what
a metric reports (docs/operators/upgrades.md). Safe to run again: it gives the same numbers.

The work is `leaderboard.review.rescoring.services`: a version compiled by an older builder is
first upgraded (a new version with the same labels), then every scored submission is
re-scored by the version's re-scoring job, here with a progress bar, or by the workers with
--queue.
"""

from __future__ import annotations

import sys
import time
import uuid
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser
from tqdm import tqdm

from leaderboard.catalog.selectors import label_set_version_latest
from leaderboard.review.panel.services import ReviewError, version_rescore_request
from leaderboard.review.rescoring.selectors import UnknownSlugError, label_sets_select
from leaderboard.review.rescoring.services import label_set_version_upgrade, version_rescore_now


class Command(BaseCommand):
    help = ("Re-compute the stored scores on each label set's newest version (all label sets "
            "of all benchmarks unless narrowed). A version compiled by an older builder is "
            "first upgraded to a new version with the same labels. Idempotent.")

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--benchmark", action="append", dest="benchmarks", default=[],
                            metavar="SLUG", help="only this benchmark (repeatable)")
        parser.add_argument("--label-set", action="append", dest="label_sets", default=[],
                            metavar="SLUG", help="only label sets with this slug (repeatable)")
        parser.add_argument("--queue", action="store_true",
                            help="hand the re-scoring to the workers instead of doing it here")

    def handle(self, *args: Any, **options: Any) -> None:
        try:
            label_sets = label_sets_select(benchmarks=options["benchmarks"],
                                           label_sets=options["label_sets"])
        except UnknownSlugError as exc:
            raise CommandError(str(exc)) from exc
        if not label_sets:
            raise CommandError("no label set to re-score (run load_benchmarks first)")
        run = uuid.uuid4().hex[:12]
        for label_set in label_sets:
            name = f"{label_set.benchmark.slug}/{label_set.slug}"
            try:
                upgrade = label_set_version_upgrade(label_set=label_set)
            except ReviewError as exc:
                raise CommandError(f"{name}: {exc.message}") from exc
            if upgrade is not None:
                self.stdout.write(f"{name}: version {upgrade.version.number} adds "
                                  f"{', '.join(upgrade.added)} (sha256 "
                                  f"{upgrade.version.content_hash[:12]})")
                version = upgrade.version
            else:
                found = label_set_version_latest(label_set=label_set)
                if found is None:
                    self.stdout.write(f"{name}: no version, skipped")
                    continue
                version = found
            if options["queue"]:
                version_rescore_request(version_id=version.pk)
                self.stdout.write(f"{name}: version {version.number} queued for re-scoring")
                continue
            self._rescore(name, version.pk, version.number, task_id=f"scores-recompute-{run}")

    def _rescore(self, name: str, version_id: int, number: int, *, task_id: str) -> None:
        started = time.monotonic()
        bar = tqdm(desc=f"{name} v{number}", unit=" submissions", leave=False,
                   file=sys.stderr, disable=not sys.stderr.isatty())

        counted = [0]  # a disabled bar (no terminal) counts nothing itself

        def progress(done: int, total: int) -> None:
            bar.total = total
            bar.update(done - counted[0])
            counted[0] = done

        try:
            outcome = version_rescore_now(version_id=version_id, task_id=f"{task_id}-{version_id}",
                                          progress=progress)
        finally:
            bar.close()
        if outcome != "done":
            raise CommandError(f"{name}: version {number}'s re-scoring job could not be taken "
                               "(out of attempts, or asked for again meanwhile); see the admin's "
                               "re-scoring jobs")
        self.stdout.write(f"{name}: version {number}: {counted[0]} submission(s) re-scored in "
                          f"{time.monotonic() - started:.1f} s")
