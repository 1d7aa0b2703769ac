"""A participant controls their submissions through the API: cancel one still queued (the
claim and the cancel race on one conditional update), run again one the server failed (free
of the daily quota, queued once), withdraw one (off the board, its significance refreshed),
and the refusals, each in the error shape. The daily quota is counted exactly."""

from __future__ import annotations

import threading
from datetime import timedelta
from pathlib import Path
from typing import Any
from unittest import mock

import pytest
from django.db.models import Count
from django.utils import timezone
from pytest_django.fixtures import Settings
from rest_framework.test import APIClient

from leaderboard import queue
from leaderboard.jobs.sweep import jobs_sweep
from leaderboard.submissions.control.services import submission_cancel
from leaderboard.submissions.file_checks import SubmissionError
from leaderboard.submissions.models import Score, Submission
from leaderboard.submissions.retention import failed_submission_files_remove
from leaderboard.submissions.services import submission_quota_left
from leaderboard.tasks.cpu import score_submission
from leaderboard.tasks.registry import JOBS
from tests import factories, task_names
from tests.api_support import post_files, token_client
from tests.conftest import wait_for_status

pytestmark = pytest.mark.django_db

MODEL = "resnet_basic_110"
CIFAR10_LABEL_SETS = {"original", "corrected", "cifar10h", "cifar10.1-v4", "cifar10.1-v6"}
URL = "/api/submissions/{}/{}/"


def _post(client: APIClient, submission: Submission, action: str, **data: str) -> dict:
    response = client.post(URL.format(submission.pk, action), data, format="json")
    return {"http": response.status_code, **response.json()}


def _worker_lost(submission: Submission) -> None:
    """What the sweep does to a submission whose worker vanished once too often."""
    Submission.objects.filter(pk=submission.pk).update(
        status=Submission.Status.RUNNING, started=timezone.now() - timedelta(hours=2),
        claimed_by="vanished", attempts=JOBS["submission"].max_attempts())
    assert jobs_sweep(JOBS["submission"]) == []
    submission.refresh_from_db()
    assert (submission.status, submission.failure_code) == ("failed", "worker_lost")


def test_it_counts_only_scored_pending_and_user_fault_failures_in_the_daily_quota(
    loaded: Settings, data_dir: Path, sent: list[tuple[str, int]]
) -> None:
    loaded.EVALSERVER_DAILY_QUOTA = 5
    alice, benchmark = factories.user_create("alice"), factories.cifar10()

    def row(status: str, code: str = "") -> Submission:
        return Submission.objects.create(owner=alice, benchmark=benchmark, model_name=status,
                                         status=status, failure_code=code)

    row("scored")
    row("failed", "wrong_row_count")  # the file's fault: counted
    for code in ("worker_lost", "time_limit", "internal_error"):  # the server's: not counted
        row("failed", code)
    row("cancelled")
    queued = row("queued")  # pending: counted, else a burst would overrun the quota
    old = row("scored")  # more than a day ago: not counted
    Submission.objects.filter(pk=old.pk).update(
        created=timezone.now() - timedelta(days=1, seconds=5))
    Submission.objects.create(owner=factories.user_create("bob"), benchmark=benchmark,
                              model_name="bob's", status="scored")

    assert submission_quota_left(owner=alice, benchmark=benchmark) == 5 - 3
    client = token_client(alice)
    assert _post(client, queued, "cancel")["http"] == 200
    assert submission_quota_left(owner=alice, benchmark=benchmark) == 5 - 2
    paths = factories.cifar10_model_files(data_dir, MODEL)
    for left in (2, 1, 0):
        created = post_files(client, {"cifar10-test": paths["cifar10-test"]},
                             benchmark="cifar10", model_name=MODEL)
        assert created.status_code == 201, created.content
        assert submission_quota_left(owner=alice, benchmark=benchmark) == left
    refused = post_files(client, {"cifar10-test": paths["cifar10-test"]},
                         benchmark="cifar10", model_name=MODEL)
    assert refused.status_code == 429
    assert refused.json()["error"]["code"] == "quota_exceeded"
    # a re-run of a server failure is free: it neither needs nor uses quota
    lost = Submission.objects.get(owner=alice, failure_code="worker_lost")
    Submission.objects.filter(pk=lost.pk).update(finished_at=timezone.now())
    assert _post(client, lost, "rerun")["http"] == 200
    assert submission_quota_left(owner=alice, benchmark=benchmark) == 0
    assert Submission.objects.filter(owner=alice).count() == 8 + 3


