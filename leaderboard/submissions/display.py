"""What the submission page shows for one score: the headline and the figures its label-set
family declares (workers/scoring/families).

Pure functions over `Score.record` (the JSON the scoring core wrote), so the template renders
one uniform list of lines whatever the label-set family.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from leaderboard.submissions.models import Score
from workers.scoring.families.base import Figure
from workers.scoring.families.registry import family_named


@dataclass(frozen=True)
class Line:
    """One figure: an accuracy record (accuracy, correct, total, ci_*), a mean with an
    interval (value, ci_*), or plain text."""

    label: str
    kind: str  # "accuracy" | "mean" | "text"
    record: dict[str, Any] = field(default_factory=dict)
    text: str = ""
    note: str = ""
    unit: str = "percent"  # "percent" (x100, 2 decimals) | "number" (4 decimals)


@dataclass(frozen=True)
class ScoreView:
    slug: str
    name: str
    family: str
    version_number: int
    version_hash: str
    example_set: str
    lines: list[Line]
    misses: list[dict[str, Any]] = field(default_factory=list)
    awaiting_review: int | None = None
    # The mistake-gallery section this score gives (leaderboard/presentation/gallery:
    # "misses" for ImageNet-M, "correctable" for the `corrected` set's C), else "".
    gallery: str = ""


def _class_mean_note(record: dict[str, Any]) -> str:
    """For a mean of per-class accuracies (docs/metrics.md §1.7): its count is of images, its
    interval the normal approximation, not Clopper-Pearson; "" for any other record."""
    classes = record.get("classes_evaluated")
    if classes is None:
        return ""
    return f"mean over {classes:,} classes; normal-approximation interval"


def _acc(label: str, record: Any, note: str = "") -> Line | None:
    if not isinstance(record, dict) or record.get("total") in (None, 0):
        return None
    return Line(label, "accuracy", record, note=note or _class_mean_note(record))


def _figure(figure: Figure, record: dict[str, Any]) -> Line | None:
    """The line of one of the family's figures, None when the record lacks it."""
    value: Any = record
    for key in figure.path:
        value = value.get(key) if isinstance(value, dict) else None
    if figure.kind == "points":
        if value is None:
            return None
        return Line(figure.label, "text", text=f"{float(value) * 100:.2f} points",
                    note=figure.note)
    if figure.kind == "mean":
        if not isinstance(value, dict) or value.get("value") is None:
            return None
        return Line(figure.label, "mean", value, note=figure.note, unit=figure.unit)
    return _acc(figure.label, value, figure.note)


def score_view(score: Score, *, corrected: str | None) -> ScoreView:
    """The lines of one score: its family's headline, then the family's figures. `corrected`
    is the slug of the benchmark's corrected label set (`label_set_correctable_slug`), the one
    of its family with a gallery section."""
    record: dict[str, Any] = score.record or {}
    family = family_named(record.get("family") or score.label_set.family)
    headline = {"accuracy": score.accuracy, "correct": score.correct, "total": score.total,
                "ci_low": score.ci_low, "ci_high": score.ci_high}
    lines: list[Line]
    if family.headline_as_count:
        lines = [Line(family.headline_label, "text", text=f"{score.correct} of {score.total}"),
                 Line("Accuracy", "accuracy", headline)]
    else:
        lines = [Line(family.headline_label, "accuracy", headline,
                      note=_class_mean_note(record))]
    lines += [line for line in (_figure(f, record) for f in family.figures) if line is not None]
    novel = record.get("novel_count") if family.reviewable else None
    version = score.label_set_version
    return ScoreView(
        slug=score.label_set.slug, name=score.label_set.name, family=family.name,
        version_number=version.number, version_hash=version.content_hash,
        example_set=record.get("image_set", ""), lines=lines,  # the record's key
        misses=list(record.get("misses") or []) if family.gallery == "misses" else [],
        awaiting_review=int(novel) if novel is not None else None,
        gallery=family.gallery if family.gallery == "misses" or (
            family.gallery == "correctable" and score.label_set.slug == corrected) else "",
    )
