"""The maintainers' ground-truth review page: one candidate at a time, keyboard-driven
(g given, s guessed, b both, n neither)."""

from __future__ import annotations

from django import forms
from django.contrib import messages
from django.contrib.auth.models import User
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.urls import reverse

from leaderboard.review.ground_truth import selectors as selectors_ground_truth
from leaderboard.review.ground_truth import services as ground_truth
from leaderboard.review.ground_truth.models import GroundTruthAnswer
from leaderboard.review.panel.examples import review_example
from leaderboard.review.panel.views import benchmark_or_404, panel_vote_page, reviewer_required


class GroundTruthVoteForm(forms.Form):
    candidate = forms.IntegerField(widget=forms.HiddenInput)
    answer = forms.ChoiceField(choices=GroundTruthAnswer.choices)
    note = forms.CharField(required=False, max_length=5000,
                           widget=forms.Textarea(attrs={"rows": 2}))


@reviewer_required
def ground_truth_next(request: HttpRequest, slug: str) -> HttpResponse:
    """GET: the next open candidate the reviewer has not answered (or `?candidate=<id>`).
    POST: answer, then next."""
    benchmark = benchmark_or_404(request, slug)
    user = request.user
    assert isinstance(user, User)
    here = reverse("ground_truth_next", args=[benchmark.slug])
    if request.method == "POST":
        form = GroundTruthVoteForm(request.POST)
        if form.is_valid():
            data = form.cleaned_data
            return panel_vote_page(
                request, here, "Answer recorded.",
                cast=lambda: ground_truth.ground_truth_vote_cast(
                    candidate_id=data["candidate"], reviewer=user, answer=data["answer"],
                    note=data["note"]),
                decision=lambda candidate: candidate.category.replace("_", " "))
        messages.error(request, "Choose an answer: given, guessed, both or neither.")
        return redirect(here)
    queue = selectors_ground_truth.ground_truth_queue(benchmark=benchmark, reviewer=user)
    # ?candidate=<id> (from an audit's report) shows that one first while it is still open
    # and unanswered by this reviewer; otherwise the oldest
    asked = request.GET.get("candidate", "")
    first = (queue.filter(pk=int(asked)).first() if asked.isdigit() else None) or queue.first()
    view = selectors_ground_truth.ground_truth_candidate_view(first) if first else None
    return render(request, "leaderboard/review_ground_truth.html", {
        "benchmark": benchmark,
        "view": view,
        "remaining": queue.count(),
        "example": (review_example(example_set=first.label_set.example_set,
                                   index=first.example_index)
                    if first is not None else None),
        "form": GroundTruthVoteForm(initial={"candidate": first.pk} if first else {}),
        "action": here,
    })
