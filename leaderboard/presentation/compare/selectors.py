"""Two scored submissions of one benchmark side by side, example by example
(docs/metrics.md §10.5).

Per public label set both were scored on: both accuracies, their difference, the discordant
counts and the exact McNemar p-value from the stored hit vectors (the one computation of
workers/scoring/significance/__init__.py), and the rank of each among the public scored submissions
on that version. On each such label set the examples exactly one of them gets right can be
listed, paged, with the example's labels in every compared label set of its example set.

Only public label sets are ever compared (`Score.objects`): a hidden label set's per-example
hits must never leave the server, and its exact accuracy neither (docs/metrics.md §17).
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass
from typing import Any

import numpy as np
from django.urls import reverse
from django.utils.http import urlencode

from leaderboard.catalog.label_set_version_files import compiled_for_version
from leaderboard.catalog.models import ExampleSet, LabelSet, LabelSetVersion
from leaderboard.catalog.selectors import (
    example_namer,
    label_set_correctable_slug,
    label_set_reference_slug,
)
from leaderboard.common.errors import ServiceError
from leaderboard.presentation.gallery.selectors import CORRECTABLE, MISSES
from leaderboard.presentation.gallery.selectors import PAGE_SIZE as GALLERY_PAGE_SIZE
from leaderboard.review.selectors import example_classes
from leaderboard.submissions.models import Score, Submission
from leaderboard.submissions.selectors import submission_visible_get
from workers.scoring.families.registry import family_named
from workers.scoring.label_set_builders import CompiledLabelSet, evaluated_mask
from workers.scoring.significance import both_correct, hits_count, mcnemar_p, unpack_hits

# Disagreements per page (docs/api.md §6.6): `page_size` may ask for up to EXAMPLES_MAX_PAGE.
EXAMPLES_PAGE_SIZE = 50
EXAMPLES_MAX_PAGE = 200
SIDES = ("first", "second")


@dataclass(frozen=True)
class SideFigures:
    """One submission's figures on a label-set version. `rank`: competition rank among the
    public scored submissions on the version (docs/metrics.md §10.1); for one not on the
    board (private), the rank it would have there (`on_board` False)."""

    accuracy: float | None
    correct: int
    total: int
    rank: int | None
    on_board: bool


@dataclass(frozen=True)
class LabelSetComparison:
    slug: str
    name: str
    example_set: str
    version: LabelSetVersion
    first: SideFigures
    second: SideFigures
    difference: float | None  # first's accuracy minus second's
    # Examples only the first / only the second gets right and the exact two-sided McNemar
    # p-value; None where the two cannot be paired (a hit vector missing or not matching).
    only_first: int | None
    only_second: int | None
    p_value: float | None
    # Which evaluated examples each gets right (internal: the example list reads them).
    hits: tuple[np.ndarray, np.ndarray] | None = None

    @property
    def paired(self) -> bool:
        return self.hits is not None


@dataclass(frozen=True)
class Comparison:
    first: Submission
    second: Submission
    label_sets: list[LabelSetComparison]

    def label_set(self, slug: str) -> LabelSetComparison | None:
        return next((c for c in self.label_sets if c.slug == slug), None)


@dataclass(frozen=True)
class ExampleRow:
    index: int  # in the example set
    right: str  # "first" | "second": the one that gets it right
    file_name: str
    # Per compared label set of the example set: the classes it accepts for the example (None:
    # that label set does not evaluate it).
    labels: dict[str, list[int] | None]
    gallery_url: str | None  # the example in the gallery of the one that gets it wrong


@dataclass(frozen=True)
class ExamplePage:
    label_set: str
    count: int  # examples exactly one gets right
    page: int
    page_size: int
    page_count: int
    rows: list[ExampleRow]


def comparison_pair_get(*, first_id: int, second_id: int, user: Any
                        ) -> tuple[Submission, Submission]:
    """The two submissions, if the user may see both (public and scored, their own, or any
    for staff: otherwise 404, which does not reveal a private one), both scored, of one
    benchmark and not the same one (otherwise 400)."""
    pair = []
    for submission_id in (first_id, second_id):
        try:
            pair.append(submission_visible_get(submission_id=submission_id, user=user))
        except Submission.DoesNotExist:
            raise ServiceError("not_found", f"no submission {submission_id} that you can see",
                               http_status=404) from None
    first, second = pair
    if first.pk == second.pk:
        raise ServiceError("same_submission", "compare two different submissions")
    for submission in pair:
        if submission.status != Submission.Status.SCORED:
            raise ServiceError("not_scored", f"submission {submission.pk} is "
                               f"{submission.status}, not scored: only scores can be compared")
    if first.benchmark_id != second.benchmark_id:
        raise ServiceError("different_benchmarks", f"submission {first.pk} is on "
                           f"{first.benchmark.slug} and {second.pk} on {second.benchmark.slug}: "
                           "only submissions of one benchmark can be compared")
    return first, second


def _ranks(first: Submission, second: Submission, versions: list[int]
           ) -> dict[int, dict[int, float | None]]:
    """Per version, the accuracy of every public scored submission and of these two."""
    accuracies: dict[int, dict[int, float | None]] = defaultdict(dict)
    rows = Score.objects.filter(
        label_set_version__in=versions, submission__benchmark_id=first.benchmark_id,
        submission__status=Submission.Status.SCORED, submission__public=True,
    ).values_list("label_set_version_id", "submission_id", "accuracy")
    for version_id, submission_id, accuracy in rows:
        accuracies[version_id][submission_id] = accuracy
    return accuracies


def _side(score: Score, board: dict[int, float | None]) -> SideFigures:
    submission = score.submission
    on_board = submission.public and submission.pk in board
    rank = None
    if score.accuracy is not None:  # §10.1: 1 + those strictly better, this one left out
        rank = 1 + sum(1 for sid, acc in board.items()
                       if sid != submission.pk and acc is not None and acc > score.accuracy)
    return SideFigures(score.accuracy, int(score.correct), int(score.total), rank, on_board)


def _hits(score: Score) -> bytes | None:
    """The score's packed hits, if stored and matching its `correct` (§10.3)."""
    if score.hits is None:
        return None
    bits = bytes(score.hits.bits)
    return bits if hits_count(bits) == score.correct else None


