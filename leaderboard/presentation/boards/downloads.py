"""The leaderboard as CSV (docs/api.md §5.3): the whole board, streamed, one row per
submission and, per label set, its accuracy, 95% interval, rank and rank shift.

It is built from the same cached board as the pages (`leaderboard_get`), so it has the
columns they have and no other: a hidden label set's released figures, and its private part
only once revealed (docs/metrics.md §17). Cells go through the one CSV writer, which quotes
text a spreadsheet would run as a formula (leaderboard/common/csv_export.py).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from django.http import Http404, HttpRequest, HttpResponse, StreamingHttpResponse

from leaderboard.catalog.models import Benchmark
from leaderboard.catalog.selectors import benchmark_get
from leaderboard.common.csv_export import csv_lines
from leaderboard.presentation.boards.conditional import (
    PUBLIC_CACHE_CONTROL,
    board_etag,
    conditional_headers_add,
    etag_matches,
    not_modified,
)
from leaderboard.presentation.boards.selectors import (
    Leaderboard,
    LeaderboardQueryError,
    leaderboard_get,
)
from leaderboard.presentation.caching import source_format

CSV_MODULES = (__name__, "leaderboard.common.csv_export",
               "leaderboard.presentation.boards.selectors",
               "leaderboard.presentation.boards.rank_ub",
               "leaderboard.presentation.boards.hidden")
CELL_PARTS = ("accuracy", "ci_low", "ci_high", "rank", "rank_shift")


def leaderboard_csv_header(board: Leaderboard) -> list[str]:
    return ["submission_id", "model_name", "owner", "created",
            *(f"{column.slug} {part}" for column in board.columns for part in CELL_PARTS)]


def leaderboard_csv_rows(board: Leaderboard) -> Iterator[list[Any]]:
    """One list of cells per row, best first on the board's sort; an empty cell where the
    row has no score (or no rank shift) on a label set."""
    for row in board.rows:
        cells: list[Any] = [row["submission_id"], row["model_name"], row["owner"],
                            row["created"].isoformat() if row["created"] else None]
        for column in board.columns:
            score = row["scores"].get(column.slug) or {}
            cells += [score.get("accuracy"), score.get("ci_low"), score.get("ci_high"),
                      row["ranks"].get(column.slug), row["rank_shift"].get(column.slug)]
        yield cells


def leaderboard_csv(request: HttpRequest, slug: str) -> HttpResponse | StreamingHttpResponse:
    try:
        benchmark = benchmark_get(slug=slug)
    except Benchmark.DoesNotExist:
        raise Http404("no such benchmark") from None
    sort = request.GET.get("sort") or None  # None: the reference label set (leaderboard_get)
    version = request.GET.get("version") or None
    etag = board_etag(benchmark=benchmark, format=source_format(modules=CSV_MODULES))
    if etag_matches(request=request, etag=etag):
        return not_modified(etag=etag, cache_control=PUBLIC_CACHE_CONTROL)
    try:
        board = leaderboard_get(benchmark=benchmark, sort=sort, version=version)
    except LeaderboardQueryError as exc:
        return HttpResponse(exc.message, status=400, content_type="text/plain; charset=utf-8")
    response = StreamingHttpResponse(
        (line.encode() for line in csv_lines(leaderboard_csv_header(board),
                                             leaderboard_csv_rows(board))),
        content_type="text/csv; charset=utf-8")
    # the sort is one of the board's column slugs by now: safe in a file name
    response["Content-Disposition"] = (
        f'attachment; filename="{benchmark.slug}-leaderboard-{board.sort}.csv"')
    return conditional_headers_add(response, etag=etag, cache_control=PUBLIC_CACHE_CONTROL)
