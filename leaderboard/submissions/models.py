"""Submissions, their uploaded files and their scores."""

from __future__ import annotations

from django.conf import settings
from django.db import models

from leaderboard.catalog.models import Benchmark, ExampleSet, LabelSet, LabelSetVersion
from leaderboard.jobs.lifecycle import CANCELLED, ClaimedJob


class Submission(ClaimedJob):
    """One model's predictions (one file per example set) and its scoring status: a job a worker
    claims (queued_at, started, claimed_by, attempts, finished_at when scored or failed,
    failure_code, failure_reason: leaderboard/jobs/)."""

    class Status(models.TextChoices):
        QUEUED = "queued", "Queued"
        RUNNING = "running", "Running"
        SCORED = "scored", "Scored"
        FAILED = "failed", "Failed"
        # Its owner cancelled it while it was queued: never scored (the claim takes only
        # queued rows), not counted in the daily quota (docs/api.md
        # §6.5).
        CANCELLED = CANCELLED, "Cancelled"

    class Kind(models.TextChoices):
        PREDICTIONS = "predictions", "Predictions"
        # A model file: a gpu-queue worker runs it on the example sets the server has images for
        # and stores its scores as prediction files, then scores those like any upload.
        CHECKPOINT = "checkpoint", "Checkpoint"

    owner = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.PROTECT, related_name="submissions"
    )
    benchmark = models.ForeignKey(Benchmark, on_delete=models.PROTECT, related_name="submissions")
    model_name = models.CharField(max_length=200)
    description = models.TextField(blank=True)
    paper_url = models.URLField(blank=True)
    code_url = models.URLField(blank=True)
    public = models.BooleanField(default=True)
    kind = models.CharField(max_length=16, choices=Kind.choices, default=Kind.PREDICTIONS)
    status = models.CharField(max_length=16, choices=Status.choices, default=Status.QUEUED)
    created = models.DateTimeField(auto_now_add=True, db_index=True)
    # A failed submission's stored files are removed EVALSERVER_FAILED_FILES_RETENTION_DAYS
    # after it failed (leaderboard/submissions/retention.py); when that was done.
    files_removed = models.DateTimeField(null=True, blank=True)
    # Withdrawn (by its owner, or by a maintainer with a reason its owner sees): off every
    # board for good (it is made private and cannot be made public again), its scores kept
    # for its owner; its files are removed after the retention period (retention.py).
    withdrawn = models.DateTimeField(null=True, blank=True)
    withdrawn_by = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, blank=True,
                                     on_delete=models.SET_NULL, related_name="+")
    withdrawn_reason = models.TextField(blank=True)
    # Times its owner ran it again after a failure of the server's (worker_lost, time_limit,
    # internal_error): each re-run starts with a fresh attempt count.
    reruns = models.PositiveIntegerField(default=0)

    class Meta:
        ordering = ("-created", "-id")
        indexes = [models.Index(fields=("benchmark", "status", "public"))]

    def __str__(self) -> str:
        return f"#{self.pk} {self.model_name}"


class SubmissionFile(models.Model):
    """The uploaded predictions of one submission for one example set."""

    submission = models.ForeignKey(Submission, on_delete=models.CASCADE, related_name="files")
    example_set = models.ForeignKey(ExampleSet, on_delete=models.PROTECT, related_name="+")
    file = models.FileField(upload_to="uploads/%Y/%m/%d/", max_length=300)
    original_name = models.CharField(max_length=255)
    size = models.PositiveBigIntegerField()
    sha256 = models.CharField(max_length=64)
    # Compact arrays (top-5 ids and scores) written by the worker: what re-scoring reads.
    compact = models.FileField(upload_to="compact/", max_length=300, blank=True)

    class Meta:
        # In upload order wherever they are listed (the API's `files`): PostgreSQL returns
        # rows in no set order, and the worker's update (`compact`) moves a row.
        ordering = ("id",)
        constraints = [
            models.UniqueConstraint(
                fields=("submission", "example_set"), name="submissionfile_one_per_example_set"
            ),
        ]

    def __str__(self) -> str:
        return f"#{self.submission_id} {self.original_name}"


class CheckpointFile(models.Model):
    """The uploaded model of a checkpoint submission (ONNX or a safetensors state dict),
    validated before it was stored; never unpickled, only ever run in a sandboxed child."""

    class Format(models.TextChoices):
        ONNX = "onnx", "ONNX"
        SAFETENSORS = "safetensors", "safetensors state dict"

    submission = models.OneToOneField(Submission, on_delete=models.CASCADE,
                                      related_name="checkpoint")
    file = models.FileField(upload_to="checkpoints/%Y/%m/%d/", max_length=300)
    format = models.CharField(max_length=16, choices=Format.choices)
    original_name = models.CharField(max_length=255)
    size = models.PositiveBigIntegerField()
    sha256 = models.CharField(max_length=64)
    # Filled by the worker that ran it: where, how fast (the scores become SubmissionFiles).
    device = models.CharField(max_length=32, blank=True)
    images_per_second = models.FloatField(null=True, blank=True)

    def __str__(self) -> str:
        return f"#{self.submission_id} {self.original_name} ({self.format})"


