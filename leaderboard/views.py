"""HTML views."""

from __future__ import annotations

from django.http import HttpRequest, HttpResponse
from django.shortcuts import render

from leaderboard import selectors


def home(request: HttpRequest) -> HttpResponse:
    """Placeholder home page: the benchmarks, image sets and label sets that are loaded."""
    return render(request, "leaderboard/home.html", {"benchmarks": selectors.benchmark_list()})
