"""What the server released about a submission on a hidden label set (docs/metrics.md §17):
one row per (submission, label-set version), in the order the release mechanism received them
(the row's id), each participant's mechanism running on its own."""

from __future__ import annotations

from django.conf import settings
from django.db import models

from leaderboard.catalog.models import HiddenPhase, LabelSet, LabelSetVersion
from leaderboard.submissions.models import Submission


class Release(models.Model):
    submission = models.ForeignKey(Submission, on_delete=models.CASCADE, related_name="releases")
    label_set_version = models.ForeignKey(LabelSetVersion, on_delete=models.PROTECT,
                                          related_name="+")
    # Denormalised from the version and the submission: the board reads by label set, and
    # the mechanism's state is per participant.
    label_set = models.ForeignKey(LabelSet, on_delete=models.PROTECT, related_name="+")
    owner = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.PROTECT,
                              related_name="+")
    # The phase open when it was released: the mechanism scores that phase's public part,
    # and each phase's mechanism starts afresh.
    phase = models.ForeignKey(HiddenPhase, on_delete=models.PROTECT, related_name="releases")
    # Whether this submission moved its participant's released best; `released`, its own
    # released accuracy (null when it did not: under the Ladder nothing of its own is shown);
    # `best`, the participant's released best after it.
    improved = models.BooleanField()
    released = models.FloatField(null=True)
    best = models.FloatField()
    # The mechanism's state after it (the Ladder's R_t, a loss), so the next release needs no
    # replay; and the number of examples the figures are over (aggregate, public).
    state_loss = models.FloatField()
    total = models.PositiveIntegerField()
    mechanism = models.CharField(max_length=16)
    step = models.FloatField(null=True)
    created = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ("id",)
        constraints = [
            models.UniqueConstraint(fields=("submission", "label_set_version"),
                                    name="release_unique_per_version"),
        ]
        indexes = [models.Index(fields=("label_set_version", "phase", "owner", "id"))]

    def __str__(self) -> str:
        return f"#{self.submission_id} on {self.label_set_version_id}: {self.best}"
