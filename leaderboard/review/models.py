"""The review queue: novel predictions, reviewers' votes and the decisions they reach."""

from __future__ import annotations

from django.conf import settings
from django.db import models

from leaderboard.catalog.models import LabelSet, LabelSetVersion
from leaderboard.common.jobs import ClaimedJob
from leaderboard.submissions.models import Submission


class Verdict(models.TextChoices):
    CORRECT = "correct", "Correct"
    WRONG = "wrong", "Wrong"
    UNCLEAR = "unclear", "Unclear"


class Severity(models.TextChoices):
    MAJOR = "major", "Major"
    MINOR = "minor", "Minor"


class MistakeCategory(models.TextChoices):
    FINE_GRAINED = "fine_grained", "Fine-grained"
    FINE_GRAINED_OOV = "fine_grained_oov", "Fine-grained, out of vocabulary"
    SPURIOUS = "spurious_correlation", "Spurious correlation"
    NON_PROTOTYPICAL = "non_prototypical", "Non-prototypical"


class ReviewItem(models.Model):
    """One (example, class) pair that some submission predicted top-1 and no human judged."""

    class Status(models.TextChoices):
        OPEN = "open", "Open"
        DECIDED = "decided", "Decided"

    label_set = models.ForeignKey(LabelSet, on_delete=models.PROTECT, related_name="review_items")
    example_index = models.PositiveIntegerField()
    class_id = models.PositiveIntegerField()
    first_seen = models.DateTimeField(auto_now_add=True)
    # How many submissions predict the pair top-1: how many scores a verdict would move.
    submission_count = models.PositiveIntegerField(default=0)
    max_score = models.FloatField(null=True, blank=True)
    status = models.CharField(max_length=16, choices=Status.choices, default=Status.OPEN)
    verdict = models.CharField(max_length=16, choices=Verdict.choices, blank=True)
    problematic = models.BooleanField(default=False)
    decided_at = models.DateTimeField(null=True, blank=True)
    # The label-set version that settled it.
    version = models.ForeignKey(
        LabelSetVersion, null=True, blank=True, on_delete=models.PROTECT, related_name="settled"
    )
    submissions = models.ManyToManyField(
        Submission, through="ReviewItemSubmission", related_name="review_items"
    )

    class Meta:
        ordering = ("-submission_count", "first_seen", "id")
        constraints = [
            models.UniqueConstraint(
                fields=("label_set", "example_index", "class_id"), name="reviewitem_unique_pair"
            ),
        ]
        indexes = [models.Index(fields=("label_set", "status", "-submission_count"))]

    def __str__(self) -> str:
        return f"{self.label_set}: example {self.example_index} as class {self.class_id}"


class ReviewItemSubmission(models.Model):
    """A submission that predicts the item's pair top-1, with its score for it if given."""

    item = models.ForeignKey(ReviewItem, on_delete=models.CASCADE, related_name="sources")
    submission = models.ForeignKey(Submission, on_delete=models.CASCADE, related_name="+")
    score = models.FloatField(null=True, blank=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=("item", "submission"), name="reviewsource_unique"),
        ]

    def __str__(self) -> str:
        return f"{self.item_id} <- #{self.submission_id}"


class ReviewVote(models.Model):
    item = models.ForeignKey(ReviewItem, on_delete=models.CASCADE, related_name="votes")
    reviewer = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.PROTECT, related_name="review_votes"
    )
    verdict = models.CharField(max_length=16, choices=Verdict.choices)
    # The reviewer flags the example's ground truth itself as problematic.
    problematic = models.BooleanField(default=False)
    severity = models.CharField(max_length=16, choices=Severity.choices, blank=True)
    category = models.CharField(max_length=32, choices=MistakeCategory.choices, blank=True)
    note = models.TextField(blank=True)
    created = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ("created", "id")
        constraints = [
            # A reviewer votes once per item; the database enforces it under concurrency.
            models.UniqueConstraint(
                fields=("item", "reviewer"), name="reviewvote_one_per_reviewer"
            ),
        ]

    def __str__(self) -> str:
        return f"{self.reviewer} on {self.item_id}: {self.verdict}"


class VersionRescore(ClaimedJob):
    """Whether every scored submission has been re-scored on a version (versions themselves are
    immutable, so this state lives beside them): a job a worker claims, keyed by the version
    (leaderboard/common/jobs.py). Asked for again while it runs (a submission scored on an
    older version meanwhile), it is queued again and runs once more."""

    class Status(models.TextChoices):
        QUEUED = "queued", "Queued"
        RUNNING = "running", "Running"
        DONE = "done", "Done"
        FAILED = "failed", "Failed"

    version = models.OneToOneField(LabelSetVersion, on_delete=models.CASCADE,
                                   related_name="rescore")
    status = models.CharField(max_length=16, choices=Status.choices, default=Status.QUEUED)
    finished_at = models.DateTimeField(null=True, blank=True)
    submissions = models.PositiveIntegerField(default=0, help_text="re-scored by the last run")

    class Meta:
        indexes = [models.Index(fields=("status", "queued_at"))]

    def __str__(self) -> str:
        state = f"done {self.finished_at:%Y-%m-%d %H:%M}" if self.finished_at else "pending"
        return f"re-score of {self.version}: {state}"
