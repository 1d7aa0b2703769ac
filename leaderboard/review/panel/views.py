"""What both reviews' pages share (the novel-prediction queue, leaderboard/review/views.py,
and ground truth, leaderboard/review/ground_truth/views.py; the audit pages too): who may
review, the benchmark a URL names, what a vote from a page answers, and the image file of
the example under review."""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import PurePosixPath
from typing import Any

from django.contrib import messages
from django.http import FileResponse, Http404, HttpRequest, HttpResponse
from django.http.response import HttpResponseBase
from django.shortcuts import redirect
from django.utils.cache import get_conditional_response
from django.utils.http import http_date
from django.views.decorators.http import require_safe

from leaderboard.catalog.access import Action, benchmark_get_for
from leaderboard.catalog.example_files import Unavailable, example_image_file
from leaderboard.catalog.models import Benchmark, ExampleSet
from leaderboard.catalog.teams.permissions import user_is_maintainer
from leaderboard.common.page_access import role_required
from leaderboard.review.panel.services import ReviewError

# Log in first (redirect), then the members of some host team only: everyone else gets a 403
# page. Which benchmarks they review is their teams' (benchmark_or_404).
reviewer_required = role_required(
    lambda user: user_is_maintainer(user=user), title="Review",
    message="Only the members of a host team can work its review queues.")


def benchmark_or_404(request: HttpRequest, slug: str) -> Benchmark:
    """The benchmark, for its team's reviewers (docs/hosts/teams.md): 404 when the user may
    not see it, 403 (leaderboard/templates/403.html) when it is another team's."""
    try:
        return benchmark_get_for(user=request.user, slug=slug, action=Action.REVIEW)
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


# An example's image file is the same bytes for as long as the operator's folder keeps it:
# the reviewer's browser keeps it a day (never a shared cache: reviewers only), then
# revalidates (ETag and Last-Modified from the file).
EXAMPLE_IMAGE_CACHE_CONTROL = "private, max-age=86400"


@reviewer_required
@require_safe
def review_example_image(request: HttpRequest, slug: str, example_set: str,
                         index: int) -> HttpResponseBase:
    """The image file of example `index`, as it is on disk (docs/hosts/review-queue.md, "The
    example"): found from the example set's declared folder and the example's name alone
    (leaderboard/catalog/example_files.py), never from the request's path; 404 when the
    server cannot show it (the review page says why)."""
    benchmark = benchmark_or_404(request, slug)
    row = ExampleSet.objects.filter(benchmark=benchmark, slug=example_set).first()
    if row is None or not 0 <= index < row.size:
        raise Http404("no such example")
    found = example_image_file(example_set=row, index=index)
    if isinstance(found, Unavailable):
        raise Http404(f"the image of example {index} is not available on this server")
    try:
        handle = open(found.path, "rb")
    except OSError:
        raise Http404("the image cannot be read") from None
    stat = os.fstat(handle.fileno())
    etag = f'"{stat.st_size:x}-{stat.st_mtime_ns:x}"'
    not_modified = get_conditional_response(request, etag=etag,
                                            last_modified=int(stat.st_mtime))
    if not_modified is not None:
        handle.close()
        not_modified["Cache-Control"] = EXAMPLE_IMAGE_CACHE_CONTROL
        return not_modified
    response = FileResponse(handle, content_type=found.content_type,
                            filename=PurePosixPath(found.name).name)
    response["ETag"] = etag
    response["Last-Modified"] = http_date(stat.st_mtime)
    response["Cache-Control"] = EXAMPLE_IMAGE_CACHE_CONTROL
    return response