def test_it_cancels_a_queued_submission_and_no_worker_scores_it(
    loaded: Settings, data_dir: Path, sent: list[tuple[str, int]]
) -> None:
    submission = factories.submission_for_model(data_dir, MODEL)
    client = token_client(submission.owner)

    body = _post(client, submission, "cancel")

    assert (body["http"], body["status"], body["id"]) == (200, "cancelled", submission.pk)
    submission.refresh_from_db()
    assert (submission.status, submission.attempts) == ("cancelled", 0)
    assert submission.finished_at is not None
    # the message queued with it is still delivered: its claim is refused, nothing scored
    assert score_submission.apply(args=[submission.pk], task_id="late").get() == "skipped"
    submission.refresh_from_db()
    assert (submission.status, submission.claimed_by) == ("cancelled", "")
    assert not Score.with_hidden.filter(submission=submission).exists()
    again = _post(client, submission, "cancel")
    assert again == {"http": 409, "error": {
        "code": "not_cancellable",
        "message": "only a queued submission can be cancelled; this one is cancelled"}}


def test_it_lets_the_first_of_a_claim_and_a_cancel_decide(
    loaded: Settings, data_dir: Path, sent: list[tuple[str, int]]
) -> None:
    claimed_first = factories.submission_for_model(data_dir, MODEL)
    cancelled_first = factories.submission_for_model(data_dir, "vgg16_keras")

    assert JOBS["submission"].claim(job_id=claimed_first.pk, task_id="t-1")
    refused = _post(token_client(claimed_first.owner), claimed_first, "cancel")
    assert refused == {"http": 409, "error": {
        "code": "not_cancellable",
        "message": "only a queued submission can be cancelled; this one is running"}}
    claimed_first.refresh_from_db()
    assert (claimed_first.status, claimed_first.claimed_by) == ("running", "t-1")

    assert _post(token_client(cancelled_first.owner), cancelled_first, "cancel")["http"] == 200
    assert not JOBS["submission"].claim(job_id=cancelled_first.pk, task_id="t-2")
    assert not JOBS["submission"].claim(job_id=cancelled_first.pk, task_id="t-2", retry=True)
    cancelled_first.refresh_from_db()
    assert (cancelled_first.status, cancelled_first.attempts) == ("cancelled", 0)


def test_it_reruns_a_server_failure_once_with_a_fresh_attempt_count(
    loaded: Settings, data_dir: Path, sent: list[tuple[str, int]],
    django_capture_on_commit_callbacks: Any,
) -> None:
    submission = factories.submission_for_model(data_dir, MODEL)
    _worker_lost(submission)
    client = token_client(submission.owner)

    with django_capture_on_commit_callbacks(execute=True):
        body = _post(client, submission, "rerun")

    assert (body["http"], body["status"]) == (200, "queued")
    assert (body["failure_code"], body["failure_reason"], body["reruns"]) == (None, None, 1)
    submission.refresh_from_db()
    assert (submission.status, submission.attempts, submission.claimed_by) == ("queued", 0, "")
    assert (submission.started, submission.finished_at) == (None, None)
    assert sent == [(task_names.SCORE_SUBMISSION, submission.pk)]
    with django_capture_on_commit_callbacks(execute=True):
        assert _post(client, submission, "rerun") == {"http": 409, "error": {
            "code": "not_rerunnable",
            "message": "only a failed submission can be run again; this one is queued"}}
    assert sent == [(task_names.SCORE_SUBMISSION, submission.pk)]  # queued once

    # the message sent, delivered twice: scored once
    assert score_submission.apply(args=[submission.pk], task_id="r-1").get() == "scored"
    assert score_submission.apply(args=[submission.pk], task_id="r-2").get() == "skipped"
    submission.refresh_from_db()
    assert (submission.status, submission.attempts, submission.reruns) == ("scored", 1, 1)
    assert sorted(Score.objects.filter(submission=submission)
                  .values_list("label_set__slug", flat=True)) == sorted(CIFAR10_LABEL_SETS)


