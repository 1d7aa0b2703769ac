"""Ground-truth review (Northcutt et al., docs/metrics.md §12): candidates on a `corrected` label
set, reviewers answer given / guessed / both / neither, and the vote that fills the panel
settles the example into a new label-set version (the corrected family's
`apply_ground_truth`) that every submission is re-scored on.

A settled candidate always makes a new version, a non-error included: the version records the
verdict (its `review_category` array and the summary's `settled` entry) even where the labels,
the pruned set and the correctable set stay as they were.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from typing import Any

from django.contrib.auth.models import User
from django.db import IntegrityError, transaction
from django.utils import timezone

from leaderboard.catalog.label_set_version_files import compiled_for_version
from leaderboard.catalog.models import LabelSet, LabelSetVersion
from leaderboard.catalog.selectors import label_set_version_latest
from leaderboard.review.ground_truth.models import (
    GroundTruthAnswer,
    GroundTruthCandidate,
    GroundTruthVote,
)
from leaderboard.review.panel.services import (
    Panel,
    ReviewError,
    label_set_revision_publish,
    panel_vote_cast,
)
from workers.scoring import label_set_builders, revisions
from workers.scoring.families.registry import family_named, ground_truth_apply


def ground_truth_candidate_create(*, label_set: LabelSet, example_index: int, guessed: int,
                                  given: int | None = None, source: str = "manual",
                                  evidence: dict[str, Any] | None = None
                                  ) -> GroundTruthCandidate:
    """An open candidate: `example_index` of a corrected set may really be class `guessed`.

    `given` is the example's original label in the latest version; passed explicitly (as an
    audit does, from what it saw) it must equal that label."""
    if label_set.labels_hidden and not label_set.reviewable:
        # A candidate shows its reviewers the example's label: a hidden label set's labels
        # reach reviewers only where its bundle declares it reviewable (docs/bundles.md §5.7,
        # docs/metrics.md §17.5).
        raise ReviewError("hidden_label_set", f"{label_set} is a hidden label set its bundle "
                          "does not declare reviewable: its labels are shown to no one",
                          field="label_set")
    if family_named(label_set.family).apply_ground_truth is None:
        raise ReviewError("invalid_label_set",
                          f"label set {label_set.slug!r} is of family {label_set.family!r}; "
                          "ground-truth review applies to corrected label sets", field="label_set")
    latest = label_set_version_latest(label_set=label_set)
    if latest is None:
        raise ReviewError("no_version", f"{label_set} has no version to review")
    compiled = compiled_for_version(latest)
    if not 0 <= example_index < compiled.size:
        raise ReviewError("invalid_example", f"example {example_index} is outside "
                          f"0..{compiled.size - 1}", field="example_index")
    if not 0 <= guessed < compiled.num_classes:
        raise ReviewError("invalid_class", f"guessed class {guessed} is outside "
                          f"0..{compiled.num_classes - 1}", field="guessed")
    original = int(compiled.arrays["labels"][example_index])
    if given is not None and given != original:
        raise ReviewError("given_mismatch", f"given label {given} of example {example_index} "
                          f"is not its original label {original}", field="given")
    if guessed == original:
        raise ReviewError("invalid_class", f"guessed class {guessed} is the original label",
                          field="guessed")
    try:
        with transaction.atomic():
            return GroundTruthCandidate.objects.create(
                label_set=label_set, example_index=example_index, given=original,
                guessed=guessed, source=source, evidence=evidence or {})
    except IntegrityError:
        raise ReviewError("already_open", f"example {example_index} of {label_set} already "
                          "has an open candidate", http_status=409) from None


def ground_truth_vote_cast(*, candidate_id: int, reviewer: User, answer: str,
                           note: str = "") -> GroundTruthCandidate:
    """Record one reviewer's answer; the answer that fills the panel settles the candidate
    (the panel pipeline: leaderboard/review/panel/services.py)."""
    if answer not in GroundTruthAnswer.values:
        raise ReviewError("invalid_answer",
                          f"answer must be one of {', '.join(GroundTruthAnswer.values)}",
                          field="answer")
    candidate: GroundTruthCandidate = panel_vote_cast(
        GROUND_TRUTH_PANEL, item_id=candidate_id, reviewer=reviewer,
        vote={"answer": answer, "note": note})
    return candidate


def _decide(candidate: GroundTruthCandidate, author: User) -> None:
    votes = dict(Counter(candidate.votes.values_list("answer", flat=True)))
    version, categories = ground_truth_version_revise(
        label_set=candidate.label_set, candidates=[candidate], votes=[votes], author=author)
    GroundTruthCandidate.objects.filter(
        id=candidate.pk, status=GroundTruthCandidate.Status.OPEN
    ).update(status=GroundTruthCandidate.Status.DECIDED, category=categories[0],
             decided_at=timezone.now(), version=version)
    candidate.refresh_from_db()


GROUND_TRUTH_PANEL = Panel(
    item_model=GroundTruthCandidate, vote_model=GroundTruthVote, item_field="candidate",
    name="ground-truth candidate", short="candidate",
    panel_size=lambda benchmark: benchmark.ground_truth_panel_size,
    decide=_decide)


def ground_truth_version_revise(*, label_set: LabelSet,
                                candidates: Sequence[GroundTruthCandidate],
                                votes: Sequence[dict[str, int]], author: User | None,
                                note: str = "") -> tuple[LabelSetVersion, list[str]]:
    """A new version = the current one with these ground-truth reviews applied; re-scored
    after commit. Returns it and the category each candidate's votes reached."""
    categories: list[str] = []

    def revise(current: label_set_builders.CompiledLabelSet
               ) -> tuple[label_set_builders.CompiledLabelSet, list[dict[str, Any]]]:
        reviews = [revisions.GroundTruthVotes(c.example_index, c.given, c.guessed, v)
                   for c, v in zip(candidates, votes, strict=True)]
        try:
            compiled = ground_truth_apply(current, reviews)
        except ValueError as exc:
            raise ReviewError("invalid_candidate", str(exc)) from None
        threshold = int(current.meta["threshold"])
        categories.extend(label_set_builders.corrected_categories(v, threshold) for v in votes)
        settled = [{"item": None, "candidate": c.pk, "example": c.example_index,
                    "class": c.guessed, "given": c.given, "verdict": category,
                    "problematic": False, "votes": v}
                   for c, v, category in zip(candidates, votes, categories, strict=True)]
        return compiled, settled

    version = label_set_revision_publish(
        label_set=label_set, author=author, revise=revise,
        note=note or f"{len(candidates)} ground-truth review decision(s)")
    return version, categories