class HitVector(models.Model):
    """np.packbits over a label set's evaluated examples, in order, of whether the headline
    accuracy counts each correct (scorer.headline_hits; popcount == the score's correct); the
    leaderboard's paired McNemar tests read them (workers/scoring/significance/__init__.py).

    Stored once per content (SHA-256 of the bits): a new label-set version leaves most
    submissions' hits unchanged, so its copied scores point at the same rows instead of
    copying 6 kB each, and storage does not grow with every version."""

    digest = models.CharField(max_length=64, primary_key=True)
    bits = models.BinaryField()

    def __str__(self) -> str:
        return self.digest[:12]


class PublicScoreManager(models.Manager["Score"]):
    """Scores on public label sets only. The default manager (and so every related manager,
    `submission.scores` included): a page, an export or an API answer that reads scores the
    usual way cannot show a hidden label set's figures, whose per-example hits and exact
    accuracy must never leave the server (docs/metrics.md §17). The scoring side reads
    those through `Score.with_hidden`; what is shown of them is a Release
    (leaderboard/submissions/releases/)."""

    def get_queryset(self) -> models.QuerySet[Score]:
        return super().get_queryset().filter(label_set__labels_hidden=False)


class Score(models.Model):
    """A submission's figures on one label-set version (unique per pair: re-scoring updates)."""

    submission = models.ForeignKey(Submission, on_delete=models.CASCADE, related_name="scores")
    label_set_version = models.ForeignKey(
        LabelSetVersion, on_delete=models.PROTECT, related_name="scores"
    )
    # Denormalised from the version so leaderboard reads need no join.
    label_set = models.ForeignKey(LabelSet, on_delete=models.PROTECT, related_name="scores")
    accuracy = models.FloatField(null=True)
    correct = models.PositiveIntegerField()
    total = models.PositiveIntegerField()
    ci_low = models.FloatField(null=True)
    ci_high = models.FloatField(null=True)
    record = models.JSONField(default=dict)
    # Which evaluated examples the headline accuracy counts correct (see HitVector); null for
    # scores written before hits were stored.
    hits = models.ForeignKey("HitVector", null=True, blank=True, editable=False,
                             on_delete=models.PROTECT, related_name="+", db_column="hits_digest")
    created = models.DateTimeField(auto_now_add=True)
    updated = models.DateTimeField(auto_now=True)

    # Every score, hidden label sets' included: for scoring, re-scoring and releases only.
    with_hidden = models.Manager()
    objects = PublicScoreManager()

    class Meta:
        default_manager_name = "objects"
        # Cascades and forward relations read every row.
        base_manager_name = "with_hidden"
        constraints = [
            models.UniqueConstraint(
                fields=("submission", "label_set_version"), name="score_unique_per_version"
            ),
        ]
        indexes = [models.Index(fields=("label_set_version", "submission"))]

    def __str__(self) -> str:
        return f"#{self.submission_id} on {self.label_set_version}: {self.accuracy}"


class BoardSignificance(models.Model):
    """The paired significance of the public board sorted by one label-set version, computed
    by the worker when scores change (leaderboard/submissions/board_significance.py), read by the
    board build: per row in board order, `rank_ub` and the McNemar p-value against the row
    above (docs/metrics.md §10.3). `fingerprint` names the rows it was computed from (ids,
    hit vectors and ranks in order); a board whose rows have another fingerprint shows no
    rank_ub until the worker has computed it again."""

    label_set_version = models.OneToOneField(
        LabelSetVersion, on_delete=models.CASCADE, primary_key=True, related_name="+")
    fingerprint = models.CharField(max_length=64)
    # The benchmark's leaderboard generation read before computing (for the record).
    generation = models.PositiveBigIntegerField()
    submission_ids = models.JSONField(default=list)
    rank_ub = models.JSONField(default=list)  # int or null per row
    p_above = models.JSONField(default=list)  # float or null per row
    # What the next refresh updates from instead of recomputing every pair (docs/metrics.md
    # §10.4): {"width": bytes per hit vector, "rows": [[digest, accuracy, correct or null]]},
    # per row as submission_ids; {} (stored before it existed): the next refresh is in full.
    state = models.JSONField(default=dict)
    computed = models.DateTimeField(auto_now=True)

    def __str__(self) -> str:
        return f"significance on {self.label_set_version_id} ({self.fingerprint[:12]})"