def test_it_refuses_what_a_participant_may_not_do(
    loaded: Settings, data_dir: Path, sent: list[tuple[str, int]]
) -> None:
    bad = factories.submission_for_model(data_dir, MODEL)
    Submission.objects.filter(pk=bad.pk).update(
        status="failed", failure_code="wrong_row_count", failure_reason="x",
        finished_at=timezone.now())
    alice = token_client(bad.owner)
    assert _post(alice, bad, "rerun") == {"http": 409, "error": {
        "code": "not_rerunnable",
        "message": "it failed because of its input (wrong_row_count), not the server: fix the "
                   "file and submit again"}}

    scored = factories.submission_for_model(data_dir, "vgg16_keras", owner=bad.owner)
    assert score_submission.apply(args=[scored.pk], task_id="s").get() == "scored"
    assert _post(alice, scored, "cancel")["error"]["code"] == "not_cancellable"
    assert _post(alice, scored, "rerun")["error"]["code"] == "not_rerunnable"

    # someone else's: a public scored one is visible (403), a pending one is not (404)
    bob = token_client(factories.user_create("bob"))
    for action in ("cancel", "rerun", "withdraw"):
        assert _post(bob, scored, action) == {"http": 403, "error": {
            "code": "not_owner",
            "message": "only the submitter or a host of the benchmark's team can withdraw a "
                       "submission"
            if action == "withdraw" else "only the submitter can do this to a submission"}}
        assert _post(bob, bad, action) == {"http": 404, "error": {
            "code": "not_found", "message": f"no submission {bad.pk} that you can see"}}
    assert APIClient().post(URL.format(scored.pk, "cancel")).json()["error"]["code"] == \
        "not_authenticated"

    # a server failure whose files are gone (the retention period) cannot run again
    lost = factories.submission_for_model(data_dir, "resnet_preact_basic_110", owner=bad.owner)
    _worker_lost(lost)
    Submission.objects.filter(pk=lost.pk).update(
        finished_at=timezone.now() - timedelta(days=loaded.EVALSERVER_FAILED_FILES_RETENTION_DAYS,
                                               minutes=1))
    assert failed_submission_files_remove() == [lost.pk]
    assert _post(alice, lost, "rerun") == {"http": 409, "error": {
        "code": "files_removed",
        "message": "this submission's files are removed (or about to be): submit it again"}}
    assert Submission.objects.values_list("status", flat=True).get(pk=lost.pk) == "failed"


def test_it_withdraws_a_submission_for_good_and_a_maintainer_says_why(
    loaded: Settings, data_dir: Path, sent: list[tuple[str, int]]
) -> None:
    mine = factories.submission_for_model(data_dir, MODEL)
    theirs = factories.submission_for_model(data_dir, "vgg16_keras")
    for submission in (mine, theirs):
        assert score_submission.apply(args=[submission.pk], task_id=f"s{submission.pk}"
                                      ).get() == "scored"
    owner = token_client(mine.owner)

    body = _post(owner, mine, "withdraw")

    assert (body["http"], body["public"], body["withdrawn_reason"]) == (200, False, None)
    assert body["withdrawn"] is not None and body["status"] == "scored"
    assert set(body["scores"]) == {"original", "corrected", "cifar10h", "cifar10.1-v4",
                                   "cifar10.1-v6"}  # kept for its owner
    assert _post(owner, mine, "withdraw") == {"http": 409, "error": {
        "code": "already_withdrawn", "message": "this submission is already withdrawn"}}
    public = owner.patch(f"/api/submissions/{mine.pk}/", {"public": True}, format="json")
    assert public.status_code == 409
    assert public.json() == {"error": {
        "code": "withdrawn",
        "message": "this submission was withdrawn: it cannot be shown on the leaderboard "
                   "again"}}
    # off the public record: no one else sees it any more
    assert APIClient().get(f"/api/submissions/{mine.pk}/").status_code == 404

    # a host of the benchmark's team withdraws someone else's, with a reason
    maintainer = factories.host_create("maria")
    as_maintainer = token_client(maintainer)
    assert _post(as_maintainer, theirs, "withdraw") == {"http": 400, "error": {
        "code": "missing_reason", "message": "say why: the submitter sees the reason",
        "field": "reason"}}
    reason = "the predictions were fitted to the test labels"
    assert _post(as_maintainer, theirs, "withdraw", reason=reason)["http"] == 200
    seen = token_client(theirs.owner).get(f"/api/submissions/{theirs.pk}/").json()
    assert (seen["withdrawn_reason"], seen["public"]) == (reason, False)
    theirs.refresh_from_db()
    assert theirs.withdrawn_by == maintainer

    board = APIClient().get("/api/benchmarks/cifar10/leaderboard/").json()
    assert board["rows"] == []