def _pair(first: Score, second: Score) -> dict[str, Any]:
    a, b = _hits(first), _hits(second)
    if a is None or b is None or len(a) != len(b) or first.total != second.total:
        return {"only_first": None, "only_second": None, "p_value": None, "hits": None}
    both = both_correct([a, b])
    only_first, only_second = int(both[0, 0] - both[0, 1]), int(both[1, 1] - both[0, 1])
    p = float(mcnemar_p(np.array([only_first]), np.array([only_second]))[0])
    size = int(first.total)
    return {"only_first": only_first, "only_second": only_second, "p_value": p,
            "hits": (unpack_hits(a, size), unpack_hits(b, size))}


def comparison_get(*, first: Submission, second: Submission) -> Comparison:
    """Both submissions' figures on every public label set both have a score on, each on the
    newest published version both were scored on, in the boards' column order."""
    scores: dict[tuple[int, int], dict[int, Score]] = defaultdict(dict)
    rows = (Score.objects.filter(submission__in=[first, second],
                                 label_set_version__published__isnull=False)
            .select_related("submission", "label_set", "label_set__example_set",
                            "label_set_version", "hits"))
    for score in rows:
        scores[(score.label_set_id, score.label_set_version.number)][score.submission_id] = score
    chosen: dict[int, dict[int, Score]] = {}
    for (label_set_id, _number), pair in sorted(scores.items(), key=lambda kv: (kv[0][0],
                                                                                 -kv[0][1])):
        if len(pair) == 2 and label_set_id not in chosen:
            chosen[label_set_id] = pair
    accuracies = _ranks(first, second, [p[first.pk].label_set_version_id
                                        for p in chosen.values()])
    out = []
    for pair in chosen.values():
        a, b = pair[first.pk], pair[second.pk]
        label_set: LabelSet = a.label_set
        # the caller's objects (the same rows), whose benchmark and owner are loaded
        a.submission, b.submission = first, second
        board = accuracies.get(a.label_set_version_id, {})
        difference = (None if a.accuracy is None or b.accuracy is None
                      else a.accuracy - b.accuracy)
        out.append(LabelSetComparison(
            slug=label_set.slug, name=label_set.name, example_set=label_set.example_set.slug,
            version=a.label_set_version, first=_side(a, board), second=_side(b, board),
            difference=difference, **_pair(a, b)))
    return Comparison(first, second, out)


def comparison_label_set_default(*, comparison: Comparison) -> str | None:
    """The label set whose disagreements are listed unless one is asked for: the benchmark's
    reference label set (`original` on the built-in ones) when paired, else the first paired
    one (None: none is)."""
    paired = [c.slug for c in comparison.label_sets if c.paired]
    reference = label_set_reference_slug(benchmark_id=comparison.first.benchmark_id)
    return reference if reference in paired else next(iter(paired), None)


