"""The maintainers' review pages (one item at a time, keyboard-driven) and the public history
of a label set's versions."""

from __future__ import annotations

from typing import Any

from django import forms
from django.contrib import messages
from django.contrib.auth.models import User
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.urls import reverse
from django.utils.http import urlencode

from leaderboard.catalog.models import LabelSet, LabelSetVersion
from leaderboard.review import selectors as selectors_review
from leaderboard.review import services as review
from leaderboard.review.ground_truth.selectors import ground_truth_open_counts
from leaderboard.review.models import MistakeCategory, Severity, Verdict
from leaderboard.review.panel.examples import review_example
from leaderboard.review.panel.views import benchmark_or_404, panel_vote_page, reviewer_required


class ReviewVoteForm(forms.Form):
    item = forms.IntegerField(widget=forms.HiddenInput)
    verdict = forms.ChoiceField(choices=Verdict.choices)
    problematic = forms.BooleanField(required=False, label="Ground truth problematic")
    severity = forms.ChoiceField(choices=[("", "—"), *Severity.choices], required=False)
    category = forms.ChoiceField(choices=[("", "—"), *MistakeCategory.choices], required=False)
    note = forms.CharField(required=False, max_length=5000,
                           widget=forms.Textarea(attrs={"rows": 2}))

    def clean(self) -> dict[str, Any]:
        data = super().clean() or {}
        if data.get("verdict") != Verdict.WRONG:
            # severity and category describe a wrong prediction only
            data["severity"], data["category"] = "", ""
        return data


@reviewer_required
def review_home(request: HttpRequest) -> HttpResponse:
    candidates = ground_truth_open_counts()
    mine = selectors_review.review_open_counts(user=request.user)
    return render(request, "leaderboard/review_home.html", {
        "benchmarks": mine,
        "ground_truth": [(b, candidates[b.pk]) for b, _ in mine if b.pk in candidates],
    })


@reviewer_required
def review_next(request: HttpRequest, slug: str) -> HttpResponse:
    """GET: the next open item the reviewer has not voted on. POST: vote, then the next."""
    benchmark = benchmark_or_404(request, slug)
    user = request.user
    assert isinstance(user, User)
    label_set_slug = request.GET.get("label_set") or ""
    label_set = None
    if label_set_slug:
        label_set = LabelSet.objects.filter(benchmark=benchmark, slug=label_set_slug).first()
        if label_set is None:
            raise Http404("no such label set")
    here = reverse("review_next", args=[benchmark.slug]) + (
        "?" + urlencode({"label_set": label_set_slug}) if label_set_slug else "")
    if request.method == "POST":
        form = ReviewVoteForm(request.POST)
        if form.is_valid():
            data = form.cleaned_data
            return panel_vote_page(
                request, here, "Vote recorded.",
                cast=lambda: review.review_vote_cast(
                    item_id=data["item"], reviewer=user, verdict=data["verdict"],
                    problematic=data["problematic"], severity=data["severity"],
                    category=data["category"], note=data["note"]),
                decision=lambda item: item.get_verdict_display().lower())
        messages.error(request, "Choose a verdict: correct, wrong or unclear.")
        return redirect(here)
    queue = selectors_review.review_queue(benchmark=benchmark, label_set=label_set,
                                          reviewer=user)
    first = queue.first()
    detail = (selectors_review.review_item_detail(item_id=first.pk, reviewer=user)
              if first is not None else None)
    return render(request, "leaderboard/review_item.html", {
        "benchmark": benchmark,
        "label_set_slug": label_set_slug,
        "detail": detail,
        "remaining": queue.count(),
        "example": (review_example(example_set=detail.label_set.example_set,
                                   index=detail.item.example_index)
                    if detail is not None else None),
        "form": ReviewVoteForm(initial={"item": first.pk} if first is not None else {}),
        "action": here,
    })


def _version_number(value: str | None) -> int | None:
    return int(value) if value and value.isdigit() else None


def label_set_history(request: HttpRequest, slug: str, label_set: str) -> HttpResponse:
    try:
        row = selectors_review.label_set_get(benchmark_slug=slug, slug=label_set)
    except LabelSet.DoesNotExist:
        raise Http404("no such label set") from None
    history = selectors_review.label_set_history(label_set=row)
    # ?compare=N&against=M: the rank shifts between any two versions, above the history.
    compare, against = (_version_number(request.GET.get("compare")),
                        _version_number(request.GET.get("against")))
    comparison, compare_error = None, ""
    if compare is not None and against is not None:
        try:
            comparison = selectors_review.label_set_version_detail(
                label_set=row, number=compare, against=against)
        except LabelSetVersion.DoesNotExist:
            compare_error = f"This label set has no version {compare} or {against}."
    elif request.GET.get("compare") or request.GET.get("against"):
        compare_error = "Choose two version numbers to compare."
    numbers = [entry.version.number for entry in history]
    return render(request, "leaderboard/label_set_history.html", {
        "label_set": row, "benchmark": row.benchmark, "history": history,
        "numbers": numbers, "comparison": comparison, "compare_error": compare_error,
        "compare": compare if compare is not None else (numbers[0] if numbers else None),
        "against": against if against is not None else (numbers[-1] if numbers else None),
    })
