"""Reads of the review queue and of label-set history (docs/metrics.md §11 and §14).

The queue is the open items of a benchmark, most-predicted first; an item's detail decodes
what the latest version of its label set already knows about the example; the history lists
a label set's versions, newest first, and how each moved the ranking against its parent.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np
from django.core.exceptions import ObjectDoesNotExist
from django.db.models import Count, Q, QuerySet

from leaderboard.catalog.label_set_version_files import compiled_for_version
from leaderboard.catalog.models import Benchmark, LabelSet, LabelSetVersion
from leaderboard.catalog.selectors import (
    benchmark_class_names,
    benchmark_list_with_role,
    example_namer,
    label_set_version_latest,
)
from leaderboard.review.ground_truth.models import GroundTruthVote
from leaderboard.review.models import (
    MistakeCategory,
    PanelMistake,
    ReviewItem,
    ReviewVote,
    Severity,
    VersionRescore,
)
from leaderboard.submissions.models import Score, Submission
from workers.scoring import ranking
from workers.scoring.label_set_builders import CompiledLabelSet

# ---------------------------------------------------------------- the queue


def review_queue(*, benchmark: Benchmark, label_set: LabelSet | None = None,
                 reviewer: Any = None) -> QuerySet[ReviewItem]:
    """Open items of the benchmark, most submissions first (then oldest first); without the
    items `reviewer` already voted on, when one is given."""
    items = ReviewItem.objects.filter(label_set__benchmark=benchmark,
                                      status=ReviewItem.Status.OPEN)
    if label_set is not None:
        items = items.filter(label_set=label_set)
    if reviewer is not None and getattr(reviewer, "is_authenticated", False):
        items = items.exclude(votes__reviewer=reviewer)
    return (items.select_related("label_set__benchmark", "label_set__example_set")
            .annotate(vote_count=Count("votes", distinct=True))
            .order_by("-submission_count", "first_seen", "id"))


def review_open_counts(*, user: Any) -> list[tuple[Benchmark, int]]:
    """Every benchmark the user reviews (docs/hosts/teams.md) with its number of open review
    items."""
    return [(b, int(b.open_items)) for b in benchmark_list_with_role(user=user).annotate(
        open_items=Count("label_sets__review_items",
                         filter=Q(label_sets__review_items__status=ReviewItem.Status.OPEN))
    ).order_by("slug")]


# ---------------------------------------------------------------- one item


@dataclass(frozen=True)
class ClassLabel:
    class_id: int
    name: str


@dataclass(frozen=True)
class PanelJudgement:
    """One published expert-panel decision on a pair (PanelMistake): always wrong."""

    model: str
    source: str
    severity: str  # Severity value
    category: str  # MistakeCategory value
    verdict: str = "wrong"

    @property
    def reported_severity(self) -> str:
        """As the authors report it: borderline counts as minor."""
        return Severity.reported(self.severity)

    @property
    def severity_label(self) -> str:
        return str(Severity(self.severity).label)

    @property
    def category_label(self) -> str:
        return str(MistakeCategory(self.category).label)


def panel_judgements(*, example_set_id: int, example_index: int,
                     class_id: int) -> list[PanelJudgement]:
    """The expert panel's imported decisions on one pair, one per reviewed model."""
    rows = PanelMistake.objects.filter(example_set_id=example_set_id, example_index=example_index,
                                       class_id=class_id).order_by("model")
    return [PanelJudgement(model=m.model, source=m.source, severity=m.severity,
                           category=m.category) for m in rows]


@dataclass(frozen=True)
class ReviewItemDetail:
    item: ReviewItem
    benchmark: Benchmark
    label_set: LabelSet
    file_name: str
    predicted: ClassLabel
    max_score: float | None
    accepted: list[ClassLabel]
    wrong: list[ClassLabel]
    vote_count: int
    panel_size: int
    version: LabelSetVersion | None
    voted: bool = False
    # What the shown version says of the pair, beside what the expert panel said (an imported
    # decision that our labels contradict becomes an item: docs/metrics.md §11.1).
    judgement: str = "unjudged"  # "accepted" | "wrong" | "unjudged"
    panel: list[PanelJudgement] = field(default_factory=list)


def example_classes(keys: np.ndarray, example: int, num_classes: int) -> list[int]:
    """The classes paired with `example` among sorted keys `example * num_classes + class`."""
    low, high = np.searchsorted(keys, [example * num_classes, (example + 1) * num_classes])
    return [int(k) - example * num_classes for k in keys[low:high]]


