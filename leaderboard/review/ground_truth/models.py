"""Ground-truth review (Northcutt et al.): candidates for a corrected label set, reviewers'
answers given / guessed / both / neither, and the decision a full panel reaches."""

from __future__ import annotations

from django.conf import settings
from django.db import models

from leaderboard.catalog.models import LabelSet, LabelSetVersion


class GroundTruthAnswer(models.TextChoices):
    GIVEN = "given", "Given"
    GUESSED = "guessed", "Guessed"
    BOTH = "both", "Both"
    NEITHER = "neither", "Neither"


class GroundTruthCandidate(models.Model):
    """One example of a `corrected` label set whose original label may be wrong."""

    class Status(models.TextChoices):
        OPEN = "open", "Open"
        DECIDED = "decided", "Decided"

    label_set = models.ForeignKey(LabelSet, on_delete=models.PROTECT,
                                  related_name="ground_truth_candidates")
    example_index = models.PositiveIntegerField()
    given = models.PositiveIntegerField(help_text="the original label (a class id)")
    guessed = models.PositiveIntegerField(help_text="the candidate label (a class id)")
    source = models.CharField(max_length=100, default="manual",
                              help_text='where it comes from: "audit:<id>", "manual"')
    evidence = models.JSONField(default=dict, blank=True)
    created = models.DateTimeField(auto_now_add=True)
    status = models.CharField(max_length=16, choices=Status.choices, default=Status.OPEN)
    # The category of the votes (label_set_builders.VOTE_CATEGORIES) once decided.
    category = models.CharField(max_length=32, blank=True)
    decided_at = models.DateTimeField(null=True, blank=True)
    version = models.ForeignKey(LabelSetVersion, null=True, blank=True,
                                on_delete=models.PROTECT, related_name="ground_truth_settled")

    class Meta:
        ordering = ("created", "id")
        constraints = [
            # One open candidate per example; a decided one may be reopened by a new one.
            models.UniqueConstraint(
                fields=("label_set", "example_index"), condition=models.Q(status="open"),
                name="groundtruthcandidate_one_open_per_example",
            ),
        ]
        indexes = [models.Index(fields=("label_set", "status"))]

    def __str__(self) -> str:
        return f"{self.label_set}: example {self.example_index}, {self.given} or {self.guessed}"


class GroundTruthVote(models.Model):
    candidate = models.ForeignKey(GroundTruthCandidate, on_delete=models.CASCADE,
                                  related_name="votes")
    reviewer = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.PROTECT,
                                 related_name="ground_truth_votes")
    answer = models.CharField(max_length=16, choices=GroundTruthAnswer.choices)
    note = models.TextField(blank=True)
    created = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ("created", "id")
        constraints = [
            models.UniqueConstraint(fields=("candidate", "reviewer"),
                                    name="groundtruthvote_one_per_reviewer"),
        ]

    def __str__(self) -> str:
        return f"{self.reviewer} on {self.candidate_id}: {self.answer}"
