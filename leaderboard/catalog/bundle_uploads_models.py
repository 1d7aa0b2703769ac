"""A benchmark bundle (.zip) uploaded by staff, added by a worker (docs/bundles.md §7, the
service `leaderboard.catalog.bundle_uploads`). The upload is untrusted: the web process only
stores it; the worker extracts, checks and loads it."""

from __future__ import annotations

import uuid

from django.conf import settings
from django.db import models

from leaderboard.common.slugs import SLUG_MAX_LENGTH
from leaderboard.jobs.lifecycle import ClaimedJob


def bundle_upload_path(upload: BundleUpload, filename: str) -> str:
    """A folder of its own per upload, so that the stored file keeps the uploaded name
    (cleaned by the storage): the worker's refusals name the archive the maintainer sent."""
    return f"bundles/{uuid.uuid4().hex}/{filename}"


class BundleUpload(ClaimedJob):
    """One uploaded bundle: a job a worker claims (leaderboard/jobs/), `finished_at` when
    done or failed. A failure keeps the refusal's code (`failure_code`), message
    (`failure_reason`), file and field."""

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
    # Once done: the benchmark created or updated, and what the loader reported, line by line.
    benchmark_slug = models.CharField(max_length=SLUG_MAX_LENGTH, blank=True)
    report = models.TextField(blank=True)
    # Once failed: where the refusal points (BundleError.as_dict()'s file and field; its code
    # and message are the job's failure_code and failure_reason).
    error_file = models.CharField(max_length=500, blank=True)
    error_field = models.CharField(max_length=200, blank=True)

    class Meta:
        ordering = ("-created", "-id")

    def __str__(self) -> str:
        return f"bundle upload #{self.pk} {self.original_name}"

    @property
    def pending(self) -> bool:
        return self.status in (self.Status.QUEUED, self.Status.RUNNING)
