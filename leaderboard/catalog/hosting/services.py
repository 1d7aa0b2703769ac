"""Benchmarks a host team hosts: its hosts add one by uploading its bundle as a .zip for the
team, and hide or show it (docs/hosts/teams.md).

Uploads (docs/bundles.md): the web process
stores the file (streamed to disk under the upload cap) and queues it; a worker extracts,
checks and loads it with the same code as `manage.py benchmark_add`, and records the outcome.

queued -> running -> done | failed, the claimed-job lifecycle of leaderboard/jobs/: the
worker's runner claims (leaderboard/tasks/cpu.py), a redelivered task (same id) may take its own
claim
back, a duplicate cannot, and only the task holding the claim records the outcome. Adding a
bundle is idempotent (re-running the same bundle creates nothing), so a job run again after a
lost worker is harmless.

The uploaded archive is untrusted: nothing here opens it beyond its first four bytes; the
worker's loader refuses unsafe entries, zip bombs and pickles (docs/bundles.md §7) before
it writes anything.

A refused archive is kept EVALSERVER_FAILED_FILES_RETENTION_DAYS after it failed, like a failed
submission's files, then removed by the hourly task (leaderboard.tasks.cpu.remove_failed_files): the
row stays, with an empty `bundle`.

Hiding (`benchmark_visibility_set`): a hidden benchmark is left out of every public list, board
and the submit form; its rows, submissions and scores stay. A benchmark is never deleted while
submissions exist: hiding is how it is taken down.
"""

from __future__ import annotations

from datetime import datetime, timedelta
from pathlib import PurePosixPath

from django.conf import settings
from django.contrib.auth.models import User
from django.core.files.uploadedfile import UploadedFile
from django.db import transaction
from django.utils import timezone

from leaderboard import queue
from leaderboard.catalog.bundle_loading import benchmark_bundle_add
from leaderboard.catalog.hosting.selectors import host_team_list_hosted_by
from leaderboard.catalog.models import Benchmark, BundleUpload
from leaderboard.catalog.services import benchmark_leaderboard_touch
from leaderboard.catalog.teams.models import HostTeam
from leaderboard.catalog.teams.permissions import team_user_can_host
from leaderboard.common.api_errors import file_too_large_error
from leaderboard.common.errors import ServiceError
from leaderboard.common.storage import stored_file_path
from leaderboard.jobs.lifecycle import job_finish

Status = BundleUpload.Status
BUNDLE_FIELD = "bundle"
# A zip archive starts with a local file header, or with the end record when it is empty.
ZIP_MAGIC = (b"PK\x03\x04", b"PK\x05\x06")

__all__ = [
    "BundleUploadError",
    "bundle_upload_create",
    "bundle_upload_run",
    "failed_bundle_upload_files_remove",
]
# Uploads handled per run: a backlog is worked off over a few hourly runs.
REMOVE_BATCH = 500


class BundleUploadError(ServiceError):
    """An upload refused in the request: nothing stored."""


TEAM_FIELD = "team"


def bundle_upload_team(*, uploader: User, team: str | None) -> HostTeam:
    """The team an upload is for: `team` (a slug), which the uploader must host for, or, when
    none is named, the one team the uploader hosts for; refused when they host for several
    (the choice is theirs: the error names them) or none."""
    if team:
        row = HostTeam.objects.filter(slug=team).first()
        if row is None:
            raise BundleUploadError("unknown_team", f"no host team {team!r}", field=TEAM_FIELD)
        if not team_user_can_host(user=uploader, team=row):
            raise BundleUploadError("permission_denied", f"only the hosts and admins of the "
                                    f"team {team!r} may upload its bundles", field=TEAM_FIELD,
                                    http_status=403)
        return row
    hosted = list(host_team_list_hosted_by(user=uploader))
    if not hosted:
        raise BundleUploadError("permission_denied", "only the hosts and admins of a host team "
                                "may add benchmarks (docs/hosts/teams.md)", http_status=403)
    if len(hosted) > 1:
        raise BundleUploadError(
            "team_required", "you host for several teams: name the one this bundle is for "
            f"(team: {', '.join(row.slug for row in hosted)})", field=TEAM_FIELD)
    return hosted[0]


