"""`python manage.py seed_demo`: submit the demo models (real published predictions) as the
user `demo`, so a fresh server has a leaderboard. The work is
`leaderboard.demo.seeding.demo_seed`.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError, CommandParser

from leaderboard.demo.hidden_benchmark import hidden_demo_seed
from leaderboard.demo.seeding import demo_seed, demo_submissions, demo_submissions_wait
from leaderboard.submissions.models import Submission


class Command(BaseCommand):
    help = (
        "Submit real published predictions (30 CIFAR-10 models, cleanlab's cross-validated "
        "ImageNet ResNet-50, CIFAR-10 and MNIST probabilities, and its cross-validated "
        "predictions on CIFAR-100, Caltech-256, 20 Newsgroups and IMDB) as public submissions "
        "of the user 'demo'; and host the hidden demo benchmark cifar10-hidden (CIFAR-10.1 "
        "v6's labels hidden, split 50/50) with the 30 CIFAR-10 models, one participant each. "
        "Safe to run again: a model already submitted is skipped, and so is a benchmark that "
        "is not loaded."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument(
            "--data-dir", type=Path, default=None,
            help="the data directory (default: the EVALSERVER_DATA_DIR setting)",
        )
        parser.add_argument(
            "--wait", action="store_true",
            help="then wait until every demo submission is scored or failed (needs a worker)",
        )
        parser.add_argument(
            "--timeout", type=float, default=900.0, metavar="SECONDS",
            help="with --wait: give up after this long (default 900)",
        )

    def handle(self, *args: Any, **options: Any) -> None:
        data_dir: Path = options["data_dir"] or Path(settings.EVALSERVER_DATA_DIR)
        if not data_dir.is_dir():
            raise CommandError(f"the data directory {data_dir} does not exist "
                               "(docs/operators/data.md; set EVALSERVER_DATA_DIR)")
        report = demo_seed(data_dir=data_dir, echo=self.stdout.write)
        hidden_demo_seed(data_dir=data_dir, report=report, echo=self.stdout.write)
        self.stdout.write(f"demo: {len(report.queued)} queued, {len(report.skipped)} skipped")
        if not options["wait"]:
            return
        counts = demo_submissions_wait(timeout=options["timeout"],
                                                echo=self.stdout.write)
        pending = counts.get("queued", 0) + counts.get("running", 0)
        if pending:
            raise CommandError(f"{pending} demo submission(s) still queued or running after "
                               f"{options['timeout']:g} s: is a worker running "
                               "(celery -A evalserver worker -Q cpu)?")
        failed = demo_submissions().filter(status=Submission.Status.FAILED)
        for submission in failed.select_related("benchmark"):
            self.stderr.write(f"failed: {submission.benchmark.slug} / {submission.model_name} "
                              f"(#{submission.pk}): {submission.failure_reason}")
        if failed.exists():
            raise CommandError(f"{failed.count()} demo submission(s) failed; see above")
        self.stdout.write(self.style.SUCCESS(f"all {counts.get('scored', 0)} demo submissions "
                                             "are scored"))
