"""The submission page's withdraw, cancel and re-run buttons (POST forms): each does its
service and goes back to the page with what happened, or the refusal's words."""

from __future__ import annotations

from collections.abc import Callable

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.contrib.auth.models import User
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import redirect
from django.views.decorators.http import require_POST

from leaderboard.submissions.control.services import (
    submission_cancel,
    submission_rerun,
    submission_withdraw,
)
from leaderboard.submissions.file_checks import SubmissionError
from leaderboard.submissions.models import Submission
from leaderboard.submissions.selectors import submission_visible_get


def _act(request: HttpRequest, submission_id: int, done: str,
         action: Callable[[Submission, User], object]) -> HttpResponse:
    user = request.user
    assert isinstance(user, User)  # login_required
    try:
        submission = submission_visible_get(submission_id=submission_id, user=user)
    except Submission.DoesNotExist:
        raise Http404("no such submission") from None
    try:
        action(submission, user)
    except SubmissionError as exc:
        messages.error(request, exc.message)
    else:
        messages.success(request, done)
    return redirect("submission_detail", submission_id=submission_id)


@login_required
@require_POST
def submission_withdraw_page(request: HttpRequest, submission_id: int) -> HttpResponse:
    # A withdrawal cannot be undone, so the form asks for a ticked box, checked here too (a
    # browser that ignores `required`, or a crafted POST)
    reason = request.POST.get("reason", "")[:2000]
    confirmed = request.POST.get("confirm") == "yes"
    return _act(request, submission_id, "The submission is withdrawn: it is off every board.",
                lambda s, u: submission_withdraw(submission=s, user=u, reason=reason,
                                                 confirmed=confirmed))


@login_required
@require_POST
def submission_cancel_page(request: HttpRequest, submission_id: int) -> HttpResponse:
    return _act(request, submission_id, "The submission is cancelled: it will not be scored.",
                lambda s, u: submission_cancel(submission=s, user=u))


@login_required
@require_POST
def submission_rerun_page(request: HttpRequest, submission_id: int) -> HttpResponse:
    return _act(request, submission_id, "The submission is queued to run again.",
                lambda s, u: submission_rerun(submission=s, user=u))
