"""The hosts' buttons of a hidden label set on its board page (docs/metrics.md §17.4): reveal
the open phase's private part; after a reveal, open the next phase with a fresh split."""

from __future__ import annotations

import secrets
from urllib.parse import urlencode

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import redirect
from django.urls import reverse
from django.views.decorators.http import require_POST

from leaderboard.catalog.access import Action, benchmark_get_for
from leaderboard.catalog.models import Benchmark, LabelSet
from leaderboard.catalog.phases.selectors import hidden_label_set_get, hidden_phase_current
from leaderboard.catalog.phases.services import hidden_phase_open_next, hidden_phase_reveal
from leaderboard.common.errors import ServiceError


def _label_set(request: HttpRequest, slug: str, label_set: str) -> LabelSet:
    """The hidden label set, for its benchmark's hosts (docs/hosts/teams.md): 404 when the user
    may not see the benchmark, 403 (leaderboard/templates/403.html) when they do not host it."""
    try:
        benchmark = benchmark_get_for(user=request.user, slug=slug, action=Action.HOST)
        return hidden_label_set_get(benchmark=benchmark, slug=label_set)
    except (Benchmark.DoesNotExist, LabelSet.DoesNotExist):
        raise Http404("no such hidden label set") from None


def _board(slug: str, sort: str) -> HttpResponse:
    return redirect(reverse("leaderboard", args=[slug]) + "?" + urlencode({"sort": sort}))


@login_required
@require_POST
def hidden_reveal(request: HttpRequest, slug: str, label_set: str) -> HttpResponse:
    row = _label_set(request, slug, label_set)
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


@login_required
@require_POST
def hidden_phase_open(request: HttpRequest, slug: str, label_set: str) -> HttpResponse:
    row = _label_set(request, slug, label_set)
    try:
        # a fresh split nobody can predict; the API takes a chosen seed instead
        phase = hidden_phase_open_next(label_set=row, seed=secrets.randbits(63))
    except ServiceError as error:
        messages.error(request, error.message)
        return _board(slug, row.slug)
    messages.success(request, f"Phase {phase.number} of {row.name} is open.")
    return _board(slug, row.slug)
