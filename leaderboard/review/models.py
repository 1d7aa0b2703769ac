"""The review queue: novel predictions, reviewers' votes and the decisions they reach."""

from __future__ import annotations

from django.conf import settings
from django.db import models

from leaderboard.catalog.models import ExampleSet, LabelSet, LabelSetVersion
from leaderboard.jobs.lifecycle import ClaimedJob
from leaderboard.submissions.models import Submission


class Verdict(models.TextChoices):
    CORRECT = "correct", "Correct"
    WRONG = "wrong", "Wrong"
    UNCLEAR = "unclear", "Unclear"


# The review taxonomy of Vasudevan et al. (2022), "When does dough become a bagel?": the one
# list the vote form, the API (and its schema) and the import of the authors' panel decisions
# (leaderboard/review/mistakes/services.py) all use (docs/metrics.md §11).


class Severity(models.TextChoices):
    """How bad a wrong prediction is. The authors report borderline with minor (`reported`)."""

    MAJOR = "major", "Major"
    MINOR = "minor", "Minor"
    BORDERLINE = "borderline", "Borderline"

    @classmethod
    def reported(cls, value: str) -> str:
        """The severity as the authors count it: major, or minor (borderline included)."""
        return str(cls.MINOR) if value == cls.BORDERLINE else value


class MistakeCategory(models.TextChoices):
    FINE_GRAINED = "fine_grained", "Fine-grained"
    FINE_GRAINED_OOV = "fine_grained_oov", "Fine-grained with OOV (out of vocabulary)"
    FINE_GRAINED_MULTILABEL = ("fine_grained_multilabel",
                               "Fine-grained with multi-label options")
    SPURIOUS = "spurious_correlation", "Spurious correlation"
    NON_PROTOTYPICAL = "non_prototypical", "Non-prototypical"


# The names the authors' files use (google-research/imagenet-mistakes), matched without regard
# to case: both spellings of the out-of-vocabulary category occur in the Greedy Soups file.
AUTHOR_CATEGORIES: dict[str, MistakeCategory] = {
    "fine-grained error": MistakeCategory.FINE_GRAINED,
    "fine-grained error with oov": MistakeCategory.FINE_GRAINED_OOV,
    "fine-grained with oov": MistakeCategory.FINE_GRAINED_OOV,
    "fine-grained with multilabel options": MistakeCategory.FINE_GRAINED_MULTILABEL,
    "spurious correlation": MistakeCategory.SPURIOUS,
    "non-prototypical": MistakeCategory.NON_PROTOTYPICAL,
}
AUTHOR_SEVERITIES: dict[str, Severity] = {s.label.lower(): s for s in Severity}


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


class PanelMistake(models.Model):
    """A published expert-panel decision on one (example, class) pair: the class `model`
    predicted top-1 is a mistake, of this category and severity (Vasudevan et al. 2022, the
    study behind ImageNet-M). Imported from the authors' files (`manage.py
    import_mistake_reviews`), never voted on here; the verdict is always wrong."""

    example_set = models.ForeignKey(ExampleSet, on_delete=models.PROTECT, related_name="+")
    example_index = models.PositiveIntegerField()
    class_id = models.PositiveIntegerField()
    model = models.CharField(max_length=100, help_text="whose prediction the panel reviewed")
    source = models.CharField(max_length=255, help_text="the file it was imported from")
    source_sha256 = models.CharField(max_length=64)
    severity = models.CharField(max_length=16, choices=Severity.choices)
    category = models.CharField(max_length=32, choices=MistakeCategory.choices)
    # As the file spells them (the categories have two spellings of one name).
    source_severity = models.CharField(max_length=64)
    source_category = models.CharField(max_length=100)
    imported = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ("example_index", "class_id", "model")
        constraints = [
            models.UniqueConstraint(fields=("example_set", "model", "example_index", "class_id"),
                                    name="panelmistake_unique_per_model"),
        ]
        indexes = [models.Index(fields=("example_set", "severity", "example_index"))]

    def __str__(self) -> str:
        return f"{self.model}: example {self.example_index} as class {self.class_id} " \
               f"({self.severity})"


class VersionRescore(ClaimedJob):
    """Whether every scored submission has been re-scored on a version (versions themselves are
    immutable, so this state lives beside them): a job a worker claims, keyed by the version
    (leaderboard/jobs/). Asked for again while it runs (a submission scored on an
    older version meanwhile), it is queued again and runs once more."""

    class Status(models.TextChoices):
        QUEUED = "queued", "Queued"
        RUNNING = "running", "Running"
        DONE = "done", "Done"
        FAILED = "failed", "Failed"

    JOB_ID_FIELD = "version_id"

    version = models.OneToOneField(LabelSetVersion, on_delete=models.CASCADE,
                                   related_name="rescore")
    status = models.CharField(max_length=16, choices=Status.choices, default=Status.QUEUED)
    submissions = models.PositiveIntegerField(default=0, help_text="re-scored by the last run")

    class Meta:
        indexes = [models.Index(fields=("status", "queued_at"))]

    def __str__(self) -> str:
        state = f"done {self.finished_at:%Y-%m-%d %H:%M}" if self.finished_at else "pending"
        return f"re-score of {self.version}: {state}"
