"""A failed submission's stored files are kept EVALSERVER_FAILED_FILES_RETENTION_DAYS after it
failed (its page says until when), then removed by the hourly task; nothing else is touched."""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path

import pytest
from django.conf import settings
from django.test import Client
from django.utils import timezone
from pytest_django.fixtures import Settings

from leaderboard.submissions.models import Submission, SubmissionFile
from leaderboard.submissions.services import submission_create
from leaderboard.tasks.cpu import remove_failed_files, score_submission
from tests import factories
from tests.scored_models import submit_model

pytestmark = pytest.mark.django_db

NOTHING_REMOVED = {"submissions": [], "bundle_uploads": []}


def _media() -> set[str]:
    root = Path(settings.MEDIA_ROOT)
    return {str(p.relative_to(root)) for p in root.rglob("*") if p.is_file()}


def _stored_names(submission: Submission) -> set[str]:
    names = set()
    for row in SubmissionFile.objects.filter(submission=submission):
        names |= {str(f.name) for f in (row.file, row.compact) if f.name}
    return names


def _failed(owner_name: str, *, days_ago: float, cifar10_1: bool = False) -> Submission:
    """A CIFAR-10 submission that the worker's parse fails (the in-request check is off for it),
    failed `days_ago` days ago. With `cifar10_1`, a good cifar10.1-v6 file comes too: the worker
    parses it, but stores no compact array: it parses every file before storing any."""
    ids = [3] * 10_000
    ids[17] = 10
    files = {"cifar10-test": factories.upload_json(ids, "bad.json")}
    if cifar10_1:
        files = {"cifar10.1-v6": factories.upload_json([1] * 2000, "good.json"), **files}
    submission = submission_create(owner=factories.user_create(owner_name),
                                   benchmark=factories.cifar10(), model_name=owner_name,
                                   files=files)
    assert score_submission.apply(args=[submission.pk], task_id=f"t{submission.pk}").get() \
        == "failed"
    Submission.objects.filter(pk=submission.pk).update(
        finished_at=timezone.now() - timedelta(days=days_ago))
    submission.refresh_from_db()
    return submission


@pytest.fixture
def checked_in_worker(loaded: Settings) -> Settings:
    loaded.EVALSERVER_INLINE_CHECK_TEXT_BYTES = 0  # bad files reach the worker and fail there
    return loaded


def test_it_removes_exactly_the_expired_failed_submissions_files(
    checked_in_worker: Settings, data_dir: Path
) -> None:
    expired = [_failed("old", days_ago=8), _failed("older", days_ago=30, cifar10_1=True)]
    recent = _failed("recent", days_ago=6.9)
    scored = submit_model(data_dir, "resnet_basic_110")
    assert score_submission.apply(args=[scored.pk], task_id="t-scored").get() == "scored"
    Submission.objects.filter(pk=scored.pk).update(finished_at=timezone.now() - timedelta(days=60))
    queued = submit_model(data_dir, "vgg16_keras")
    gone = set().union(*(_stored_names(s) for s in expired))
    # a failed file: no compact array stored, not even the good file's
    assert not any(name.startswith("compact/") for name in gone)
    before = _media()
    assert gone <= before

    # ordered by id: created in this order; no bundle upload failed
    assert remove_failed_files.apply().get() == {"submissions": [s.pk for s in expired],
                                                 "bundle_uploads": []}

    assert _media() == before - gone
    for submission in expired:
        submission.refresh_from_db()
        assert submission.files_removed is not None
        assert set(submission.files.values_list("file", "compact")) == {("", "")}
        # the rows stay: the page and the API still name each file
        assert submission.files.count() == (2 if submission.model_name == "older" else 1)
    for kept in (recent, scored, queued):
        kept.refresh_from_db()
        assert kept.files_removed is None
        assert _stored_names(kept) and _stored_names(kept) <= _media()
    assert remove_failed_files.apply().get() == NOTHING_REMOVED  # nothing left to do


def test_it_says_until_when_the_files_are_kept_then_that_they_were_removed(
    checked_in_worker: Settings, client: Client
) -> None:
    checked_in_worker.EVALSERVER_FAILED_FILES_RETENTION_DAYS = 3
    submission = _failed("frank", days_ago=1)
    client.force_login(submission.owner)
    assert submission.finished_at is not None
    until = (submission.finished_at + timedelta(days=3)).strftime("%Y-%m-%d %H:%M")

    kept = client.get(f"/submissions/{submission.pk}/").content.decode()

    assert f'<p id="files-retention">Files kept until {until} UTC, then removed.</p>' in kept
    assert remove_failed_files.apply().get() == NOTHING_REMOVED  # not yet: failed one day ago
    Submission.objects.filter(pk=submission.pk).update(
        finished_at=timezone.now() - timedelta(days=3, seconds=1))
    assert remove_failed_files.apply().get() == {"submissions": [submission.pk],
                                                 "bundle_uploads": []}
    submission.refresh_from_db()
    assert submission.files_removed is not None
    removed_on = submission.files_removed.strftime("%Y-%m-%d %H:%M")

    page = client.get(f"/submissions/{submission.pk}/").content.decode()

    assert f'<p id="files-retention">Files removed on {removed_on} UTC.</p>' in page
    assert "Files kept until" not in page
    assert "bad.json" in page  # still named, with its size


def test_it_shows_no_retention_line_for_a_scored_submission(
    loaded: Settings, data_dir: Path, client: Client
) -> None:
    submission = submit_model(data_dir, "resnet_basic_110")
    assert score_submission.apply(args=[submission.pk], task_id="t").get() == "scored"
    client.force_login(submission.owner)

    page = client.get(f"/submissions/{submission.pk}/").content.decode()

    assert 'id="files-retention"' not in page

