"""The participation pages of a benchmark (docs/participants/joining-a-benchmark.md,
docs/hosts/participation.md): a participant reads the rules, asks to join and accepts the
terms; its hosts set the rules and decide the requests. A hidden benchmark the visitor may not
see is 404, as everywhere."""

from __future__ import annotations

from typing import Any

from django import forms
from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.contrib.auth.models import User
from django.core.paginator import Paginator
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.urls import reverse

from leaderboard.catalog.models import Benchmark
from leaderboard.catalog.selectors import benchmark_get
from leaderboard.catalog.teams.permissions import benchmark_user_can_host, benchmark_user_can_see
from leaderboard.common.errors import ServiceError
from leaderboard.submissions.participation import services
from leaderboard.submissions.participation.models import ParticipationMode, ParticipationRequest
from leaderboard.submissions.participation.selectors import (
    participation_request_get,
    participation_request_list,
    participation_rules_get,
    participation_standing,
)

REQUESTS_PER_PAGE = 50


class AskForm(forms.Form):
    message = forms.CharField(required=False, max_length=2000, label="A word to the hosts",
                              widget=forms.Textarea(attrs={"rows": 3}))


class RulesForm(forms.Form):
    mode = forms.ChoiceField(choices=ParticipationMode.choices, label="Who may submit")
    require_verified_email = forms.BooleanField(
        required=False, label="Participants need a verified email address")
    terms = forms.CharField(required=False, max_length=20000, label="Terms",
                            widget=forms.Textarea(attrs={"rows": 8}),
                            help_text="Participants accept them before their first submission, "
                                      "and again after each change. Empty: no terms.")


class DecisionForm(forms.Form):
    request_id = forms.IntegerField(widget=forms.HiddenInput)
    decision = forms.ChoiceField(choices=(("approve", "Approve"), ("refuse", "Refuse")))
    note = forms.CharField(required=False, max_length=2000, label="Note to the user")


def _benchmark(request: HttpRequest, slug: str) -> Benchmark:
    try:
        benchmark = benchmark_get(slug=slug, include_hidden=True)
    except Benchmark.DoesNotExist:
        raise Http404("no such benchmark") from None
    if not benchmark_user_can_see(user=request.user, benchmark=benchmark):
        raise Http404("no such benchmark")
    return benchmark


def _here(benchmark: Benchmark, name: str = "participation") -> str:
    return reverse(name, args=[benchmark.slug])


@login_required
def participation(request: HttpRequest, slug: str) -> HttpResponse:
    """GET: the rules, the visitor's standing, the request form and the terms. POST
    (`action`): `ask` to join, or `accept` the terms (by their sha256, as read)."""
    benchmark = _benchmark(request, slug)
    user = request.user
    assert isinstance(user, User)  # login_required
    ask_form, status = AskForm(), 200
    if request.method == "POST":
        try:
            if request.POST.get("action") == "accept":
                services.terms_accept(user=user, benchmark=benchmark,
                                      sha256=request.POST.get("terms_sha256", ""))
                messages.success(request, "You accepted the terms.")
                return redirect(_here(benchmark))
            ask_form = AskForm(request.POST)
            if ask_form.is_valid():
                services.participation_request_create(
                    user=user, benchmark=benchmark, message=ask_form.cleaned_data["message"])
                messages.success(request, "Your request was sent to the hosts.")
                return redirect(_here(benchmark))
            status = 400
        except ServiceError as exc:
            messages.error(request, exc.message)
            status = exc.http_status
    return render(request, "leaderboard/participation.html", {
        "benchmark": benchmark, "rules": participation_rules_get(benchmark=benchmark),
        "you": participation_standing(user=user, benchmark=benchmark), "ask_form": ask_form,
    }, status=status)


def _hosts_post(request: HttpRequest, benchmark: Benchmark, user: User) -> RulesForm | None:
    """Handle a hosts' POST; the rules form with errors, or None when done."""
    if request.POST.get("action") == "decide":
        decision = DecisionForm(request.POST)
        if not decision.is_valid():
            messages.error(request, "Choose approve or refuse.")
            return None
        try:
            asked = participation_request_get(benchmark=benchmark,
                                              request_id=decision.cleaned_data["request_id"])
        except ParticipationRequest.DoesNotExist:
            raise Http404("no such request") from None
        decided = services.participation_request_decide(
            request=asked, by=user, approve=decision.cleaned_data["decision"] == "approve",
            note=decision.cleaned_data["note"])
        messages.success(request, f"{decided.user.username}: {decided.status}.")
        return None
    form = RulesForm(request.POST)
    if not form.is_valid():
        return form
    services.participation_rules_set(benchmark=benchmark, by=user, **form.cleaned_data)
    messages.success(request, "The rules were saved.")
    return None


@login_required
def participation_hosts(request: HttpRequest, slug: str) -> HttpResponse:
    """The hosts' page: the rules form and the requests (newest first, `?status=`)."""
    benchmark = _benchmark(request, slug)
    user = request.user
    assert isinstance(user, User)  # login_required
    if not benchmark_user_can_host(user=user, benchmark=benchmark):
        return render(request, "leaderboard/forbidden.html", {
            "title": "Participation", "message": "Only the benchmark's hosts can set its "
                                                 "rules and decide requests to join."},
                      status=403)
    rules = participation_rules_get(benchmark=benchmark)
    form: RulesForm | None = RulesForm(initial={
        "mode": rules.mode, "require_verified_email": rules.require_verified_email,
        "terms": rules.terms})
    status = 200
    if request.method == "POST":
        try:
            form = _hosts_post(request, benchmark, user)
        except ServiceError as exc:
            messages.error(request, exc.message)
            return redirect(_here(benchmark, "participation_hosts"))
        if form is None:
            return redirect(_here(benchmark, "participation_hosts"))
        status = 400
    wanted = request.GET.get("status", "")
    statuses = {value for value, _ in ParticipationRequest.Status.choices}
    page = Paginator(participation_request_list(
        benchmark=benchmark, status=wanted if wanted in statuses else None),
        REQUESTS_PER_PAGE).get_page(request.GET.get("page"))
    context: dict[str, Any] = {"benchmark": benchmark, "rules": rules, "form": form,
                               "page": page, "requests": page.object_list,
                               "status": wanted if wanted in statuses else "",
                               "statuses": ParticipationRequest.Status.choices}
    return render(request, "leaderboard/participation_hosts.html", context, status=status)