def bundle_upload_create(*, uploader: User, bundle: UploadedFile, update: bool = False,
                         team: str | None = None) -> BundleUpload:
    """Store an uploaded .zip bundle for a team (bundle_upload_team) and queue it for a worker
    once the transaction commits. Only the cheap checks run here (the team, name, size, the zip
    signature); the worker refuses an update of another team's benchmark."""
    team_row = bundle_upload_team(uploader=uploader, team=team)
    name = PurePosixPath(bundle.name or "").name
    if not name.lower().endswith(".zip"):
        raise BundleUploadError(
            "unsupported_format", f"{name or 'the file'!r}: a bundle is uploaded as a .zip "
            "archive holding its manifest and files (docs/bundles.md §7)", field=BUNDLE_FIELD)
    size = bundle.size or 0
    if size > settings.EVALSERVER_MAX_UPLOAD_BYTES:
        raise file_too_large_error(BUNDLE_FIELD)
    if size == 0:
        raise BundleUploadError("empty_file", f"{name!r} is empty", field=BUNDLE_FIELD)
    bundle.seek(0)
    head = bundle.read(4)
    bundle.seek(0)
    if head not in ZIP_MAGIC:
        raise BundleUploadError("bad_zip", f"{name!r} is not a zip archive",
                                field=BUNDLE_FIELD)
    with transaction.atomic():
        upload = BundleUpload(original_name=name[:255], size=size, update=update,
                              uploaded_by=uploader, team=team_row)
        upload.bundle.save(name, bundle, save=False)  # copied in chunks by the storage
        upload.save()
        queue.job_queue(kind="bundle_upload", job_id=upload.pk)
    return upload


# ---------------------------------------------------------------- the worker's side


def bundle_upload_run(*, upload_id: int, task_id: str) -> bool:
    """The bundle task's work on a claimed upload (the worker's runner claims it first): add
    the stored bundle, record the outcome. True once done; False when this task no longer
    holds the claim. Raises BundleError or BundleConflictError for a refused bundle (stored
    as its failure by the runner, leaderboard/tasks/registry.py)."""
    upload = BundleUpload.objects.get(id=upload_id)
    with stored_file_path(upload.bundle) as path:
        report = benchmark_bundle_add(path=path, update=upload.update, team_id=upload.team_id)
    text = "\n".join(line if level == "info" else f"{level}: {line}"
                     for level, line in report.lines)
    return job_finish(BundleUpload, job_id=upload_id, task_id=task_id, status=Status.DONE,
                      benchmark_slug=report.slug, report=text)


# ---------------------------------------------------------------- retention


def failed_bundle_upload_files_remove(*, now: datetime | None = None) -> list[int]:
    """Delete the stored archive of uploads that failed more than
    EVALSERVER_FAILED_FILES_RETENTION_DAYS ago; returns their ids. A failed upload never runs
    again (failed is final), so nothing needs the archive after its owner has read the
    refusal. The empty `bundle` field records the removal (no run tries it again); the file
    goes first (deleting a missing one is a no-op), so a run cut short is finished by the
    next."""
    now = now or timezone.now()
    retention = timedelta(days=settings.EVALSERVER_FAILED_FILES_RETENTION_DAYS)
    expired = (BundleUpload.objects
               .filter(status=Status.FAILED, finished_at__lt=now - retention)
               .exclude(bundle="")
               .order_by("id").only("id", "bundle")[:REMOVE_BATCH])
    removed: list[int] = []
    for upload in list(expired):
        name = str(upload.bundle.name)
        upload.bundle.storage.delete(name)
        # only if still unrecorded: two overlapping runs return each id once
        if BundleUpload.objects.filter(id=upload.pk, bundle=name).update(bundle="") == 1:
            removed.append(upload.pk)
    return removed


def benchmark_visibility_set(*, benchmark: Benchmark, hidden: bool) -> Benchmark:
    """Set `hidden` (a conditional update: nothing changes when it already holds) and let the
    cached boards and plots go; returns the benchmark as stored."""
    with transaction.atomic():
        changed = Benchmark.objects.filter(pk=benchmark.pk).exclude(hidden=hidden).update(
            hidden=hidden)
        if changed:
            benchmark_leaderboard_touch(benchmark_id=benchmark.pk)
    benchmark.refresh_from_db()
    return benchmark
