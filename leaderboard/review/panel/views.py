"""What both reviews' pages share (the novel-prediction queue, leaderboard/review/views.py,
and ground truth, leaderboard/review/ground_truth/views.py; the audit pages too): who may
review, the benchmark a URL names, and what a vote from a page answers."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from django.contrib import messages
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import redirect

from leaderboard.catalog.models import Benchmark
from leaderboard.catalog.selectors import benchmark_get
from leaderboard.common.page_access import role_required
from leaderboard.common.roles import user_is_reviewer
from leaderboard.review.panel.services import ReviewError

# Log in first (redirect), then maintainers only: everyone else gets a 403 page.
reviewer_required = role_required(
    user_is_reviewer, title="Review",
    message="Only maintainers (staff or the reviewers group) can work the review queue.")


def benchmark_or_404(slug: str) -> Benchmark:
    try:
        return benchmark_get(slug=slug)
    except Benchmark.DoesNotExist:
        raise Http404("no such benchmark") from None


def panel_vote_page(request: HttpRequest, here: str, recorded: str, *,
                    cast: Callable[[], Any], decision: Callable[[Any], str]) -> HttpResponse:
    """A vote from a review page (either review: the panel in services.py): cast it, say what
    happened (and the panel's decision when this vote filled it), back to the page."""
    try:
        item = cast()
    except ReviewError as exc:
        messages.error(request, exc.message)
    else:
        decided = (f" The panel decided: {decision(item)}."
                   if item.status == item.Status.DECIDED else "")
        messages.success(request, f"{recorded}{decided}")
    return redirect(here)