def _judged(compiled: CompiledLabelSet | None, example: int) -> tuple[list[int], list[int]]:
    """(accepted classes, classes judged wrong) of one example in a compiled label set."""
    if compiled is None:
        return [], []
    arrays, c = compiled.arrays, compiled.num_classes
    if "accepted_keys" in arrays:
        accepted = example_classes(np.asarray(arrays["accepted_keys"]), example, c)
    elif "labels" in arrays:
        accepted = [int(arrays["labels"][example])]
    else:
        accepted = []
    wrong = (example_classes(np.asarray(arrays["wrong_keys"]), example, c)
             if "wrong_keys" in arrays else [])
    return accepted, wrong


def review_item_detail(*, item_id: int, reviewer: Any = None) -> ReviewItemDetail:
    """One item with what the reviewer needs; raises ReviewItem.DoesNotExist."""
    item = (ReviewItem.objects.select_related("label_set__benchmark", "label_set__example_set")
            .get(id=item_id))
    label_set = item.label_set
    benchmark = label_set.benchmark
    latest = label_set_version_latest(label_set=label_set)
    compiled = compiled_for_version(latest) if latest is not None else None
    accepted, wrong = _judged(compiled, item.example_index)
    names = benchmark_class_names(benchmark=benchmark)

    def label(class_id: int) -> ClassLabel:
        return ClassLabel(class_id, names[class_id] if 0 <= class_id < len(names) else "?")

    votes = item.votes.all()
    voted = bool(reviewer is not None and getattr(reviewer, "is_authenticated", False)
                 and votes.filter(reviewer=reviewer).exists())
    judgement = ("accepted" if item.class_id in accepted
                 else "wrong" if item.class_id in wrong else "unjudged")
    return ReviewItemDetail(
        item=item, benchmark=benchmark, label_set=label_set,
        file_name=example_namer(example_set=label_set.example_set)(item.example_index),
        predicted=label(item.class_id), max_score=item.max_score,
        accepted=[label(c) for c in accepted], wrong=[label(c) for c in wrong],
        vote_count=votes.count(), panel_size=int(benchmark.review_panel_size),
        version=latest, voted=voted, judgement=judgement,
        panel=panel_judgements(example_set_id=label_set.example_set_id,
                               example_index=item.example_index, class_id=item.class_id))


# ---------------------------------------------------------------- history


@dataclass(frozen=True)
class RankShift:
    submission_id: int
    model_name: str
    rank_before: int
    rank_after: int
    accuracy_before: float | None
    accuracy_after: float | None

    @property
    def shift(self) -> int:
        """Rank under the earlier version minus rank under this one: positive = moved up."""
        return self.rank_before - self.rank_after


@dataclass(frozen=True)
class VersionHistory:
    version: LabelSetVersion
    author: str | None
    settled: list[dict[str, Any]]
    # Filled by label_set_version_detail (and label_set_history(shifts=True)).
    shifts: list[RankShift] = field(default_factory=list)
    compared: int = 0  # submissions scored on both this version and `against`
    against: LabelSetVersion | None = None  # the version compared with (default: the parent)

    @property
    def rescore_status(self) -> str:
        """"done" once every submission is scored on it, "pending" while that is under way,
        "failed" when its re-scoring gave up (leaderboard/jobs/), "none" for a first
        version (submissions are scored on it directly)."""
        try:
            rescore = self.version.rescore
        except ObjectDoesNotExist:
            return "none"
        if rescore.status in (VersionRescore.Status.DONE, VersionRescore.Status.FAILED):
            return str(rescore.status)  # "done", "failed"
        return "pending"


def _accuracies(version: LabelSetVersion) -> dict[int, float | None]:
    """Accuracy on this version of each public scored submission that has a score on it."""
    return dict(Score.objects.filter(
        label_set_version=version, submission__public=True,
        submission__status=Submission.Status.SCORED).values_list("submission_id", "accuracy"))


def _ranks(accuracies: dict[int, float | None], ids: list[int], slug: str) -> dict[int, int]:
    records = [{slug: {"accuracy": accuracies[i]}} for i in ids]
    return {i: int(r) for i, r in zip(ids, ranking.ranks(records, slug), strict=True)}


