"""Reads of the ground-truth review: open candidates and one candidate for a reviewer."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from django.db.models import Count, QuerySet

from leaderboard.catalog.models import Benchmark
from leaderboard.catalog.selectors import benchmark_class_names, example_namer
from leaderboard.review.ground_truth.models import GroundTruthCandidate


def ground_truth_queue(*, benchmark: Benchmark, reviewer: Any = None
                       ) -> QuerySet[GroundTruthCandidate]:
    """Open candidates of the benchmark, oldest first; without the ones `reviewer` already
    answered, when one is given."""
    candidates = GroundTruthCandidate.objects.filter(
        label_set__benchmark=benchmark, status=GroundTruthCandidate.Status.OPEN)
    if reviewer is not None and getattr(reviewer, "is_authenticated", False):
        candidates = candidates.exclude(votes__reviewer=reviewer)
    return (candidates.select_related("label_set__benchmark", "label_set__example_set")
            .annotate(vote_count=Count("votes", distinct=True))
            .order_by("created", "id"))


def ground_truth_open_counts() -> dict[int, int]:
    """Benchmark id -> its number of open ground-truth candidates (benchmarks with some)."""
    rows = (GroundTruthCandidate.objects.filter(status=GroundTruthCandidate.Status.OPEN)
            .values("label_set__benchmark").annotate(n=Count("id")))
    return {int(r["label_set__benchmark"]): int(r["n"]) for r in rows}


@dataclass(frozen=True)
class CandidateView:
    """A candidate as a reviewer sees it: names of the example and of both classes."""

    candidate: GroundTruthCandidate
    file_name: str
    given_name: str
    guessed_name: str
    vote_count: int
    panel_size: int


def ground_truth_candidate_view(candidate: GroundTruthCandidate) -> CandidateView:
    label_set = candidate.label_set
    names = benchmark_class_names(benchmark=label_set.benchmark)
    vote_count = getattr(candidate, "vote_count", None)
    return CandidateView(
        candidate=candidate,
        file_name=example_namer(example_set=label_set.example_set)(candidate.example_index),
        given_name=names[candidate.given], guessed_name=names[candidate.guessed],
        vote_count=int(vote_count if vote_count is not None else candidate.votes.count()),
        panel_size=int(label_set.benchmark.ground_truth_panel_size))
