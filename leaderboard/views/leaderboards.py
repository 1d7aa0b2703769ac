"""The public leaderboard of one benchmark: `?sort=<label set>` and `?version=<hash>`."""

from __future__ import annotations

from typing import Any

from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import render
from django.utils.http import urlencode

from leaderboard import selectors
from leaderboard.models import Benchmark


def _cells(board: selectors.Leaderboard, row: dict[str, Any]) -> list[dict[str, Any]]:
    return [{
        "column": column,
        "score": row["scores"].get(column.slug),
        "rank": row["ranks"].get(column.slug),
        "shift": None if column.slug == "original" else row["rank_shift"].get(column.slug),
        "active": column.slug == board.sort,
    } for column in board.columns]


def leaderboard(request: HttpRequest, slug: str) -> HttpResponse:
    try:
        benchmark = selectors.benchmark_get(slug=slug)
    except Benchmark.DoesNotExist:
        raise Http404("no such benchmark") from None
    sort = request.GET.get("sort") or "original"
    version = request.GET.get("version") or None
    try:
        board = selectors.leaderboard_get(benchmark=benchmark, sort=sort, version=version)
    except selectors.LeaderboardQueryError as exc:
        return render(request, "leaderboard/leaderboard.html", {
            "benchmark": benchmark, "error": exc.message, "board": None}, status=400)
    keep = {"version": version} if version else {}
    headers = [{
        "column": column,
        "url": "?" + urlencode({"sort": column.slug, **keep}),
        "active": column.slug == board.sort,
    } for column in board.columns]
    rows = [{**row, "rank": row["ranks"].get(board.sort), "cells": _cells(board, row)}
            for row in board.rows]
    return render(request, "leaderboard/leaderboard.html", {
        "benchmark": benchmark, "board": board, "headers": headers, "rows": rows,
        "version": version,
    })
