"""Reads for a submission's mistake gallery (`/submissions/<id>/mistakes/`).

Two sections, in this order, each from the submission's newest score on its label set and
named by that label set's slug (`imagenet-m` and `corrected` on ImageNet); each is declared by
its family's `gallery` (docs/families.md):

- `misses` (ImageNet-M): its misses on ImageNet-M, as the score record lists them (`misses`), with
  the example's original label, the labels the annotators accepted and whether the predicted
  class was judged wrong or never judged.
- `correctable`: every example of the correctable set C of the benchmark's corrected label
  set (the first of its family: `label_set_correctable_slug`; where
  the corrected label differs from the original), with the given (original) label, the
  corrected label, the submission's top-1 class (from its stored compact predictions) and
  which of the two labels it matches: `original`, `corrected` or `neither`. On C every
  prediction misses under one of the two labelings, so all of C is listed; the counts are
  those of the score's Acc@1 (matches original) and cAcc@1 (matches corrected).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from leaderboard.catalog.example_images import example_image_drawer
from leaderboard.catalog.label_set_version_files import LabelStoreError, compiled_for_version
from leaderboard.catalog.models import Benchmark, ExampleSet, LabelSet, LabelSetVersion
from leaderboard.catalog.selectors import (
    benchmark_class_names,
    example_namer,
    label_set_correctable_slug,
    label_set_version_current,
)
from leaderboard.review.selectors import ClassLabel, example_classes
from leaderboard.submissions.models import Score, Submission, SubmissionFile
from leaderboard.submissions.selectors import submission_scores
from leaderboard.submissions.stored_files import stored_compact
from workers.scoring.families.corrected import C_MATCHES as MATCHES
from workers.scoring.families.registry import family_named, reference_family

PAGE_SIZE = 60
MISSES, CORRECTABLE = "misses", "correctable"  # the sections' kinds: families' `gallery`


@dataclass(frozen=True)
class MistakeRow:
    index: int
    predicted: int
    given: int | None  # the original label
    corrected: int | None = None  # C: the corrected label
    match: str = "miss"  # C: "original" | "corrected" | "neither"; ImageNet-M: "miss"
    accepted: tuple[int, ...] = ()  # ImageNet-M: classes judged correct or unclear
    judged_wrong: bool = False  # ImageNet-M: the predicted class was judged wrong


@dataclass(frozen=True)
class GallerySection:
    slug: str  # its label set's slug: the page's `?set=`
    kind: str  # MISSES or CORRECTABLE
    name: str
    label_set_slug: str
    version: LabelSetVersion
    example_set: str
    total: int  # examples in the set: the listed ImageNet-M images, or |C|
    rows: list[MistakeRow]  # the gallery, in example order
    counts: dict[str, int]  # C: per match; ImageNet-M: {"miss": n}
    error: str = ""  # why the rows could not be computed


@dataclass(frozen=True)
class MistakeCard:
    row: MistakeRow
    file_name: str
    image: str | None
    predicted: ClassLabel
    given: ClassLabel | None
    corrected: ClassLabel | None
    accepted: list[ClassLabel]


def _top1(row: SubmissionFile) -> np.ndarray:
    """The stored top-1 class of every example (the compact .npz of the scoring worker)."""
    with stored_compact(row.compact, example_set=row.example_set.slug) as arrays:
        return np.asarray(arrays["topk"][:, 0], dtype=np.int64)


def _original_labels(label_set: LabelSet) -> np.ndarray | None:
    """The original labels of the label set's example set: the current version of its label set
    of the reference family (docs/families.md), whatever its slug."""
    source = (LabelSet.objects.filter(benchmark_id=label_set.benchmark_id,
                                      family=reference_family().name,
                                      example_set_id=label_set.example_set_id)
              .order_by("pk").first())
    original = None if source is None else label_set_version_current(label_set=source)
    if original is None:
        return None
    return np.asarray(compiled_for_version(original).arrays["labels"])


def _imagenet_m(score: Score) -> GallerySection:
    version, label_set = score.label_set_version, score.label_set
    compiled = compiled_for_version(version)
    misses = [m for m in (score.record or {}).get("misses") or [] if isinstance(m, dict)]
    original = _original_labels(label_set)
    accepted_keys = np.asarray(compiled.arrays["accepted_keys"])
    wrong_keys = np.asarray(compiled.arrays["wrong_keys"])
    rows = []
    for miss in sorted(misses, key=lambda m: int(m["index"])):
        index, predicted = int(miss["index"]), int(miss["predicted"])
        rows.append(MistakeRow(
            index=index, predicted=predicted,
            given=None if original is None else int(original[index]),
            accepted=tuple(example_classes(accepted_keys, index, compiled.num_classes)),
            judged_wrong=predicted in example_classes(wrong_keys, index, compiled.num_classes)))
    return GallerySection(
        slug=label_set.slug, kind=MISSES, name=label_set.name, label_set_slug=label_set.slug,
        version=version,
        example_set=label_set.example_set.slug, total=int(score.total), rows=rows,
        counts={"miss": len(rows)})


def _corrected(submission: Submission, score: Score) -> GallerySection:
    version, label_set = score.label_set_version, score.label_set
    compiled = compiled_for_version(version)
    arrays = compiled.arrays
    members = np.flatnonzero(arrays["correctable"])
    base: dict[str, Any] = {
        "slug": label_set.slug, "kind": CORRECTABLE, "name": label_set.name,
        "label_set_slug": label_set.slug,
        "version": version, "example_set": label_set.example_set.slug, "total": int(members.size)}
    stored = (SubmissionFile.objects.filter(submission=submission,
                                            example_set_id=label_set.example_set_id)
              .exclude(compact="").first())
    if stored is None:
        return GallerySection(**base, rows=[], counts=dict.fromkeys(MATCHES, 0),
                              error="The submission's stored predictions are not available.")
    predicted = _top1(stored)[members]
    given = np.asarray(arrays["labels"])[members].astype(np.int64)
    corrected = np.asarray(arrays["corrected_labels"])[members].astype(np.int64)
    match = np.where(predicted == corrected, "corrected",
                     np.where(predicted == given, "original", "neither"))
    rows = [MistakeRow(index=int(i), predicted=int(p), given=int(g), corrected=int(c),
                       match=str(m))
            for i, p, g, c, m in zip(members, predicted, given, corrected, match, strict=True)]
    counts = {m: int(np.count_nonzero(match == m)) for m in MATCHES}
    return GallerySection(**base, rows=rows, counts=counts)


def submission_gallery(*, submission: Submission) -> dict[str, GallerySection]:
    """The sections the submission has a score for, by slug, the misses first (none unless
    scored)."""
    if submission.status != Submission.Status.SCORED:
        return {}
    scores = submission_scores(submission=submission)
    sections: dict[str, GallerySection] = {}
    # Each section comes with the family that declares it (workers/scoring/families: `gallery`)
    listed = next((s for s in scores.values()
                   if family_named(s.label_set.family).gallery == MISSES), None)
    if listed is not None:
        sections[listed.label_set.slug] = _or_error(MISSES, listed, lambda: _imagenet_m(listed))
    corrected = scores.get(label_set_correctable_slug(benchmark_id=submission.benchmark_id) or "")
    if corrected is not None:
        sections[corrected.label_set.slug] = _or_error(
            CORRECTABLE, corrected, lambda: _corrected(submission, corrected))
    return sections


def _or_error(kind: str, score: Score, build: Callable[[], GallerySection]) -> GallerySection:
    """The section, or an empty one that says why its labels could not be read."""
    try:
        return build()
    except LabelStoreError as exc:
        label_set = score.label_set
        return GallerySection(
            slug=label_set.slug, kind=kind, name=label_set.name, label_set_slug=label_set.slug,
            version=score.label_set_version, example_set=label_set.example_set.slug,
            total=0, rows=[], counts={}, error=f"The labels of this version are unavailable: {exc}")


def section_rows(section: GallerySection, match: str | None) -> list[MistakeRow]:
    """The section's rows, only those with this match when one is given."""
    return [r for r in section.rows if match is None or r.match == match]


def mistake_cards(*, benchmark: Benchmark, section: GallerySection,
                  rows: list[MistakeRow]) -> list[MistakeCard]:
    """Cards (class names, file name, the image where the server has one) for these rows."""
    names = benchmark_class_names(benchmark=benchmark)
    example_set = ExampleSet.objects.get(benchmark=benchmark, slug=section.example_set)
    example_name = example_namer(example_set=example_set)

    def label(class_id: int | None) -> ClassLabel | None:
        if class_id is None:
            return None
        name = names[class_id] if 0 <= class_id < len(names) else str(class_id)
        return ClassLabel(class_id, name)

    draw = example_image_drawer(section.example_set)
    cards = []
    for row in rows:
        predicted = label(row.predicted)
        assert predicted is not None
        cards.append(MistakeCard(
            row=row, file_name=example_name(row.index),
            image=draw(row.index), predicted=predicted,
            given=label(row.given), corrected=label(row.corrected),
            accepted=[c for c in map(label, row.accepted) if c is not None]))
    return cards
