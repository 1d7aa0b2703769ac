"""Ground-truth review (Northcutt et al., docs/metrics.md §12): candidates on a `corrected` label
set, reviewers answer given / guessed / both / neither, and the vote that fills the panel
settles the example into a new label-set version (`revisions.apply_ground_truth`) that every
submission is re-scored on.

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

from leaderboard.catalog.label_set_version_files import compiled_for_version, compiled_store
from leaderboard.catalog.models import LabelSet, LabelSetVersion
from leaderboard.catalog.services import label_set_version_create
from leaderboard.review.ground_truth_models import (
    GroundTruthAnswer,
    GroundTruthCandidate,
    GroundTruthVote,
)
from leaderboard.review.services import ReviewError, user_is_reviewer, version_rescore_request
from workers.scoring import label_set_builders, revisions

GROUND_TRUTH_FAMILIES = ("corrected",)


def _latest_version(label_set: LabelSet) -> LabelSetVersion | None:
    return LabelSetVersion.objects.filter(label_set=label_set).order_by("-number").first()


def ground_truth_candidate_create(*, label_set: LabelSet, example_index: int, guessed: int,
                                  given: int | None = None, source: str = "manual",
                                  evidence: dict[str, Any] | None = None
                                  ) -> GroundTruthCandidate:
    """An open candidate: `example_index` of a corrected set may really be class `guessed`.

    `given` is the example's original label in the latest version; passed explicitly (as an
    audit does, from what it saw) it must equal that label."""
    if label_set.family not in GROUND_TRUTH_FAMILIES:
        raise ReviewError("invalid_label_set",
                          f"label set {label_set.slug!r} is of family {label_set.family!r}; "
                          "ground-truth review applies to corrected label sets", field="label_set")
    latest = _latest_version(label_set)
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
    """Record one reviewer's answer; the answer that fills the panel settles the candidate.

    The candidate's row lock makes concurrent answers queue up (as `review_vote_cast`)."""
    if not user_is_reviewer(reviewer):
        raise ReviewError("forbidden", "only maintainers may review", http_status=403)
    if answer not in GroundTruthAnswer.values:
        raise ReviewError("invalid_answer",
                          f"answer must be one of {', '.join(GroundTruthAnswer.values)}",
                          field="answer")
    with transaction.atomic():
        try:
            candidate = (GroundTruthCandidate.objects.select_for_update()
                         .select_related("label_set__benchmark").get(id=candidate_id))
        except GroundTruthCandidate.DoesNotExist:
            raise ReviewError("not_found", f"no ground-truth candidate {candidate_id}",
                              http_status=404) from None
        if candidate.status != GroundTruthCandidate.Status.OPEN:
            raise ReviewError("already_decided", "this candidate is already decided",
                              http_status=409)
        try:
            with transaction.atomic():
                GroundTruthVote.objects.create(candidate=candidate, reviewer=reviewer,
                                               answer=answer, note=note)
        except IntegrityError:
            raise ReviewError("already_voted", "you have already voted on this candidate",
                              http_status=409) from None
        answers = list(candidate.votes.values_list("answer", flat=True))
        if len(answers) >= candidate.label_set.benchmark.ground_truth_panel_size:
            _decide(candidate, answers, author=reviewer)
    return candidate


def _decide(candidate: GroundTruthCandidate, answers: list[str], *, author: User) -> None:
    votes = dict(Counter(answers))
    version, categories = ground_truth_version_revise(
        label_set=candidate.label_set, candidates=[candidate], votes=[votes], author=author)
    GroundTruthCandidate.objects.filter(
        id=candidate.pk, status=GroundTruthCandidate.Status.OPEN
    ).update(status=GroundTruthCandidate.Status.DECIDED, category=categories[0],
             decided_at=timezone.now(), version=version)
    candidate.refresh_from_db()


def ground_truth_version_revise(*, label_set: LabelSet,
                                candidates: Sequence[GroundTruthCandidate],
                                votes: Sequence[dict[str, int]], author: User | None,
                                note: str = "") -> tuple[LabelSetVersion, list[str]]:
    """A new version = the latest one with these ground-truth reviews applied; re-scored
    after commit. Returns it and the category each candidate's votes reached."""
    with transaction.atomic():
        # The label set's row lock: concurrent decisions build on each other, in turn.
        LabelSet.objects.select_for_update().filter(pk=label_set.pk).first()
        parent = _latest_version(label_set)
        if parent is None:
            raise ReviewError("no_version", f"{label_set} has no version to revise")
        previous = compiled_for_version(parent)
        reviews = [revisions.GroundTruthVotes(c.example_index, c.given, c.guessed, v)
                   for c, v in zip(candidates, votes, strict=True)]
        try:
            compiled = revisions.apply_ground_truth(previous, reviews)
        except ValueError as exc:
            raise ReviewError("invalid_candidate", str(exc)) from None
        threshold = int(previous.meta["threshold"])
        categories = [label_set_builders.corrected_categories(v, threshold) for v in votes]
        compiled_store(compiled)
        settled = [{"item": None, "candidate": c.pk, "example": c.example_index,
                    "class": c.guessed, "given": c.given, "verdict": category,
                    "problematic": False, "votes": v}
                   for c, v, category in zip(candidates, votes, categories, strict=True)]
        version = label_set_version_create(
            label_set=label_set, content_hash=compiled.content_hash, parent=parent,
            author=author, note=note or f"{len(settled)} ground-truth review decision(s)",
            summary={**compiled.summary, "settled": settled})
        version_rescore_request(version_id=version.pk)
    return version, categories
