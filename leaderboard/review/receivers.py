"""The review queue's side of a scored submission (leaderboard/submissions/signals.py): the
submissions domain cannot call it directly, as review is built on submissions. Connected when
the app is ready (leaderboard/apps.py)."""

from __future__ import annotations

from typing import Any

from django.dispatch import receiver

from leaderboard.catalog.models import LabelSet
from leaderboard.review.panel.services import version_rescore_request
from leaderboard.review.services import review_items_record
from leaderboard.submissions.models import Submission
from leaderboard.submissions.signals import submission_scored
from workers.scoring.hits import NovelPairs


@receiver(submission_scored, dispatch_uid="review.submission_scored")
def submission_scored_review(*, submission: Submission, novel: dict[LabelSet, NovelPairs],
                             missed_versions: list[int], **_: Any) -> None:
    """Unjudged top-1 pairs on the label sets its bundle declares reviewable become review items
    (docs/metrics.md §11); a version made while the submission was scoring is re-scored again,
    with it."""
    for label_set, pairs in novel.items():
        if label_set.reviewable:
            review_items_record(submission=submission, label_set=label_set, novel=pairs)
    for version_id in missed_versions:
        version_rescore_request(version_id=version_id)
