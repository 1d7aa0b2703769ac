"""The public leaderboard of one benchmark: `?sort=<label set>`, `?version=<hash>`, `?page=N`,
and `?picked=<id>...`: rows ticked for a comparison (picks.py).

The table (everything below the heading) is the same for every visitor: it is rendered once
per (benchmark, leaderboard generation, sort, version, page) and kept in the cache
(leaderboard/presentation/caching.py); each request renders only the page shell (navigation,
user) around it. Pages hold PAGE_SIZE rows; ranks are over the whole leaderboard. A page number
that is not a whole number from 1 to the last page answers 404 (an empty leaderboard has a
page 1). A visitor not signed in gets an ETag and a 304 to a revalidation, checked before any
board is read (conditional.py; docs/api.md §5.2, "Caching"). A page with `picked` rows
is rendered afresh, not cached: only the pick form's answer of other than two rows leads there.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from django.contrib.messages import get_messages
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import render
from django.template.loader import render_to_string
from django.utils.http import urlencode
from django.utils.safestring import mark_safe

from leaderboard.catalog.models import Benchmark
from leaderboard.catalog.phases.selectors import hidden_phases_current
from leaderboard.catalog.selectors import benchmark_get
from leaderboard.catalog.teams.permissions import benchmark_user_can_host
from leaderboard.presentation.boards.conditional import (
    PRIVATE_CACHE_CONTROL,
    board_etag,
    conditional_headers_add,
    etag_matches,
    not_modified,
)
from leaderboard.presentation.boards.picks import board_pick_message, board_picks_read
from leaderboard.presentation.boards.selectors import (
    Leaderboard,
    LeaderboardQueryError,
    leaderboard_get,
)
from leaderboard.presentation.caching import cached_render, source_format

PAGE_SIZE = 100
# The page around the cached table: in the ETag's format too (conditional.py).
BOARD_PAGE_TEMPLATES = ("leaderboard/leaderboard.html", "leaderboard/base.html")
# What the cached table is rendered from (the format in its cache key, see caching.py).
BOARD_HTML_MODULES = (__name__, "leaderboard.presentation.boards.selectors",
                      "leaderboard.presentation.boards.rank_ub",
                      "leaderboard.presentation.boards.hidden",
                      "leaderboard.presentation.boards.picks",
                      "leaderboard.templatetags.leaderboard_extras")
BOARD_HTML_TEMPLATES = ("leaderboard/_board.html", "leaderboard/_pages.html")
# Page links around the current page; the first and last are always linked.
PAGE_LINKS_AROUND = 2


def board_html_format() -> str:
    return source_format(modules=BOARD_HTML_MODULES, templates=BOARD_HTML_TEMPLATES)


def board_page_format() -> str:
    return source_format(modules=(*BOARD_HTML_MODULES,
                                  "leaderboard.presentation.boards.conditional"),
                         templates=(*BOARD_HTML_TEMPLATES, *BOARD_PAGE_TEMPLATES))


def _page_etag(request: HttpRequest, benchmark: Benchmark) -> str | None:
    """The page's ETag for an anonymous visitor with no message waiting; None (no ETag, no
    304) for a signed-in one, whose page holds CSRF-protected forms (log out, the staff
    panel) whose tokens a revalidated old copy could hold stale. The anonymous page's shell
    holds nothing else that changes: the header links to the home page, not to each board."""
    if request.user.is_authenticated or len(get_messages(request)):  # len reads, keeps them
        return None
    return board_etag(benchmark=benchmark, format=board_page_format(), variant="-anonymous")


def _cells(board: Leaderboard, row: dict[str, Any]) -> list[dict[str, Any]]:
    return [{
        "column": column,
        "score": row["scores"].get(column.slug),
        "rank": row["ranks"].get(column.slug),
        "shift": (None if column.slug == board.reference
                  else row["rank_shift"].get(column.slug)),
        "active": column.slug == board.sort,
    } for column in board.columns]


def _p(value: float | None) -> str | None:
    if value is None:
        return None
    return "p < 0.001" if value < 0.001 else f"p = {value:.3f}"


def _page_number(request: HttpRequest) -> int:
    raw = request.GET.get("page") or "1"
    if not raw.isdigit() or int(raw) < 1:  # isdigit: no sign, no spaces
        raise Http404("no such page")
    return int(raw)


def _pages(number: int, page_count: int, total: int, size: int,
           url: Callable[[int], str]) -> dict[str, Any]:
    """What _pages.html shows: the row range, previous/next and numbered links."""
    numbers = sorted({1, page_count} | set(range(max(1, number - PAGE_LINKS_AROUND),
                                                 min(page_count, number + PAGE_LINKS_AROUND) + 1)))
    links: list[dict[str, Any]] = []
    for n in numbers:
        if links and n - links[-1]["number"] > 1:
            links.append({"number": None, "url": None, "current": False})
        links.append({"number": n, "url": url(n), "current": n == number})
    return {
        "first_row": (number - 1) * size + 1 if total else 0,
        "last_row": min(number * size, total),
        "total": total,
        "previous": url(number - 1) if number > 1 else None,
        "next": url(number + 1) if number < page_count else None,
        "links": links if page_count > 1 else [],
    }


# What a hidden label set's column shows, by its release mechanism (docs/metrics.md §17.1).
RELEASED_FIGURES = {
    "exact": "each submission's accuracy as scored, one row per submission",
    "ladder": ("the Ladder's: a submission's number is released only when it beats its "
               "participant's released best by the step, and the board shows each "
               "participant's released best, one row per participant"),
    "parameter_free": ("the parameter-free Ladder's: a submission's number is released only "
                       "when it beats its participant's released best by more than the noise "
                       "of the difference, and the board shows each participant's released "
                       "best, one row per participant"),
}


def _board_html(benchmark: Benchmark, board: Leaderboard, version: str | None,
                number: int, size: int, picked: Sequence[int] | None = None) -> str:
    """The table and what surrounds it; `picked`: the rows to render ticked, with what to do
    when they are not two (None: the cached page, nothing ticked)."""
    keep = {"version": version} if version else {}
    headers = [{
        "column": column,
        "url": "?" + urlencode({"sort": column.slug, **keep}),
        "active": column.slug == board.sort,
    } for column in board.columns]
    page_rows = board.rows[(number - 1) * size:number * size]
    rows = [{**row, "rank": row["ranks"].get(board.sort), "cells": _cells(board, row),
             "p_text": _p(row["mcnemar_p"])} for row in page_rows]
    page_count = max(1, -(-len(board.rows) // size))

    def url(n: int) -> str:
        return "?" + urlencode({"sort": board.sort, **keep, "page": str(n)})

    released = [{"slug": c.slug, "figures": RELEASED_FIGURES[c.release]}
                for c in board.columns if c.release]
    ticked = set(picked or ())
    return render_to_string("leaderboard/_board.html", {
        "benchmark": benchmark, "board": board, "headers": headers, "rows": rows,
        "released": released, "page_number": number, "picked": ticked,
        "pick_message": None if picked is None else board_pick_message(
            [f"{r['model_name']} (#{r['submission_id']})" for r in rows
             if r["submission_id"] in ticked]),
        "version": version, "pages": _pages(number, page_count, len(board.rows), size, url),
        "csv_query": urlencode({"sort": board.sort, **keep}),
    })


def leaderboard(request: HttpRequest, slug: str) -> HttpResponse:
    try:
        benchmark = benchmark_get(slug=slug)
    except Benchmark.DoesNotExist:
        raise Http404("no such benchmark") from None
    sort = request.GET.get("sort") or None  # None: the reference label set (leaderboard_get)
    version = request.GET.get("version") or None
    number = _page_number(request)
    picked = board_picks_read(request.GET)
    size = PAGE_SIZE
    # Revalidation before any board is read (docs/api.md §5.2, "Caching").
    etag = _page_etag(request, benchmark)
    if etag is not None and etag_matches(request=request, etag=etag):
        return not_modified(etag=etag, cache_control=PRIVATE_CACHE_CONTROL)

    def build() -> str:
        board = leaderboard_get(benchmark=benchmark, sort=sort, version=version)
        if number > 1 and (number - 1) * size >= len(board.rows):
            raise Http404("no such page")
        return _board_html(benchmark, board, version, number, size, picked)

    try:
        board_html = build() if picked is not None else cached_render(
            (board_html_format(), benchmark.pk, benchmark.leaderboard_generation, sort,
             version, size, number), build)
    except LeaderboardQueryError as exc:
        return render(request, "leaderboard/leaderboard.html", {
            "benchmark": benchmark, "error": exc.message}, status=400)
    response = render(request, "leaderboard/leaderboard.html", {
        "benchmark": benchmark, "board_html": mark_safe(board_html),  # rendered by a template
        # its team's hosts only, outside the cached board: reveal a hidden label set, open its
        # next phase (docs/hosts/teams.md)
        "hidden_phases": (hidden_phases_current(benchmark=benchmark)
                          if benchmark_user_can_host(user=request.user, benchmark=benchmark)
                          else []),
    })
    return conditional_headers_add(response, etag=etag, cache_control=PRIVATE_CACHE_CONTROL)
