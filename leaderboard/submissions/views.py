"""The submit page, a submission's page (with a tiny status JSON for polling), the owner's
public/private switch and the list of one's own submissions."""

from __future__ import annotations

from typing import Any

from django.conf import settings
from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.contrib.auth.models import User
from django.http import Http404, HttpRequest, HttpResponse, JsonResponse
from django.shortcuts import redirect, render
from django.urls import reverse
from django.views.decorators.cache import never_cache
from django.views.decorators.csrf import csrf_exempt
from django.views.decorators.http import require_GET, require_POST

from leaderboard.catalog.image_sources import benchmark_preprocessing
from leaderboard.catalog.models import Benchmark, ExampleSet
from leaderboard.catalog.selectors import benchmark_list, label_set_correctable_slug
from leaderboard.common.uploads import upload_csrf_failure, upload_too_large
from leaderboard.jobs.lifecycle import PLATFORM_FAILURE_CODES
from leaderboard.submissions import checkpoints
from leaderboard.submissions.control.services import submission_user_can_withdraw_any
from leaderboard.submissions.display import score_view
from leaderboard.submissions.forms import SubmissionForm
from leaderboard.submissions.models import Submission
from leaderboard.submissions.participation.selectors import participation_refusal
from leaderboard.submissions.releases.selectors import release_views_for_submission
from leaderboard.submissions.retention import submission_files_kept_until
from leaderboard.submissions.selectors import (
    submission_list_for_owner,
    submission_scores,
    submission_visible_get,
)
from leaderboard.submissions.services import (
    SubmissionError,
    submission_create,
    submission_quota_left,
    submission_visibility_set,
)
from workers.inference.state_dicts import ARCHITECTURES  # torch-free tables, no torch import
from workers.scoring.families.registry import reference_family

Status = Submission.Status


def _user(request: HttpRequest) -> User:
    user = request.user
    assert isinstance(user, User)  # login_required
    return user


def _example_sets(benchmarks: list[Benchmark]) -> list[ExampleSet]:
    """Every example set, by benchmark; each benchmark's main example set first."""
    out: list[ExampleSet] = []
    for benchmark in benchmarks:
        sets = list(benchmark.example_sets.all())
        out += sorted(sets, key=lambda s: (s.slug != benchmark.main_example_set, s.slug))
    return out


def megabytes(size: int) -> str:
    return f"{size / 2**20:,.0f} MB" if size >= 2**20 else f"{size:,} bytes"


def _wants_json(request: HttpRequest) -> bool:
    return "application/json" in request.headers.get("Accept", "")


def _errors_json(form: SubmissionForm, status: int) -> JsonResponse:
    errors = [{"field": None if name == "__all__" else name, "message": str(message)}
              for name, messages_ in form.errors.items() for message in messages_]
    return JsonResponse({"errors": errors}, status=status)


def _too_large_form(request: HttpRequest, example_sets: list[ExampleSet],
                    too_large: str) -> SubmissionForm:
    """The form as far as it arrived before the size cap, with the one error that matters."""
    form = SubmissionForm(request.POST, example_sets=example_sets)
    field = too_large if too_large in form.fields else None
    what = too_large if field else "the upload (all files together)"
    form.is_valid()
    form.errors.clear()
    form.add_error(field, f"{what} is larger than the limit of "
                          f"{megabytes(settings.EVALSERVER_MAX_UPLOAD_BYTES)}: nothing was stored")
    return form


def _create(form: SubmissionForm, owner: User) -> Submission | int:
    """The stored submission, or the HTTP status of the errors now on the form."""
    if not form.is_valid():
        return 400
    files = form.chosen_files()
    if form.errors:
        return 400
    data = form.cleaned_data
    try:
        return submission_create(
            owner=owner, benchmark=data["benchmark"], model_name=data["model_name"],
            files=files, description=data["description"], public=data["public"],
            paper_url=data["paper_url"], code_url=data["code_url"],
            checkpoint=data.get("checkpoint") or None,
        )
    except SubmissionError as exc:
        form.add_error(exc.field if exc.field in form.fields else None, exc.message)
        return exc.http_status


def checkpoint_help(benchmarks: list[Benchmark]) -> list[dict[str, Any]]:
    """Per benchmark: the example sets a model is run on, its input, the safetensors layout
    (as its bundle declares them)."""
    out = []
    for b in benchmarks:
        inputs = benchmark_preprocessing(benchmark=b)
        out.append({"benchmark": b,
                    "example_sets": checkpoints.checkpoint_example_sets(benchmark=b),
                    "preprocessing": inputs.describe() if inputs else "",
                    "architecture": ARCHITECTURES.get(inputs.architecture or "")
                    if inputs else None})
    return out


def _render_submit(request: HttpRequest, form: SubmissionForm, benchmarks: list[Benchmark],
                   owner: User, status: int = 200) -> HttpResponse:
    quota = {b.slug: submission_quota_left(owner=owner, benchmark=b)
             for b in benchmarks}
    return render(request, "leaderboard/submit.html", {
        "form": form,
        "groups": form.groups(quota),
        "max_upload_bytes": settings.EVALSERVER_MAX_UPLOAD_BYTES,
        "max_upload": megabytes(settings.EVALSERVER_MAX_UPLOAD_BYTES),
        "daily_quota": settings.EVALSERVER_DAILY_QUOTA,
        "checkpoint_help": checkpoint_help(benchmarks),
        # what each benchmark whose rules the user does not meet yet asks of them
        "participation": [(b, refusal[1]) for b in benchmarks
                          if (refusal := participation_refusal(user=owner, benchmark=b))],
    }, status=status)


