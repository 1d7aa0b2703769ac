"""How long a failed submission's stored files are kept: EVALSERVER_FAILED_FILES_RETENTION_DAYS
after it failed (`Submission.finished_at` is when it finished, scored or failed), long enough
for its owner to look at what was refused; then a periodic task
(leaderboard.tasks.cpu.remove_failed_files,
from Celery beat) removes them. The rows stay (the page and the API still name each file, its
size and SHA-256); the stored names are cleared, so no row points at a file that is gone.

The same holds for a withdrawn submission (counted from when it was withdrawn) and a
cancelled one (from when it was cancelled): none is scored again. A failed one may be run
again only while its files are kept (leaderboard/submissions/control/services.py refuses a
re-run within RERUN_RETENTION_MARGIN of their removal), and a re-run row is no longer failed,
so the removal's conditional update below skips it.
"""

from __future__ import annotations

from datetime import datetime, timedelta

from django.conf import settings
from django.core.files.storage import Storage
from django.db import transaction
from django.db.models import Q
from django.utils import timezone

from leaderboard.submissions.models import CheckpointFile, Submission, SubmissionFile

# Submissions handled per run: a backlog (a lower retention setting) is worked off over a few
# runs rather than in one long task.
REMOVE_BATCH = 500


def _retention() -> timedelta:
    return timedelta(days=settings.EVALSERVER_FAILED_FILES_RETENTION_DAYS)


def _done() -> Q:
    """The submissions whose files nothing will read again: failed, cancelled (kept from
    `finished_at`), withdrawn (from `withdrawn`, whatever the status but running: a running
    one may still be writing its compact files)."""
    return (Q(status__in=(Submission.Status.FAILED, Submission.Status.CANCELLED))
            | Q(withdrawn__isnull=False) & ~Q(status=Submission.Status.RUNNING))


def submission_files_kept_until(*, submission: Submission) -> datetime | None:
    """When a failed, cancelled or withdrawn submission's stored files will be removed; None
    unless it is one and still has them."""
    if submission.files_removed is not None or submission.status == Submission.Status.RUNNING:
        return None
    if submission.withdrawn is not None:
        return submission.withdrawn + _retention()
    if (submission.status not in (Submission.Status.FAILED, Submission.Status.CANCELLED)
            or submission.finished_at is None):
        return None
    return submission.finished_at + _retention()


def _stored(submission_id: int) -> list[tuple[Storage, str]]:
    """(storage, name) of every file stored for the submission."""
    stored: list[tuple[Storage, str]] = []
    for model, fields in ((SubmissionFile, ("file", "compact")), (CheckpointFile, ("file",))):
        for row in model.objects.filter(submission_id=submission_id):
            for name in fields:
                field_file = getattr(row, name)
                if field_file.name:
                    stored.append((field_file.storage, str(field_file.name)))
    # once each: a submission's rows name its one zip of uploads and one compact file
    return list(dict.fromkeys(stored))


def failed_submission_files_remove(*, now: datetime | None = None) -> list[int]:
    """Remove the stored files of submissions that failed, were cancelled or withdrawn more
    than the retention period ago; returns their ids. Idempotent: the files go first
    (deleting a missing one is a no-op), then the row records it, so a run cut short is
    finished by the next."""
    now = now or timezone.now()
    cutoff = now - _retention()
    expired_now = _done() & (Q(withdrawn__lt=cutoff) | Q(withdrawn__isnull=True,
                                                         finished_at__lt=cutoff))
    expired = (Submission.objects
               .filter(expired_now, files_removed__isnull=True)
               .order_by("id").values_list("id", flat=True)[:REMOVE_BATCH])
    removed: list[int] = []
    for submission_id in list(expired):
        for storage, name in _stored(submission_id):
            storage.delete(name)
        with transaction.atomic():
            if Submission.objects.filter(expired_now, id=submission_id,
                                         files_removed__isnull=True).update(
                    files_removed=now) != 1:
                continue  # another run recorded it first
            SubmissionFile.objects.filter(submission_id=submission_id).update(file="",
                                                                              compact="")
            CheckpointFile.objects.filter(submission_id=submission_id).update(file="")
        removed.append(submission_id)
    return removed