def version_rank_shifts(*, version: LabelSetVersion, against: LabelSetVersion | None = None
                        ) -> tuple[list[RankShift], int]:
    """The submissions whose rank on the label set moved from `against` (default: the
    parent) to this version.

    Ranks (competition ranks, 1 = best) are taken over the public scored submissions with a
    score on both versions, so a submission that was not (yet) re-scored moves nobody.
    Returns (the moved submissions, best first on this version; how many were compared)."""
    against = against if against is not None else version.parent
    if against is None:
        return [], 0
    if against.label_set_id != version.label_set_id:
        raise ValueError("versions of two label sets have no rank shift between them")
    before, after = _accuracies(against), _accuracies(version)
    ids = sorted(set(before) & set(after))
    slug = version.label_set.slug
    rank_before, rank_after = _ranks(before, ids, slug), _ranks(after, ids, slug)
    names = dict(Submission.objects.filter(id__in=ids).values_list("id", "model_name"))
    moved = [RankShift(i, names[i], rank_before[i], rank_after[i], before[i], after[i])
             for i in ids if rank_before[i] != rank_after[i]]
    moved.sort(key=lambda s: (s.rank_after, s.submission_id))
    return moved, len(ids)


def _settled(version: LabelSetVersion) -> list[dict[str, Any]]:
    """The review decisions a version settled, each with the example's name, the class name
    and the reviewers who voted on it."""
    summary = version.summary if isinstance(version.summary, dict) else {}
    settled = [dict(s) for s in summary.get("settled") or [] if isinstance(s, dict)]
    if not settled:
        return []
    label_set = version.label_set
    names = benchmark_class_names(benchmark=label_set.benchmark)
    example_name = example_namer(example_set=label_set.example_set)
    # Review decisions name their item, ground-truth decisions their candidate.
    voters: dict[tuple[str, int], list[str]] = {}
    for item_id, username in (ReviewVote.objects.filter(
            item_id__in=[s["item"] for s in settled if s.get("item")])
            .order_by("created", "id").values_list("item_id", "reviewer__username")):
        voters.setdefault(("item", item_id), []).append(username)
    for candidate_id, username in (GroundTruthVote.objects.filter(
            candidate_id__in=[s["candidate"] for s in settled if s.get("candidate")])
            .order_by("created", "id").values_list("candidate_id", "reviewer__username")):
        voters.setdefault(("candidate", candidate_id), []).append(username)
    for entry in settled:
        example, class_id = int(entry.get("example", -1)), int(entry.get("class", -1))
        entry["file_name"] = example_name(example)
        entry["class_name"] = names[class_id] if 0 <= class_id < len(names) else "?"
        key = ("item", entry["item"]) if entry.get("item") else ("candidate",
                                                                 entry.get("candidate"))
        entry["reviewers"] = voters.get(key, [])  # type: ignore[arg-type]
        # An imported expert-panel decision (review/mistakes/services.py) names its source
        # instead.
        entry.setdefault("source", "")
        for name, choices in (("severity", Severity), ("category", MistakeCategory)):
            value = entry.get(name) or ""
            entry[name] = value
            entry[f"{name}_label"] = (str(choices(value).label) if value in choices.values
                                      else value)
    return settled


def _history_entry(version: LabelSetVersion, *, shifts: bool,
                   against: LabelSetVersion | None = None) -> VersionHistory:
    against = against if against is not None else version.parent
    moved, compared = (version_rank_shifts(version=version, against=against) if shifts
                       else ([], 0))
    return VersionHistory(version=version,
                          author=version.author.username if version.author else None,
                          settled=_settled(version), shifts=moved, compared=compared,
                          against=against)


_VERSION_RELATED = ("author", "parent", "label_set__benchmark", "label_set__example_set",
                    "rescore")


def label_set_get(*, benchmark_slug: str, slug: str) -> LabelSet:
    """A public label set (its versions, history and decisions are shown); raises
    LabelSet.DoesNotExist, also for a hidden one, whose history of per-example changes would
    tell its labels (docs/metrics.md §17), and for one of a hidden benchmark."""
    return LabelSet.objects.select_related("benchmark", "example_set").get(
        benchmark__slug=benchmark_slug, benchmark__hidden=False, slug=slug, labels_hidden=False)


def label_set_history(*, label_set: LabelSet, shifts: bool = True) -> list[VersionHistory]:
    """Every version of the label set, newest first, with who made it, the review decisions
    it settled and (with `shifts`) the rank shifts against its parent."""
    versions = (LabelSetVersion.objects.filter(label_set=label_set)
                .select_related(*_VERSION_RELATED).order_by("-number"))
    return [_history_entry(v, shifts=shifts) for v in versions]


def label_set_version_detail(*, label_set: LabelSet, number: int,
                             against: int | None = None) -> VersionHistory:
    """One version with its rank shifts against version `against` of the same label set
    (default: its parent); raises LabelSetVersion.DoesNotExist for either number."""
    versions = LabelSetVersion.objects.select_related(*_VERSION_RELATED)
    version = versions.get(label_set=label_set, number=number)
    other = None if against is None else versions.get(label_set=label_set, number=against)
    return _history_entry(version, shifts=True, against=other)
