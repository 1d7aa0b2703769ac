"""Reads of the expert panel's imported decisions (services.py here, docs/metrics.md
§11.1): which of a submission's top-1 predictions repeat a mistake the panel judged major."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from leaderboard.catalog.label_set_version_files import LabelStoreError, compiled_for_version
from leaderboard.catalog.models import LabelSet
from leaderboard.catalog.selectors import (
    benchmark_class_names,
    example_namer,
    label_set_version_current,
)
from leaderboard.review.models import MistakeCategory, PanelMistake, Severity
from leaderboard.review.selectors import ClassLabel
from leaderboard.submissions.models import Submission, SubmissionFile
from workers.scoring.compact import compact_member_names, npz_member_rows
from workers.scoring.families.registry import reference_family


@dataclass(frozen=True)
class PanelMajorHit:
    """A top-1 prediction equal to a pair the panel judged a major mistake."""

    example: int
    file_name: str
    predicted: ClassLabel
    given: ClassLabel | None  # the original label
    categories: list[str]  # the panel's category labels for the pair
    models: list[str]  # whose mistake the panel reviewed


@dataclass(frozen=True)
class PanelMajorHits:
    example_set: str
    major_pairs: int  # (example, class) pairs the panel judged major
    models: list[str]  # every model whose mistakes were imported for this example set
    hits: list[PanelMajorHit]  # in example order

    @property
    def count(self) -> int:
        return len(self.hits)


def _original_labels(example_set_id: int, benchmark_id: int) -> np.ndarray | None:
    """The example set's given labels: its label set of the reference family (docs/families.md),
    whatever its slug."""
    source = (LabelSet.objects.filter(benchmark_id=benchmark_id, family=reference_family().name,
                                      example_set_id=example_set_id).order_by("pk").first())
    current = None if source is None else label_set_version_current(label_set=source)
    if current is None:
        return None
    try:
        return np.asarray(compiled_for_version(current).arrays["labels"])
    except LabelStoreError:
        return None


def submission_panel_major_hits(*, submission: Submission) -> PanelMajorHits | None:
    """How many of the submission's top-1 predictions (its stored compact arrays) are a pair
    the expert panel judged a major mistake, with the list; None unless it is scored and the
    panel's decisions on its main example set are imported (ImageNet). A pair is major when any
    model's decision on it is (the files agree wherever both models made the same mistake).

    Reads only the rows of the judged examples from the stored file."""
    if submission.status != Submission.Status.SCORED:
        return None
    stored = (SubmissionFile.objects.filter(
        submission=submission, example_set__slug=submission.benchmark.main_example_set)
        .exclude(compact="").select_related("example_set").first())
    if stored is None:
        return None
    decisions = PanelMistake.objects.filter(example_set_id=stored.example_set_id)
    models = sorted(set(decisions.values_list("model", flat=True)))
    if not models:
        return None
    major: dict[tuple[int, int], tuple[set[str], set[str]]] = {}
    for example, class_id, model, category in decisions.filter(
            severity=Severity.MAJOR).values_list("example_index", "class_id", "model",
                                                 "category"):
        judged = major.setdefault((example, class_id), (set(), set()))
        judged[0].add(model)
        judged[1].add(category)
    examples = np.array(sorted({e for e, _ in major}), dtype=np.int64)
    top1: dict[int, int] = {}
    if examples.size:
        with stored.compact.storage.open(str(stored.compact.name), "rb") as handle:
            rows = npz_member_rows(handle, compact_member_names(stored.example_set.slug, "topk"),
                                   examples)
        top1 = dict(zip(examples.tolist(), rows[:, 0].astype(np.int64).tolist(), strict=True))
    example_set = stored.example_set
    names = benchmark_class_names(benchmark=submission.benchmark)
    example_name = example_namer(example_set=example_set)
    original = _original_labels(example_set.pk, submission.benchmark_id)

    def label(class_id: int) -> ClassLabel:
        return ClassLabel(class_id, names[class_id] if 0 <= class_id < len(names) else "?")

    hits = [PanelMajorHit(
        example=e, file_name=example_name(e), predicted=label(c),
        given=None if original is None else label(int(original[e])),
        categories=sorted(str(MistakeCategory(k).label) for k in categories),
        models=sorted(judged_models))
        for (e, c), (judged_models, categories) in sorted(major.items()) if top1.get(e) == c]
    return PanelMajorHits(example_set=example_set.slug, major_pairs=len(major), models=models,
                          hits=hits)
