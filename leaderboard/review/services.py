"""The review queue: novel predictions become items, reviewers vote, the majority decides, and
each decision makes a new label-set version that every submission is re-scored on
(`leaderboard.review.rescoring`).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from typing import Any, cast

from django.contrib.auth.models import User
from django.db import transaction
from django.utils import timezone

from leaderboard.catalog.models import LabelSet, LabelSetVersion
from leaderboard.review import item_sql as review_item_sql
from leaderboard.review.models import (
    MistakeCategory,
    ReviewItem,
    ReviewVote,
    Severity,
    Verdict,
)
from leaderboard.review.panel.services import (
    Panel,
    ReviewError,
    label_set_revision_publish,
    panel_vote_cast,
)
from leaderboard.review.signals import review_item_decided
from leaderboard.submissions.models import Submission
from workers.scoring import label_set_builders, revisions
from workers.scoring.families.registry import verdicts_apply
from workers.scoring.hits import NovelPairs


def review_items_record(*, submission: Submission, label_set: LabelSet, novel: NovelPairs) -> int:
    """Make (or find) one item per novel pair and link the submission to it; idempotent.

    Returns how many items the submission predicts on this label set. Four statements over
    the pairs as one relation (review/item_sql.py), whatever their number: a ReaL or
    multi-label scoring of ImageNet predictions has up to 50,000 novel pairs, and building a
    model object for each row cost about 15 s a submission."""
    if len(novel) == 0:
        return 0
    examples = novel.examples.tolist()
    scores = novel.scores.tolist() if novel.scores is not None else [None] * len(examples)
    return review_item_sql.items_record(
        label_set_id=label_set.pk, submission_id=submission.pk, now=timezone.now(),
        examples=examples, classes=novel.classes.tolist(), scores=scores)


def majority(verdicts: Sequence[str]) -> revisions.VerdictKind:
    """The verdict with the most votes; a tie for the most is `unclear`."""
    counts = Counter(verdicts).most_common()
    if len(counts) > 1 and counts[0][1] == counts[1][1]:
        return "unclear"
    return cast(revisions.VerdictKind, counts[0][0])


def review_vote_cast(*, item_id: int, reviewer: User, verdict: str, problematic: bool = False,
                     severity: str = "", category: str = "", note: str = "") -> ReviewItem:
    """Record one reviewer's vote on a novel prediction; when the panel is full the majority
    decides the item (the panel pipeline: leaderboard/review/panel/services.py)."""
    if verdict not in Verdict.values:
        raise ReviewError("invalid_verdict", f"verdict must be one of {', '.join(Verdict.values)}",
                          field="verdict")
    if verdict != Verdict.WRONG and (severity or category):
        raise ReviewError("invalid_input", "severity and category describe a wrong prediction",
                          field="severity" if severity else "category")
    for name, value, choices in (("severity", severity, Severity),
                                 ("category", category, MistakeCategory)):
        if value and value not in choices.values:
            raise ReviewError("invalid_input", f"{name} must be one of "
                              f"{', '.join(choices.values)}", field=name)
    item: ReviewItem = panel_vote_cast(
        REVIEW_PANEL, item_id=item_id, reviewer=reviewer,
        vote={"verdict": verdict, "problematic": problematic, "severity": severity,
              "category": category, "note": note})
    return item


def _decide(item: ReviewItem, author: User) -> None:
    votes = list(item.votes.values_list("verdict", "problematic"))
    decided = majority([v for v, _ in votes])
    flagged = sum(p for _, p in votes) * 2 > len(votes)  # a majority flags the ground truth
    version = label_set_version_revise(
        label_set=item.label_set, items=[item],
        verdicts=[revisions.Verdict(item.example_index, item.class_id, decided, flagged)],
        author=author)
    ReviewItem.objects.filter(id=item.pk, status=ReviewItem.Status.OPEN).update(
        status=ReviewItem.Status.DECIDED, verdict=decided, problematic=flagged,
        decided_at=timezone.now(), version=version)
    item.refresh_from_db()
    item_id = item.pk
    transaction.on_commit(lambda: review_item_decided.send(sender=ReviewItem, item_id=item_id),
                          robust=True)


REVIEW_PANEL = Panel(item_model=ReviewItem, vote_model=ReviewVote, item_field="item",
                     name="review item", short="item",
                     panel_size=lambda benchmark: benchmark.review_panel_size,
                     decide=_decide)


def label_set_version_revise(*, label_set: LabelSet, verdicts: Sequence[revisions.Verdict],
                             items: Sequence[ReviewItem], author: User | None,
                             note: str = "") -> LabelSetVersion:
    """A new version = the current one with these verdicts applied; re-scored after commit."""

    def revise(current: label_set_builders.CompiledLabelSet
               ) -> tuple[label_set_builders.CompiledLabelSet, list[dict[str, Any]]]:
        settled = [{"item": i.pk, "example": i.example_index, "class": i.class_id,
                    "verdict": v.verdict, "problematic": v.problematic}
                   for i, v in zip(items, verdicts, strict=True)]
        return verdicts_apply(current, verdicts), settled

    return label_set_revision_publish(label_set=label_set, author=author, revise=revise,
                                      note=note or f"{len(verdicts)} review decision(s)")
