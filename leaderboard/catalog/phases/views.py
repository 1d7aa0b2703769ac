"""The staff buttons of a hidden label set on its board page (docs/metrics.md §17.4): reveal
the open phase's private part; after a reveal, open the next phase with a fresh split."""

from __future__ import annotations

import secrets
from urllib.parse import urlencode

from django.contrib import messages
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import redirect
from django.urls import reverse
from django.views.decorators.http import require_POST

from leaderboard.catalog.models import Benchmark, LabelSet
from leaderboard.catalog.phases.selectors import hidden_label_set_get, hidden_phase_current
from leaderboard.catalog.phases.services import hidden_phase_open_next, hidden_phase_reveal
from leaderboard.catalog.selectors import benchmark_get
from leaderboard.common.errors import ServiceError
from leaderboard.common.page_access import role_required

staff_required = role_required(
    lambda user: user.is_staff, title="Hidden label sets",
    message="Only staff can reveal a hidden label set or open its next phase.")


def _label_set(slug: str, label_set: str) -> LabelSet:
    try:
        return hidden_label_set_get(benchmark=benchmark_get(slug=slug), slug=label_set)
    except (Benchmark.DoesNotExist, LabelSet.DoesNotExist):
        raise Http404("no such hidden label set") from None


def _board(slug: str, sort: str) -> HttpResponse:
    return redirect(reverse("leaderboard", args=[slug]) + "?" + urlencode({"sort": sort}))


@staff_required
@require_POST
def hidden_reveal(request: HttpRequest, slug: str, label_set: str) -> HttpResponse:
    row = _label_set(slug, label_set)
    phase = hidden_phase_current(label_set_id=row.pk)
    if phase is None:
        raise Http404("no phase")
    try:
        done = hidden_phase_reveal(phase=phase, by=request.user)
    except ServiceError as error:
        messages.error(request, error.message)
        return _board(slug, row.slug)
    messages.success(request, f"Phase {phase.number} of {row.name} revealed." if done
                     else f"Phase {phase.number} of {row.name} was already revealed.")
    return _board(slug, f"{row.slug}-private")


@staff_required
@require_POST
def hidden_phase_open(request: HttpRequest, slug: str, label_set: str) -> HttpResponse:
    row = _label_set(slug, label_set)
    try:
        # a fresh split nobody can predict; the API takes a chosen seed instead
        phase = hidden_phase_open_next(label_set=row, seed=secrets.randbits(63))
    except ServiceError as error:
        messages.error(request, error.message)
        return _board(slug, row.slug)
    messages.success(request, f"Phase {phase.number} of {row.name} is open.")
    return _board(slug, row.slug)
