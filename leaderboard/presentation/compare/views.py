"""The comparison page of two submissions, `/submissions/<id>/compare/<other>/?set=&page=`
(leaderboard/presentation/compare/selectors.py, docs/metrics.md §10.5), and
`/submissions/compare/?s=<id>&s=<other>`, where the board's and the submission page's pick
forms send the two ids: it redirects to the page. The board's form also names its board
(`board`, `sort`, `version`, `page`): other than two ids go back to that board page with the
ticked rows still ticked (`?picked=`, boards/picks.py); without a board, a 400 page says why.

Who may see it, as the API: both visible to the visitor (else 404), both scored and of one
benchmark (else 400, the page saying why). `?page=` that is not a page of the list is 404.
"""

from __future__ import annotations

from typing import Any

from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.urls import NoReverseMatch, reverse
from django.utils.http import urlencode

from leaderboard.catalog.selectors import benchmark_class_names
from leaderboard.common.errors import ServiceError
from leaderboard.presentation.boards.picks import PICKED_PARAM, submission_id_valid
from leaderboard.presentation.compare.selectors import (
    Comparison,
    ExamplePage,
    comparison_examples_get,
    comparison_get,
    comparison_label_set_default,
    comparison_pair_get,
)


def _points(difference: float | None) -> str:
    """An accuracy difference in percentage points, signed."""
    return "–" if difference is None else f"{difference * 100:+.2f} pt"


def _p(value: float | None) -> str:
    if value is None:
        return "–"
    return "p < 0.001" if value < 0.001 else f"p = {value:.3f}"


def _refused(request: HttpRequest, exc: ServiceError) -> HttpResponse:
    if exc.http_status == 404:
        raise Http404(exc.message)
    return render(request, "leaderboard/submission_compare.html", {"error": exc.message},
                  status=exc.http_status)


def _board_url(request: HttpRequest, ids: list[str]) -> str | None:
    """The board page the pick form was on, with `ids` ticked; None without a board."""
    query = request.GET
    try:
        path = reverse("leaderboard", args=[query.get("board", "")])
    except NoReverseMatch:  # no board, or not a slug
        return None
    keep = {key: query[key] for key in ("sort", "version") if query.get(key)}
    if submission_id_valid(query.get("page", "")):
        keep["page"] = query["page"]
    picked = [i for i in ids if submission_id_valid(i)] or [""]  # `picked=`: none ticked
    return f"{path}?{urlencode({**keep, PICKED_PARAM: picked}, doseq=True)}"


def submission_compare_pick(request: HttpRequest) -> HttpResponse:
    """Two ids (`s`, twice) -> their comparison page; anything else back to the board the
    form was on, still ticked, or refused with a 400 when it names none."""
    ids = [raw.strip().lstrip("#") for raw in request.GET.getlist("s") if raw.strip()]
    if len(ids) == 2 and all(submission_id_valid(i) for i in ids):
        return redirect("submission_compare", submission_id=int(ids[0]), other_id=int(ids[1]))
    board = _board_url(request, ids)
    if board is not None:
        return redirect(board)
    return render(request, "leaderboard/submission_compare.html", {
        "error": "Pick exactly two submissions to compare (tick two rows of the "
                 "leaderboard, or give the other submission's number)."}, status=400)


def _examples_context(comparison: Comparison, examples: ExamplePage) -> dict[str, Any]:
    """The example table: per row the class names of each label set of the same images."""
    names = benchmark_class_names(benchmark=comparison.first.benchmark)
    example_set = next(c.example_set for c in comparison.label_sets
                     if c.slug == examples.label_set)
    columns = [c for c in comparison.label_sets if c.example_set == example_set]

    def named(classes: list[int] | None) -> list[str] | None:
        if classes is None:
            return None
        return [names[k] if 0 <= k < len(names) else str(k) for k in classes]

    def url(number: int) -> str:
        return "?" + urlencode({"set": examples.label_set, "page": str(number)})

    return {
        "examples": examples, "label_columns": columns,
        "rows": [{"row": row, "labels": [named(row.labels.get(c.slug)) for c in columns]}
                 for row in examples.rows],
        "previous": url(examples.page - 1) if examples.page > 1 else None,
        "next": url(examples.page + 1) if examples.page < examples.page_count else None,
    }


def submission_compare(request: HttpRequest, submission_id: int, other_id: int
                       ) -> HttpResponse:
    raw_page = request.GET.get("page") or "1"
    if not raw_page.isdigit():
        raise Http404("no such page")
    try:
        first, second = comparison_pair_get(first_id=submission_id, second_id=other_id,
                                            user=request.user)
    except ServiceError as exc:
        return _refused(request, exc)
    comparison = comparison_get(first=first, second=second)
    chosen = request.GET.get("set") or comparison_label_set_default(comparison=comparison)
    context: dict[str, Any] = {
        "comparison": comparison, "chosen": chosen, "first": first, "second": second,
        "label_set_rows": [(c, {"difference": _points(c.difference), "p": _p(c.p_value)})
                           for c in comparison.label_sets]}
    if chosen is not None:
        try:
            examples = comparison_examples_get(comparison=comparison, label_set=chosen,
                                               page=int(raw_page))
        except ServiceError as exc:
            raise Http404(exc.message) from None  # an unknown label set or page
        context.update(_examples_context(comparison, examples))
    return render(request, "leaderboard/submission_compare.html", context)
