"""The home page: every benchmark with its example sets, label sets and entry count."""

from __future__ import annotations

from django.db.models import Count
from django.http import HttpRequest, HttpResponse
from django.shortcuts import render

from leaderboard.catalog.selectors import benchmark_list
from leaderboard.submissions.models import Submission


def home(request: HttpRequest) -> HttpResponse:
    benchmarks = list(benchmark_list())
    # Public scored submissions per benchmark: the rows its leaderboard shows.
    entries = dict(
        Submission.objects.filter(public=True, status=Submission.Status.SCORED)
        .values_list("benchmark").annotate(n=Count("id")).values_list("benchmark", "n")
    )
    for benchmark in benchmarks:
        benchmark.entry_count = entries.get(benchmark.pk, 0)  # type: ignore[attr-defined]
    return render(request, "leaderboard/home.html", {"benchmarks": benchmarks})
