"""Hide a benchmark, or show it again (staff). A hidden benchmark is left out of every public
list, board and the submit form; its rows, submissions and scores stay. A benchmark is never
deleted while submissions exist: hiding is how it is taken down."""

from __future__ import annotations

from django.db import transaction

from leaderboard.catalog.models import Benchmark
from leaderboard.catalog.services import benchmark_leaderboard_touch


def benchmark_visibility_set(*, benchmark: Benchmark, hidden: bool) -> Benchmark:
    """Set `hidden` (a conditional update: nothing changes when it already holds) and let the
    cached boards and plots go; returns the benchmark as stored."""
    with transaction.atomic():
        changed = Benchmark.objects.filter(pk=benchmark.pk).exclude(hidden=hidden).update(
            hidden=hidden)
        if changed:
            benchmark_leaderboard_touch(benchmark_id=benchmark.pk)
    benchmark.refresh_from_db()
    return benchmark
