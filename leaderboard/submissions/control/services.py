"""Withdraw, cancel, re-run: each one conditional UPDATE (`... WHERE status = ...`), so that
the state a worker or another request left decides, never a value read earlier.

- cancel: queued -> cancelled. The worker's claim takes only queued rows
  (leaderboard/jobs/lifecycle.py `job_claim`), so whichever of the claim and the cancel
  updates the row first wins, and a cancelled submission is never scored.
- re-run: failed with a code of the server's (`PLATFORM_FAILURE_CODES`) -> queued, with a
  fresh attempt count, queued by name after commit. A second request finds it queued and
  changes nothing, so it is queued once.
- withdraw: off every board (made private; `submission_visibility_set` refuses to make it
  public again), scores kept for its owner; the boards' significance is refreshed after the
  commit, and the files are removed after the retention period (retention.py).
"""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from django.conf import settings
from django.contrib.auth.models import User
from django.db import transaction
from django.db.models import F
from django.utils import timezone

from leaderboard import queue
from leaderboard.catalog.services import benchmark_leaderboard_touch
from leaderboard.catalog.teams import permissions
from leaderboard.jobs.lifecycle import PLATFORM_FAILURE_CODES, job_cancel, job_request_fields
from leaderboard.submissions.board_significance import board_significance_schedule
from leaderboard.submissions.file_checks import SubmissionError
from leaderboard.submissions.models import Submission

Status = Submission.Status
# A re-run must start well before the retention sweep may remove the files it reads.
RERUN_RETENTION_MARGIN = timedelta(hours=1)


def submission_user_can_withdraw_any(*, user: Any, submission: Submission) -> bool:
    """A host of the submission's benchmark's team (or a superuser) may withdraw anyone's
    submission, with a reason its owner sees (docs/hosts/teams.md)."""
    return permissions.benchmark_user_can_host(user=user, benchmark=submission.benchmark)


def _owned(submission: Submission, user: User) -> None:
    if submission.owner_id != user.pk:
        raise SubmissionError("not_owner", "only the submitter can do this to a submission",
                              http_status=403)


def _fresh(submission: Submission) -> Submission:
    submission.refresh_from_db()
    return submission


def submission_cancel(*, submission: Submission, user: User) -> Submission:
    """queued -> cancelled, for its owner; 409 `not_cancellable` once a worker has claimed it
    (or it finished)."""
    _owned(submission, user)
    if not job_cancel(Submission, job_id=submission.pk):
        status = Submission.objects.values_list("status", flat=True).get(pk=submission.pk)
        raise SubmissionError("not_cancellable", f"only a queued submission can be cancelled; "
                              f"this one is {status}", http_status=409)
    return _fresh(submission)


def submission_rerun(*, submission: Submission, user: User) -> Submission:
    """failed (the server's fault) -> queued with a fresh attempt count, for its owner, free
    of the daily quota; queued again once the transaction commits. 409 `not_rerunnable`
    otherwise (a bad file is the user's to fix: submit again), `files_removed` when its
    files are gone or about to be."""
    _owned(submission, user)
    kept_since = (timezone.now() - timedelta(days=settings.EVALSERVER_FAILED_FILES_RETENTION_DAYS)
                  + RERUN_RETENTION_MARGIN)
    with transaction.atomic():
        rows = Submission.objects.filter(
            pk=submission.pk, status=Status.FAILED, failure_code__in=PLATFORM_FAILURE_CODES,
            withdrawn__isnull=True)
        if not rows.filter(files_removed__isnull=True, finished_at__gte=kept_since).update(
                **job_request_fields(), reruns=F("reruns") + 1):
            current = Submission.objects.get(pk=submission.pk)
            if rows.exists():
                raise SubmissionError("files_removed", "this submission's files are removed "
                                      "(or about to be): submit it again", http_status=409)
            raise SubmissionError("not_rerunnable", _not_rerunnable(current), http_status=409)
        queue.job_queue(kind="submission", job_id=submission.pk, variant=submission.kind)
    return _fresh(submission)


def _not_rerunnable(submission: Submission) -> str:
    if submission.withdrawn is not None:
        return "this submission was withdrawn"
    if submission.status != Status.FAILED:
        return f"only a failed submission can be run again; this one is {submission.status}"
    return (f"it failed because of its input ({submission.failure_code}), not the server: "
            "fix the file and submit again")


def submission_withdraw(*, submission: Submission, user: User, reason: str = "",
                        confirmed: bool = True) -> Submission:
    """Take a submission off every board for good, by its owner (any reason, or none) or a
    maintainer (a reason required: its owner sees it). Its scores stay, for its owner; a
    queued one is cancelled as well, so no worker scores it. 409 `already_withdrawn`.
    `confirmed` False (the page's "I understand" unticked): `not_confirmed`, nothing done,
    after the refusals above, which it would otherwise hide."""
    reason = reason.strip()
    if submission.owner_id != user.pk:
        if not submission_user_can_withdraw_any(user=user, submission=submission):
            raise SubmissionError("not_owner", "only the submitter or a host of the "
                                  "benchmark's team can withdraw a submission", http_status=403)
        if not reason:
            raise SubmissionError("missing_reason", "say why: the submitter sees the reason",
                                  field="reason")
    if not confirmed:
        raise SubmissionError("not_confirmed", "Nothing was done: a withdrawal cannot be "
                              "undone, so tick \"I understand\" to withdraw.")
    now = timezone.now()
    with transaction.atomic():
        if not Submission.objects.filter(pk=submission.pk, withdrawn__isnull=True).update(
                withdrawn=now, withdrawn_by=user, withdrawn_reason=reason, public=False):
            raise SubmissionError("already_withdrawn", "this submission is already withdrawn",
                                  http_status=409)
        job_cancel(Submission, job_id=submission.pk)
        benchmark_leaderboard_touch(benchmark_id=submission.benchmark_id)
    # After the commit: the boards' rank_ub without it (docs/metrics.md §10.4 updates from
    # the rows that left).
    board_significance_schedule(benchmark_id=submission.benchmark_id)
    return _fresh(submission)
