"""`python manage.py benchmark_add PATH [--update] [--team SLUG]`: add a benchmark from its
bundle (a manifest or a .zip; docs/bundles.md) for a host team (default: the site team;
docs/hosts/teams.md).

The work is `leaderboard.catalog.bundle_loading.benchmark_bundle_add`; this command only
prints its report, or the refusal (`file: field: problem [code]`).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from leaderboard.catalog.bundle_loading import benchmark_bundle_add
from leaderboard.catalog.services import CatalogError
from leaderboard.catalog.teams.models import HostTeam, site_team_id
from workers.scoring.bundles import BundleError


class Command(BaseCommand):
    help = (
        "Add a benchmark from its bundle (a .toml manifest or a .zip bundle): everything is "
        "checked first, then the benchmark, its sets and version 1 of each label set are "
        "written in one transaction. Safe to run again."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("path", type=Path, help="the manifest (.toml) or the .zip bundle")
        parser.add_argument(
            "--update", action="store_true",
            help="add the bundle's new label sets to a loaded benchmark and rewrite its details",
        )
        parser.add_argument(
            "--team", default=None,
            help="the slug of the host team a new benchmark belongs to, and whose benchmark an "
                 "update must be (default: the site team)",
        )
        parser.add_argument(
            "--data-dir", type=Path, default=None,
            help='where a bundle with files = "data" reads its files (default: the '
                 "EVALSERVER_DATA_DIR setting)",
        )

    def handle(self, *args: Any, **options: Any) -> None:
        def echo(level: str, text: str) -> None:
            if level == "error":
                self.stderr.write(text, self.style.ERROR)
            else:
                self.stdout.write(text, self.style.WARNING if level == "warning" else None)

        team_id = site_team_id()
        if options["team"] is not None:
            team = HostTeam.objects.filter(slug=options["team"]).first()
            if team is None:
                raise CommandError(f"no host team {options['team']!r}")
            team_id = team.pk
        try:
            benchmark_bundle_add(path=options["path"], update=options["update"],
                                 team_id=team_id, data_dir=options["data_dir"], echo=echo)
        except BundleError as exc:
            raise CommandError(f"{exc} [{exc.code}]") from exc
        except CatalogError as exc:
            raise CommandError(str(exc)) from exc
