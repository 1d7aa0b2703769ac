"""Reveal the private part of a hidden label set's open phase (docs/metrics.md §17.4), as the
hosts' API does: the board then shows the private figures and the shake-up.

    python manage.py reveal_hidden cifar10-hidden cifar10.1-v6-hidden --by admin
    python manage.py reveal_hidden cifar10-hidden cifar10.1-v6-hidden --by admin --open-next 7
"""

from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from leaderboard.accounts.selectors import user_find
from leaderboard.catalog.models import Benchmark, LabelSet
from leaderboard.catalog.phases.selectors import hidden_label_set_get, hidden_phase_current
from leaderboard.catalog.phases.services import (
    PhaseError,
    hidden_phase_open_next,
    hidden_phase_reveal,
)
from leaderboard.catalog.selectors import benchmark_get
from leaderboard.catalog.teams.permissions import benchmark_user_can_host


class Command(BaseCommand):
    help = ("Reveal a hidden label set's private part (recorded with the user given, a host of "
            "its benchmark's team).")

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("benchmark")
        parser.add_argument("label_set")
        parser.add_argument("--by", metavar="USERNAME", required=True,
                            help="the user the reveal is recorded for: a host or admin of the "
                                 "benchmark's team, or a superuser (docs/hosts/teams.md)")
        parser.add_argument("--open-next", metavar="SEED", type=int, default=None,
                            help="then open the next phase, its private part drawn from SEED")

    def handle(self, *args: Any, **options: Any) -> None:
        user = user_find(username=options["by"])
        if user is None:
            raise CommandError(f"no user {options['by']!r}")
        try:
            benchmark = benchmark_get(slug=options["benchmark"], include_hidden=True)
            label_set = hidden_label_set_get(benchmark=benchmark, slug=options["label_set"])
        except (Benchmark.DoesNotExist, LabelSet.DoesNotExist):
            raise CommandError(f"no hidden label set {options['benchmark']}/"
                               f"{options['label_set']}") from None
        if not benchmark_user_can_host(user=user, benchmark=benchmark):
            raise CommandError(f"{options['by']!r} is not a host of {benchmark.slug}'s team "
                               f"{benchmark.team.slug!r}")
        phase = hidden_phase_current(label_set_id=label_set.pk)
        if phase is None:
            raise CommandError(f"{label_set} has no phase")
        try:
            done = hidden_phase_reveal(phase=phase, by=user)
            self.stdout.write(f"{label_set} phase {phase.number}: "
                              + ("revealed" if done else f"already revealed {phase.revealed}"))
            if options["open_next"] is not None:
                nxt = hidden_phase_open_next(label_set=label_set, seed=options["open_next"])
                self.stdout.write(f"{label_set} phase {nxt.number}: opened")
        except PhaseError as error:
            raise CommandError(error.message) from None