# The CSRF check is done inside, after the size cap had its say: an upload refused unread
# (larger than the cap) has no token to check, and is answered with the form and its error
# instead of a bare 403. A refused upload stores nothing, so skipping the check then is safe.
@csrf_exempt
@login_required
def submit(request: HttpRequest) -> HttpResponse:
    """GET: the form. POST (plain, or from submit.js asking for JSON): store, then go to the
    submission's page; or show the errors on the form, nothing stored."""
    user = _user(request)
    benchmarks = list(benchmark_list())
    example_sets = _example_sets(benchmarks)
    if request.method != "POST":
        chosen = request.GET.get("benchmark")
        initial = {"benchmark": chosen} if chosen in {b.slug for b in benchmarks} else {}
        return _render_submit(request, SubmissionForm(initial=initial, example_sets=example_sets),
                              benchmarks, user)
    _ = request.POST  # parse the body now: the size cap may stop it part way
    too_large = upload_too_large(request)
    if too_large:
        form, status = _too_large_form(request, example_sets, too_large), 413
    else:
        rejected = upload_csrf_failure(request)
        if rejected is not None:
            return rejected
        form = SubmissionForm(request.POST, request.FILES, example_sets=example_sets)
        result = _create(form, user)
        if isinstance(result, Submission):
            url = reverse("submission_detail", args=[result.pk])
            if _wants_json(request):
                return JsonResponse({"id": result.pk, "status": result.status, "url": url},
                                    status=201)
            messages.success(request, "Submission received: it is queued for scoring.")
            return redirect(url)
        status = result
    if _wants_json(request):
        return _errors_json(form, status)
    return _render_submit(request, form, benchmarks, user, status)


def _visible(request: HttpRequest, submission_id: int) -> Submission:
    try:
        return submission_visible_get(submission_id=submission_id, user=request.user)
    except Submission.DoesNotExist:
        raise Http404("no such submission") from None


def submission_detail(request: HttpRequest, submission_id: int) -> HttpResponse:
    submission = _visible(request, submission_id)
    corrected = label_set_correctable_slug(benchmark_id=submission.benchmark_id)
    scores = [score_view(s, corrected=corrected)
              for s in submission_scores(submission=submission).values()]
    return render(request, "leaderboard/submission_detail.html", {
        "submission": submission,
        "scores": scores,
        # the page links the mistake gallery only where it has a section to show
        "galleries": {s.gallery for s in scores if s.gallery},
        "releases": release_views_for_submission(submission=submission),
        "files": submission.files.select_related("example_set").order_by("example_set__slug"),
        "is_owner": request.user.is_authenticated and submission.owner_id == request.user.pk,
        "pending": submission.status in (Status.QUEUED, Status.RUNNING),
        "pending_hint": _pending_hint(submission),
        "awaiting_review": [s for s in scores if s.awaiting_review],
        "files_kept_until": submission_files_kept_until(submission=submission),
        "rerunnable": (submission.status == Status.FAILED and submission.withdrawn is None
                       and submission.failure_code in PLATFORM_FAILURE_CODES
                       and submission.files_removed is None),
        "can_withdraw_as_maintainer": (submission.withdrawn is None
                                       and submission_user_can_withdraw_any(
                                           user=request.user, submission=submission)),
    })


@require_GET
@never_cache
def submission_status(request: HttpRequest, submission_id: int) -> JsonResponse:
    """{status, failure_reason, hint}: what the submission page polls while it is pending
    (static/leaderboard/status.js)."""
    submission = _visible(request, submission_id)
    return JsonResponse({"id": submission.pk, "status": submission.status,
                         "failure_reason": submission.failure_reason,
                         "hint": _pending_hint(submission)})


def _pending_hint(submission: Submission) -> str:
    """The status line's words while queued or running ("" otherwise): the page and its
    status.json say the same."""
    hints: dict[str, str] = {Status.QUEUED: "waiting for a worker to score it.",
                             Status.RUNNING: "a worker is scoring it now."}
    return hints.get(submission.status, "")


@login_required
@require_POST
def submission_visibility(request: HttpRequest, submission_id: int) -> HttpResponse:
    submission = _visible(request, submission_id)
    if submission.owner_id != request.user.pk:
        raise Http404("no such submission")
    public = request.POST.get("public") == "1"
    try:
        submission_visibility_set(submission=submission, public=public)
    except SubmissionError as exc:
        messages.error(request, exc.message)
        return redirect("submission_detail", submission_id=submission.pk)
    messages.success(request, "The submission is now public." if public
                     else "The submission is now private: only you can see it.")
    return redirect("submission_detail", submission_id=submission.pk)


@login_required
def submission_list(request: HttpRequest) -> HttpResponse:
    submissions = list(submission_list_for_owner(owner=_user(request)))
    reference = reference_family().name
    for submission in submissions:
        # the score on the reference label set (of the reference family: docs/families.md)
        original = [s for s in submission.scores.all() if s.label_set.family == reference]
        original.sort(key=lambda s: s.label_set_version.number)
        submission.original_score = original[-1] if original else None  # type: ignore[attr-defined]
    return render(request, "leaderboard/submission_list.html", {"submissions": submissions})
