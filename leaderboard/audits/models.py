"""Label audits (docs/metrics.md §13): confident learning over chosen submissions' probabilities
or the area under a probe's loss curves; their flags become ground-truth review candidates."""

from __future__ import annotations

from django.conf import settings
from django.db import models

from leaderboard.catalog.models import Benchmark, ExampleSet, LabelSet
from leaderboard.jobs.lifecycle import ClaimedJob
from leaderboard.submissions.models import Submission


class Audit(ClaimedJob):
    """One audit of one example set's original labels, run by a worker (`workers.audits`): a job
    a worker claims (leaderboard/jobs/), `finished_at` when done or failed."""

    class Kind(models.TextChoices):
        CONFIDENT_LEARNING = "confident_learning", "Confident learning"
        AUL = "aul", "Area under the loss curve"

    class Status(models.TextChoices):
        QUEUED = "queued", "Queued"
        RUNNING = "running", "Running"
        DONE = "done", "Done"
        FAILED = "failed", "Failed"

    benchmark = models.ForeignKey(Benchmark, on_delete=models.PROTECT, related_name="audits")
    example_set = models.ForeignKey(ExampleSet, on_delete=models.PROTECT, related_name="+")
    # The `corrected` label set the flags become ground-truth candidates of.
    label_set = models.ForeignKey(LabelSet, on_delete=models.PROTECT, related_name="audits")
    kind = models.CharField(max_length=32, choices=Kind.choices)
    status = models.CharField(max_length=16, choices=Status.choices, default=Status.QUEUED)
    # The validated options (AulConfig / ConfidentLearningOptions fields, max_candidates).
    config = models.JSONField(default=dict, blank=True)
    # The core's `to_dict()` (flags and evidence, no per-example arrays) plus the precision
    # and recall against the human-validated errors; empty until done.
    result = models.JSONField(default=dict, blank=True)
    created_by = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.PROTECT,
                                   related_name="audits")
    created = models.DateTimeField(auto_now_add=True, db_index=True)
    candidates_created = models.PositiveIntegerField(default=0)
    # Confident learning: the submissions whose probabilities are averaged.
    submissions = models.ManyToManyField(Submission, blank=True, related_name="audits")

    class Meta:
        ordering = ("-created", "-id")
        indexes = [models.Index(fields=("benchmark", "status"))]

    def __str__(self) -> str:
        return f"audit #{self.pk} {self.kind} on {self.example_set_id}"

    @property
    def pending(self) -> bool:
        return self.status in (self.Status.QUEUED, self.Status.RUNNING)
