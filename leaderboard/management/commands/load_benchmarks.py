"""`python manage.py load_benchmarks`: load the built-in benchmarks (their bundles in
benchmarks/) from the data directory.

The work is `leaderboard.catalog.bundle_loading.benchmark_catalog_load`; this command only
reads the settings and options and prints the report.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError, CommandParser

from leaderboard.catalog.bundle_loading import benchmark_catalog_load
from leaderboard.catalog.services import CatalogError


class Command(BaseCommand):
    help = (
        "Compile every label set of the built-in bundles (benchmarks/*.toml) whose files are "
        "in the data directory and "
        "make sure the database has its benchmark, example set, label set and version 1. "
        "Safe to run again: it creates only what is missing."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument(
            "--benchmark", action="append", dest="benchmarks", metavar="SLUG",
            help="load only this benchmark (repeatable); default: every built-in bundle",
        )
        parser.add_argument(
            "--data-dir", type=Path, default=None,
            help="the data directory (default: the EVALSERVER_DATA_DIR setting)",
        )

    def handle(self, *args: Any, **options: Any) -> None:
        data_dir: Path = options["data_dir"] or Path(settings.EVALSERVER_DATA_DIR)
        styles = {"warning": self.style.WARNING, "error": self.style.ERROR}

        def echo(level: str, text: str) -> None:
            if level == "error":
                self.stderr.write(text, styles[level])
            else:
                self.stdout.write(text, styles.get(level))

        try:
            report = benchmark_catalog_load(
                data_dir=data_dir,
                cache_dir=Path(settings.EVALSERVER_CACHE_DIR),
                multilabel_file=settings.EVALSERVER_MULTILABEL_FILE,
                benchmark_slugs=options["benchmarks"],
                echo=echo,
            )
        except CatalogError as exc:
            raise CommandError(str(exc)) from exc
        if report.errors:
            raise CommandError(
                f"{report.errors} label set(s) could not be compiled; see the messages above."
            )