def test_it_removes_a_withdrawn_submissions_files_after_the_retention_period(
    loaded: Settings, data_dir: Path, sent: list[tuple[str, int]]
) -> None:
    submission = factories.submission_for_model(data_dir, MODEL)
    assert score_submission.apply(args=[submission.pk], task_id="s").get() == "scored"
    assert _post(token_client(submission.owner), submission, "withdraw")["http"] == 200
    names = [row.file.name for row in submission.files.all()]
    days = loaded.EVALSERVER_FAILED_FILES_RETENTION_DAYS
    assert failed_submission_files_remove(now=timezone.now() + timedelta(days=days) -
                                          timedelta(minutes=1)) == []
    later = timezone.now() + timedelta(days=days, minutes=1)

    assert failed_submission_files_remove(now=later) == [submission.pk]

    submission.refresh_from_db()
    assert submission.files_removed == later
    assert [row.file.name for row in submission.files.all()] == [""] * len(names)
    assert all(not row.file.storage.exists(name) for row, name in
               zip(submission.files.all(), names, strict=True))
    assert Score.objects.filter(submission=submission).count() == 5  # the scores stay


@pytest.mark.slow
@pytest.mark.django_db(transaction=True)
def test_it_reruns_a_worker_lost_submission_on_a_real_worker_and_scores_it_once(
    loaded: Settings, data_dir: Path, scoring_worker: Path
) -> None:
    # its first message never reaches the broker: only the re-run's does
    with mock.patch.object(queue, "task_send"):
        submission = factories.submission_for_model(data_dir, MODEL)
    _worker_lost(submission)
    loaded.EVALSERVER_DAILY_QUOTA = 1
    assert submission_quota_left(owner=submission.owner, benchmark=submission.benchmark) == 1

    body = _post(token_client(submission.owner), submission, "rerun")

    assert (body["http"], body["status"], body["reruns"]) == (200, "queued", 1)
    assert wait_for_status(submission.pk, ("scored", "failed"), log=scoring_worker) == "scored"
    submission.refresh_from_db()
    assert (submission.attempts, submission.reruns, submission.failure_code) == (1, 1, "")
    per_label_set = (Score.objects.filter(submission=submission).values("label_set__slug")
                     .annotate(n=Count("id")).values_list("label_set__slug", "n"))
    assert dict(per_label_set) == dict.fromkeys(CIFAR10_LABEL_SETS, 1)
    # one message, the re-run's (the first one never reached the broker)
    received = [line for line in scoring_worker.read_text().splitlines()
                if f"Task {task_names.SCORE_SUBMISSION}[" in line and line.endswith("received")]
    assert len(received) == 1, received
    # scored now: it counts, once
    assert submission_quota_left(owner=submission.owner, benchmark=submission.benchmark) == 0


@pytest.mark.django_db(transaction=True)
def test_it_lets_one_of_a_concurrent_claim_and_cancel_win(
    loaded: Settings, data_dir: Path, sent: list[tuple[str, int]]
) -> None:
    from django.db import connection

    rounds = 6
    submissions = [factories.submission_for_model(data_dir, MODEL,
                                                  owner=factories.user_create(f"u{i}"))
                   for i in range(rounds)]
    for submission in submissions:
        barrier = threading.Barrier(2)
        won: dict[str, bool] = {}

        def claim(job_id: int = submission.pk, gate: threading.Barrier = barrier,
                  out: dict[str, bool] = won) -> None:
            gate.wait()
            out["claim"] = JOBS["submission"].claim(job_id=job_id, task_id=f"t-{job_id}")
            connection.close()

        def cancel(row: Submission = submission, gate: threading.Barrier = barrier,
                   out: dict[str, bool] = won) -> None:
            gate.wait()
            try:
                submission_cancel(submission=row, user=row.owner)
                out["cancel"] = True
            except SubmissionError as exc:
                assert exc.code == "not_cancellable"
                out["cancel"] = False
            connection.close()

        threads = [threading.Thread(target=claim), threading.Thread(target=cancel)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        submission.refresh_from_db()
        # exactly one wins, and the row says which
        assert won["claim"] != won["cancel"], won
        assert submission.status == ("running" if won["claim"] else "cancelled")
        assert submission.attempts == (1 if won["claim"] else 0)