def _accepted(compiled: CompiledLabelSet, evaluated: np.ndarray, index: int
              ) -> list[int] | None:
    """The classes a label set counts correct for an example (None: it does not evaluate
    it): its label, its corrected label, the accepted classes of a multi-label or a listed
    subset, or the classes most annotators chose (soft labels)."""
    arrays = compiled.arrays
    if not bool(evaluated[index]):
        return None
    if "accepted_keys" in arrays:
        return example_classes(np.asarray(arrays["accepted_keys"]), index, compiled.num_classes)
    if "corrected_labels" in arrays:
        return [int(arrays["corrected_labels"][index])]
    if "labels" in arrays:
        return [int(arrays["labels"][index])]
    if "probs" in arrays:
        probs = np.asarray(arrays["probs"][index])
        return [int(c) for c in np.flatnonzero(probs == probs.max())]
    return []


def _gallery_url(submission: Submission, compared: LabelSetComparison, score: Score | None,
                 compiled: CompiledLabelSet, index: int, *, corrected: str | None) -> str | None:
    """The example's card in the submission's mistake gallery, where it has one: on the
    correctable set C of the corrected labels (the benchmark's label set `corrected`), or
    among its misses on a listed subset (leaderboard/presentation/gallery/: a section is
    named by its label set's slug)."""
    gallery = family_named(compiled.family).gallery
    if gallery == CORRECTABLE and compared.slug == corrected:
        members = np.flatnonzero(np.asarray(compiled.arrays["correctable"]))
    elif gallery == MISSES and score is not None:
        members = np.array(sorted(int(m["index"]) for m in (score.record or {}).get("misses")
                                  or [] if isinstance(m, dict)), dtype=np.int64)
    else:
        return None
    section = compared.slug
    at = int(np.searchsorted(members, index))
    if at >= members.size or members[at] != index:
        return None
    query = urlencode({"set": section, "page": str(at // GALLERY_PAGE_SIZE + 1)})
    return (reverse("submission_mistakes", args=[submission.pk])
            + f"?{query}#example-{index}")


def comparison_examples_get(*, comparison: Comparison, label_set: str, page: int = 1,
                        page_size: int = EXAMPLES_PAGE_SIZE) -> ExamplePage:
    """One page of the examples of `label_set` (in example order) that exactly one of the two
    gets right. 400 for a label set not compared or not paired, a page size outside 1 to
    EXAMPLES_MAX_PAGE; 404 for a page past the last (an empty list has a page 1)."""
    compared = comparison.label_set(label_set)
    if compared is None or compared.hits is None:
        raise ServiceError("unknown_label_set", f"no paired scores of both submissions on "
                           f"{label_set!r}; compared: " + ", ".join(
                               c.slug for c in comparison.label_sets if c.paired),
                           field="label_set")
    if not 1 <= page_size <= EXAMPLES_MAX_PAGE:
        raise ServiceError("invalid_page_size", f"page_size must be 1 to {EXAMPLES_MAX_PAGE}",
                           field="page_size")
    first_hits, second_hits = compared.hits
    differ = np.flatnonzero(first_hits != second_hits)
    page_count = max(1, -(-differ.size // page_size))
    if not 1 <= page <= page_count:
        raise ServiceError("not_found", f"no page {page}: {page_count} pages", field="page",
                           http_status=404)
    compiled = compiled_for_version(compared.version)
    evaluated = np.flatnonzero(evaluated_mask(compiled))  # hit position -> example index
    same_images = {c.slug: compiled_for_version(c.version) if c.slug != label_set else compiled
                   for c in comparison.label_sets if c.example_set == compared.example_set}
    masks = {slug: evaluated_mask(c) for slug, c in same_images.items()}
    example_set = ExampleSet.objects.get(benchmark_id=comparison.first.benchmark_id,
                                     slug=compared.example_set)
    name = example_namer(example_set=example_set)
    scores = {s.submission_id: s for s in Score.objects.filter(
        submission__in=[comparison.first, comparison.second],
        label_set_version=compared.version)}
    corrected = label_set_correctable_slug(benchmark_id=comparison.first.benchmark_id)
    rows = []
    for position in differ[(page - 1) * page_size:page * page_size].tolist():
        index = int(evaluated[position])
        right = "first" if first_hits[position] else "second"
        wrong = comparison.second if right == "first" else comparison.first
        rows.append(ExampleRow(
            index=index, right=right, file_name=name(index),
            labels={slug: _accepted(c, masks[slug], index) for slug, c in same_images.items()},
            gallery_url=_gallery_url(wrong, compared, scores.get(wrong.pk), compiled, index,
                                     corrected=corrected)))
    return ExamplePage(label_set, int(differ.size), page, page_size, page_count, rows)
