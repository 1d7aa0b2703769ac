"""A benchmark's about page: what each label set is, how it was built, its size, its current
version (with a link to its history) and whom to cite (the benchmark's row and the family
texts of leaderboard/presentation/about/texts.py)."""

from __future__ import annotations

from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import render

from leaderboard.catalog.models import Benchmark
from leaderboard.presentation.about import selectors as selectors_about
from leaderboard.presentation.about.confusions import benchmark_confusions


def benchmark_about(request: HttpRequest, slug: str) -> HttpResponse:
    try:
        about = selectors_about.benchmark_about(slug=slug)
    except Benchmark.DoesNotExist:
        raise Http404("no such benchmark") from None
    return render(request, "leaderboard/benchmark_about.html", {
        "about": about, "benchmark": about.benchmark,
        "confusions": benchmark_confusions(benchmark=about.benchmark)})
