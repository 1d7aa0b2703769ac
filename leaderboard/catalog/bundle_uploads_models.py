"""A benchmark bundle (.zip) uploaded by staff, added by a worker (docs/bundles.md §7, the
service `leaderboard.catalog.bundle_uploads`). The upload is untrusted: the web process only
stores it; the worker extracts, checks and loads it."""

from __future__ import annotations

import uuid

from django.conf import settings
from django.db import models

from leaderboard.common.jobs import ClaimedJob
from leaderboard.common.slugs import SLUG_MAX_LENGTH


def bundle_upload_path(upload: BundleUpload, filename: str) -> str:
    """A folder of its own per upload, so that the stored file keeps the uploaded name
    (cleaned by the storage): the worker's refusals name the archive the maintainer sent."""
    return f"bundles/{uuid.uuid4().hex}/{filename}"


class BundleUpload(ClaimedJob):
    """One uploaded bundle: a job a worker claims (leaderboard/common/jobs.py), `finished`
    when done or failed. A failure keeps the refusal's code, message, file and field."""

    class Status(models.TextChoices):
        QUEUED = "queued", "Queued"
        RUNNING = "running", "Running"
        DONE = "done", "Done"
        FAILED = "failed", "Failed"

    status = models.CharField(max_length=16, choices=Status.choices, default=Status.QUEUED)
    bundle = models.FileField(upload_to=bundle_upload_path, max_length=300)
    # The name the uploader's file had (shown; the stored name is cleaned).
    original_name = models.CharField(max_length=255)
    size = models.PositiveBigIntegerField()
    # Add label sets to an existing benchmark (benchmark_add --update) instead of a new one.
    update = models.BooleanField(default=False)
    uploaded_by = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.PROTECT,
                                    related_name="bundle_uploads")
    created = models.DateTimeField(auto_now_add=True, db_index=True)
    finished = models.DateTimeField(null=True, blank=True)
    # Once done: the benchmark created or updated, and what the loader reported, line by line.
    benchmark_slug = models.CharField(max_length=SLUG_MAX_LENGTH, blank=True)
    report = models.TextField(blank=True)
    # Once failed: the refusal (BundleError.as_dict() for a bundle problem; `worker_lost`,
    # `time_limit`, `internal_error`, or the catalog's conflict otherwise).
    error_code = models.CharField(max_length=32, blank=True)
    error_file = models.CharField(max_length=500, blank=True)
    error_field = models.CharField(max_length=200, blank=True)

    class Meta:
        ordering = ("-created", "-id")

    def __str__(self) -> str:
        return f"bundle upload #{self.pk} {self.original_name}"

    @property
    def pending(self) -> bool:
        return self.status in (self.Status.QUEUED, self.Status.RUNNING)
