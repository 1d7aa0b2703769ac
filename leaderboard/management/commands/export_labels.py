"""`python manage.py export_labels BENCHMARK LABEL_SET [--version N] [-o FILE]`: one label-set
version as JSON in its source file's layout (multilabel: human_accuracy_v3.0.0.json; real:
real.json).

The work is `leaderboard.review.label_exchange.labels_export`.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from leaderboard.review.label_exchange import LabelIOError, labels_export


class Command(BaseCommand):
    help = ("Write a multilabel or real label-set version as JSON in the layout of its source "
            "file, to stdout or a file.")

    def create_parser(self, prog_name: str, subcommand: str, **kwargs: Any) -> CommandParser:
        # `--version N` is the label-set version here, not Django's own --version
        return super().create_parser(prog_name, subcommand, conflict_handler="resolve",
                                     **kwargs)

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("benchmark")
        parser.add_argument("label_set")
        parser.add_argument("--version", dest="number", type=int, default=None,
                            help="version number (default: the latest)")
        parser.add_argument("-o", "--output", type=Path, default=None,
                            help="write here instead of stdout")

    def handle(self, *args: Any, **options: Any) -> None:
        try:
            data = labels_export(benchmark=options["benchmark"], label_set=options["label_set"],
                                 number=options["number"])
        except LabelIOError as exc:
            raise CommandError(str(exc)) from exc
        text = json.dumps(data, separators=(",", ":"))
        if options["output"] is None:
            self.stdout.write(text)
        else:
            options["output"].write_text(text + "\n")
            self.stderr.write(f"wrote {options['output']}")
